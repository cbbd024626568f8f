# cuDNN's graph API builds a plan for every convolution of the models users train,
# for an H100, on this machine without a GPU (cuDNN >= 9.11 deviceless building from
# serialized device properties; `trainer bench plans`). This is CI's check that the
# graph-API convolutions (model.conv_algorithms graph | graph-autotune) have an engine
# for every shape, pass and precision before a GPU visit runs them. The properties
# file is written from the H100's published figures (tests/data/cudnn-device-properties).
# Skipped without the GPU build or without cudnn-frontend's headers.
source "$(dirname "$0")/lib/common.sh"
version=$("$TRAINER" --version 2>/dev/null)
grep -q 'cuda (CUDA' <<<"$version" || skip "trainer was built without the GPU path"
grep -q 'with its graph API' <<<"$version" ||
  skip "trainer was built without cudnn-frontend's headers (bash scripts/fetch_cudnn_frontend.sh)"
PROPS=$REPO/tests/data/cudnn-device-properties/h100-sxm-from-specs.json

check() {  # check NAME ARGS...: every graph of that model and setting builds
  local name=$1 log=$SCRATCH/$1.log
  shift
  "$TRAINER" bench plans --device-properties "$PROPS" "$@" > "$log" 2>&1 || { cat "$log"; fail "$name: bench plans failed"; }
  local line
  line=$(grep 'graphs built for the device' "$log") || { cat "$log"; fail "$name: no summary line"; }
  [[ $line =~ bench\ plans:\ ([0-9]+)\ of\ ([0-9]+)\ graphs ]] || fail "$name: unreadable summary: $line"
  (( BASH_REMATCH[2] >= 3 && BASH_REMATCH[1] == BASH_REMATCH[2] )) || { cat "$log"; fail "$name: $line"; }
  echo "$name: $line"
}

# The benchmark settings of the GPU-speed issue (ResNet-50 256x256).
check resnet50-bf16-b64 --backbone resnet50 --size 256 --batch 64 --precision bf16-mixed
check resnet50-fp16-b64 --backbone resnet50 --size 256 --batch 64 --precision 16-mixed
check resnet50-fp32-b16 --backbone resnet50 --size 256 --batch 16 --precision 32
check resnet50-tf32-b16 --backbone resnet50 --size 256 --batch 16 --precision 32 --float32-matmul-precision high
# The mirror-mouse example's model (ResNet-18 at 128x128 in the lightning-pose loop).
check resnet18-fp32-mirror --backbone resnet18 --size 128 --batch 16 --precision 32
check resnet18-bf16-mirror --backbone resnet18 --size 128 --batch 16 --precision bf16-mixed

# fp32 without TF32 must not take tensor-core engines: its engine choices differ
# from the TF32 setting's for at least one graph.
diff <(grep -o 'eng[0-9_k=]*' "$SCRATCH/resnet50-fp32-b16.log") \
     <(grep -o 'eng[0-9_k=]*' "$SCRATCH/resnet50-tf32-b16.log") > /dev/null &&
  fail "fp32 (TF32 off) and TF32 chose the same engines for every graph"

# Bad input: one error line, exit 2.
expect_fail 2 '^error: bench plans: --device-properties is required' "$TRAINER" bench plans
expect_fail 2 '^error: bench plans: cannot read' "$TRAINER" bench plans --device-properties "$SCRATCH/missing.json"
printf '{"deviceVer": 900}' > "$SCRATCH/partial.json"
expect_fail 2 '^error: cuDNN does not accept these device properties' \
  "$TRAINER" bench plans --device-properties "$SCRATCH/partial.json"
[[ $(grep -c '^error: ' "$SCRATCH/err.txt") == 1 ]] || { cat "$SCRATCH/err.txt"; fail "more than one error line"; }
# A FIFO named as the properties file is refused, not waited on.
mkfifo "$SCRATCH/fifo.json"
expect_fail 2 '^error: bench plans: cannot read --device-properties .*not a regular file' \
  timeout 20 "$TRAINER" bench plans --device-properties "$SCRATCH/fifo.json"
echo "PASS"
