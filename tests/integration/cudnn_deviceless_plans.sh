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

run_prefix=()  # a command the trainer runs under (the ViT checks' environment)
check() {  # check NAME ARGS...: every graph of that model and setting builds
  local name=$1 log=$SCRATCH/$1.log
  shift
  "${run_prefix[@]}" "$TRAINER" bench plans --device-properties "$PROPS" "$@" > "$log" 2>&1 || { cat "$log"; fail "$name: bench plans failed"; }
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
# The same on an H200's own serialization, captured at the 2026-11-27 visit (the
# H100's figures above are written by hand from its specifications).
PROPS=$REPO/tests/data/cudnn-device-properties/h200-captured.json check resnet50-bf16-b64-h200 \
  --backbone resnet50 --size 256 --batch 64 --precision bf16-mixed
# The mirror-mouse example's model (ResNet-18 at 128x128 in the lightning-pose loop).
check resnet18-fp32-mirror --backbone resnet18 --size 128 --batch 16 --precision 32
check resnet18-bf16-mirror --backbone resnet18 --size 128 --batch 16 --precision bf16-mixed
# Operands off 16-byte alignment (a filter after an odd-length bias in the flat
# parameter store: the head's second transposed convolution with 17 keypoints) take a
# plan built for their alignment; every problem must have one, down to one element.
check resnet18-fp32-align4 --backbone resnet18 --size 128 --batch 16 --precision 32 --operand-alignment 4
grep -q 'operands aligned to 4 bytes' "$SCRATCH/resnet18-fp32-align4.log" || fail "alignment not declared"
# The declared alignment reaches cuDNN: its candidates differ from the 16-byte ones.
diff <(grep '^  ok' "$SCRATCH/resnet18-fp32-mirror.log") <(grep '^  ok' "$SCRATCH/resnet18-fp32-align4.log") \
  > /dev/null && fail "cuDNN offered the same candidates at 4-byte as at 16-byte alignment"
check resnet50-tf32-align4 --backbone resnet50 --size 256 --batch 16 --precision 32 \
  --float32-matmul-precision high --operand-alignment 4
check resnet18-bf16-align2 --backbone resnet18 --size 128 --batch 16 --precision bf16-mixed --operand-alignment 2

# fp32 without TF32 must not take tensor-core engines: its engine choices differ
# from the TF32 setting's for at least one graph.
diff <(grep -o 'eng[0-9_k=]*' "$SCRATCH/resnet50-fp32-b16.log") \
     <(grep -o 'eng[0-9_k=]*' "$SCRATCH/resnet50-tf32-b16.log") > /dev/null &&
  fail "fp32 (TF32 off) and TF32 chose the same engines for every graph"

# The ViTs' attention as cuDNN's fused attention (forward and backward per shape).
# cuDNN's attention engines are runtime-compiled: choosing one needs a loadable
# libcuda, and finalizing a plan loads its kernel through the driver. Without a GPU
# the toolkit's stub libcuda serves the first (nothing is ever loaded through it), so
# the check here is "cuDNN accepts every attention graph for an H100"; a machine with a
# driver builds the plans outright.
vit_part=1
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  stub=""
  for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64/stubs" /usr/local/cuda/targets/*/lib/stubs; do
    [[ -f $dir/libcuda.so ]] && { stub=$dir/libcuda.so; break; }
  done
  if [[ -n $stub ]]; then
    mkdir -p "$SCRATCH/stub" && ln -sf "$stub" "$SCRATCH/stub/libcuda.so.1"
    run_prefix=(env "LD_LIBRARY_PATH=$SCRATCH/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  else
    echo "SKIPPED (the ViT attention part): no libcuda and no CUDA stub libcuda.so to choose cuDNN's attention engines"
    vit_part=0
  fi
fi
check_vit() {  # check_vit NAME ARGS...: as check, and both attention passes were built or accepted
  local name=$1
  check "$@"
  grep -q '^  ok   attention forward' "$SCRATCH/$name.log" && grep -q '^  ok   attention backward' "$SCRATCH/$name.log" ||
    { cat "$SCRATCH/$name.log"; fail "$name: no attention graph"; }
}
if [[ $vit_part == 1 ]]; then
  # The GPU-speed benchmark's ViT-S (257 tokens), DINOv3's 4 registers (261), a ViT-B (12 heads).
  check_vit vits-dino-bf16-b64 --backbone vits_dino --size 256 --batch 64 --precision bf16-mixed
  check_vit vits-dinov3-bf16-b16 --backbone vits_dinov3 --size 256 --batch 16 --precision bf16-mixed
  check_vit vitb-dinov2-fp16-b16 --backbone vitb_dinov2 --size 256 --batch 16 --precision 16-mixed
  # SAM's windowed layers (196-row windows, 64 of them at batch 16) and its global ones (256).
  check_vit vitb-sam-bf16-b16 --backbone vitb_sam --size 256 --batch 16 --precision bf16-mixed
  # SAM2's Hiera: windows of 64 and 16 rows, 196-row padded windows, 256-row global
  # blocks (head widths 96 / 56), and the stage changes' pooled queries (not fused).
  check_vit vitt-sam2-bf16-b16 --backbone vitt_sam2 --size 256 --batch 16 --precision bf16-mixed
  grep -q 'pooled queries are not fused' "$SCRATCH/vitt-sam2-bf16-b16.log" ||
    { cat "$SCRATCH/vitt-sam2-bf16-b16.log"; fail "vitt_sam2: no pooled-query attention listed"; }
  check_vit vitb-sam2-bf16-b16 --backbone vitb_sam2 --size 256 --batch 16 --precision bf16-mixed
  # fp32 keeps the batched-matmul attention: nothing fused is asked of cuDNN.
  check vits-dino-fp32 --backbone vits_dino --size 128 --batch 8 --precision 32
  grep -q 'not fused in precision 32' "$SCRATCH/vits-dino-fp32.log" ||
    { cat "$SCRATCH/vits-dino-fp32.log"; fail "fp32 ViT attention"; }
fi
run_prefix=()

# Bad input: one error line, exit 2.
expect_fail 2 '^error: bench plans: --device-properties is required' "$TRAINER" bench plans
expect_fail 2 '^error: bench plans: cannot read' "$TRAINER" bench plans --device-properties "$SCRATCH/missing.json"
expect_fail 2 '^error: bench plans: --operand-alignment must be' \
  "$TRAINER" bench plans --device-properties "$PROPS" --operand-alignment 3
expect_fail 2 '^error: bench plans: --operand-alignment 2 is below' \
  "$TRAINER" bench plans --device-properties "$PROPS" --precision 32 --operand-alignment 2
printf '{"deviceVer": 900}' > "$SCRATCH/partial.json"
expect_fail 2 '^error: cuDNN does not accept these device properties' \
  "$TRAINER" bench plans --device-properties "$SCRATCH/partial.json"
[[ $(grep -c '^error: ' "$SCRATCH/err.txt") == 1 ]] || { cat "$SCRATCH/err.txt"; fail "more than one error line"; }
# A FIFO named as the properties file is refused, not waited on.
mkfifo "$SCRATCH/fifo.json"
expect_fail 2 '^error: bench plans: cannot read --device-properties .*not a regular file' \
  timeout 20 "$TRAINER" bench plans --device-properties "$SCRATCH/fifo.json"
echo "PASS"
