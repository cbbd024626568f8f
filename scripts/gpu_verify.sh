#!/usr/bin/env bash
# Everything the GPU path must show on a GPU, in one run (issue 7's verification
# list), for a GPU machine with or without the build dependencies:
#
#   scripts/gpu_verify.sh [--bundle DIR | --build-dir DIR] [--out DIR] [--quick]
#
# --bundle DIR     a folder from `scripts/bundle.sh --with-tests` (default: bundle/
#                  when it exists); its trainer-env.sh is sourced, and cuDNN / NCCL
#                  are taken from CUDNN_HOME / NCCL_HOME or, failing that, from the
#                  nvidia-* wheels of python3's torch.
# --build-dir DIR  a CMake build folder with the GPU path instead (default: build).
# --out DIR        where logs and summary.md go (default: $OUT when set, else gpu-verify).
# --quick          batch 16 only and fewer timed steps.
#
# Steps, each logged to OUT/<n>-<name>.log and summarized in OUT/summary.md:
#   1. the GPU and the program's versions
#   2. gpu_tests: every op against its CPU twin, mixed precision, NCCL (1 rank), steps
#   3. tests/integration/gpu_train.sh: CPU and GPU training curves and predictions agree
#   4. trainer bench step, ResNet-50 at 256x256: 32, 32 with TF32, bf16-mixed, 16-mixed
#   5. scripts/bench_gpu_torch.py: the same against PyTorch on this GPU (ratios, MFU),
#      when python3 has torch and torchvision
#   6. trainer bench allreduce --backend nccl (one rank: the local path)
# Without a visible GPU it prints "SKIPPED: no GPU visible" and exits 77.
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
bundle="" build_dir="" out="${OUT:-gpu-verify}" quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bundle) bundle="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "error: unknown option $1" >&2; echo "hint: scripts/gpu_verify.sh --help" >&2; exit 2 ;;
  esac
done
die() { echo "error: $1" >&2; [[ -n "${2:-}" ]] && echo "hint: $2" >&2; exit 2; }

if [[ -z "$bundle" && -z "$build_dir" ]]; then
  if [[ -f "$repo/bundle/bin/trainer-env.sh" ]]; then bundle="$repo/bundle"; else build_dir="$repo/build"; fi
fi
if [[ -n "$bundle" ]]; then
  [[ -f "$bundle/bin/trainer-env.sh" ]] || die "$bundle is not a bundle" "make one: scripts/bundle.sh --with-tests"
  # cuDNN and NCCL from torch's nvidia-* wheels when the environment names none.
  wheel_lib() {
    python3 -c "import importlib, sys; m = importlib.import_module('nvidia.' + sys.argv[1]); print(list(m.__path__)[0])" \
      "$1" 2>/dev/null
  }
  : "${CUDA_HOME:=/usr/local/cuda}"
  [[ -n "${CUDNN_HOME:-}" ]] || CUDNN_HOME="$(wheel_lib cudnn)"
  [[ -n "${NCCL_HOME:-}" ]] || NCCL_HOME="$(wheel_lib nccl)"
  export CUDA_HOME CUDNN_HOME NCCL_HOME
  # shellcheck disable=SC1091
  source "$bundle/bin/trainer-env.sh"
  trainer="$bundle/bin/trainer"
  gpu_tests="$bundle/bin/gpu_tests"
else
  trainer="$build_dir/trainer"
  gpu_tests="$build_dir/tests/gpu_tests"
fi
[[ -x "$trainer" ]] || die "no program at $trainer" "build with -DTRAINER_CUDA=ON, or pass --bundle"

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no GPU visible (nvidia-smi -L)"
  exit 77
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
summary="$out/summary.md"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failed=0

# step NAME COMMAND...: runs it with its output in OUT/NAME.log; a line in the summary.
step() {
  local name="$1"; shift
  local start=$SECONDS rc=0
  echo "=== $name: $*"
  "$@" > "$out/$name.log" 2>&1 || rc=$?
  local verdict=PASS
  [[ $rc == 77 ]] && verdict=SKIPPED
  [[ $rc != 0 && $rc != 77 ]] && { verdict="FAIL (exit $rc)"; failed=1; }
  echo "$verdict ($((SECONDS - start)) s)"
  printf '| %s | %s | %s s | `%s` |\n' "$name" "$verdict" "$((SECONDS - start))" "$*" >> "$summary"
  return 0
}

{
  echo "# GPU verification, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo '```'
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$trainer" --version
  echo '```'
  echo
  echo "| step | result | time | command |"
  echo "|---|---|---|---|"
} > "$summary" 2>&1

step 2-gpu_tests "$gpu_tests" --reporter compact
step 3-gpu_train bash "$repo/tests/integration/gpu_train.sh" "$trainer" "$repo" "$out/gpu_train"

batches="16 64" steps=50 warmup=10
[[ $quick == 1 ]] && batches="16" steps=20 warmup=5
bench_step() {  # bench_step BATCH PRECISION [extra args]
  "$trainer" bench step --accelerator gpu --backbone resnet50 --size 256 --batch "$1" --precision "$2" \
    --steps "$steps" --warmup "$warmup" "${@:3}"
}
for batch in $batches; do
  step "4-bench-b$batch-fp32" bench_step "$batch" 32
  step "4-bench-b$batch-tf32" bench_step "$batch" 32 --float32-matmul-precision high
  step "4-bench-b$batch-bf16" bench_step "$batch" bf16-mixed
  step "4-bench-b$batch-fp16" bench_step "$batch" 16-mixed
done

if python3 -c "import torch, torchvision" 2>/dev/null; then
  step 5-vs-torch python3 "$repo/scripts/bench_gpu_torch.py" --batches "${batches// /,}" \
    --iters "$steps" --warmup "$warmup" --json "$out/torch.jsonl" \
    --trainer-cmd "$trainer bench step --accelerator gpu --backbone resnet50 --size 256 --batch {batch} --precision {precision} --steps $steps --warmup $warmup"
else
  printf '| 5-vs-torch | SKIPPED | 0 s | python3 lacks torch or torchvision |\n' >> "$summary"
fi
step 6-allreduce "$trainer" bench allreduce --backend nccl

{
  echo
  echo "## Numbers"
  echo '```'
  grep -h "images/s\|busbw\|algbw\|GB/s\|SKIPPED\|FAIL\|passed\|failed" "$out"/*.log 2>/dev/null | head -80
  echo '```'
} >> "$summary"
cat "$summary"
exit $failed
