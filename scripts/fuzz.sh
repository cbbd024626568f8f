#!/usr/bin/env bash
# Runs the libFuzzer harnesses built in build-fuzz/ (docs/BUILD.md, "Fuzzing"; another
# TRAINER_FUZZ folder with TRAINER_FUZZ_BUILD: CI's is build-asan/), each for SECONDS
# (default 60), on a scratch copy of its seed corpus tests/fuzz/corpus/<harness>/
# (with tests/fuzz/<harness>.dict when there is one), so the inputs the fuzzer adds
# never land in the repository. Findings (crash-*, leak-*, timeout-*, oom-*) are kept
# under findings/ in that folder; any finding fails the run.
#
#   bash scripts/fuzz.sh [SECONDS] [HARNESS...]   # default: the CI set below
#
# The CI set leaves out fuzz_dataset_open: it mutates raw HDF5 bytes of files without
# a checksum, and within a minute it finds bugs inside libhdf5 itself (hangs, leaks,
# overflows; docs/BUILD.md), which are not ours to fix. fuzz_dataset_schema covers our
# side of opening a dataset; fuzz_damaged_dataset and fuzz_damaged_checkpoint damage a
# few bytes of files the trainer wrote, which must always end in a UserError;
# fuzz_damaged_foreign does the same to an h5py-written file without the checksum,
# which the foreign-file screen (util/h5_screen.hpp) must turn into a UserError.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
BUILD=${TRAINER_FUZZ_BUILD:-$REPO/build-fuzz}
SECONDS_EACH=${1:-60}
shift || true
HARNESSES=("$@")
[[ ${#HARNESSES[@]} -gt 0 ]] ||
  HARNESSES=(fuzz_config_ini fuzz_config_yaml fuzz_label_csv fuzz_dataset_schema fuzz_weight_files
             fuzz_damaged_dataset fuzz_damaged_checkpoint fuzz_damaged_foreign)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch  # the harnesses' scratch files, also those a crash leaves behind
findings=$BUILD/findings
mkdir -p "$findings"
# The harnesses run side by side, TRAINER_FUZZ_JOBS at a time (default: 2, or 1 on
# one core); each is one single-threaded process, so each still gets its SECONDS of one core.
parallel=${TRAINER_FUZZ_JOBS:-$(( $(nproc) > 1 ? 2 : 1 ))}
run_harness() {  # run_harness NAME: its log and exit status under $scratch
  local harness=$1 corpus=$scratch/$1
  mkdir -p "$corpus"
  [[ -d tests/fuzz/corpus/$harness ]] && cp tests/fuzz/corpus/"$harness"/* "$corpus"/
  local options=(-max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
                 -max_len=32768 -print_final_stats=1 -artifact_prefix="$findings/$harness-")
  [[ -f tests/fuzz/$harness.dict ]] && options+=(-dict="tests/fuzz/$harness.dict")
  local rc=0
  "$BUILD/$harness" "${options[@]}" "$corpus" >"$scratch/$harness.log" 2>&1 || rc=$?
  echo "$rc" > "$scratch/$harness.rc"
}
for harness in "${HARNESSES[@]}"; do
  [[ -x $BUILD/$harness ]] || { echo "error: $BUILD/$harness is not built (see docs/BUILD.md, Fuzzing)" >&2; exit 2; }
done
for harness in "${HARNESSES[@]}"; do
  while (( $(jobs -rp | wc -l) >= parallel )); do wait -n || true; done
  run_harness "$harness" &
done
wait
failed=()
for harness in "${HARNESSES[@]}"; do
  printf '\n--- %s: %ss on a copy of tests/fuzz/corpus/%s (%s seeds)\n' "$harness" "$SECONDS_EACH" "$harness" \
    "$(find "tests/fuzz/corpus/$harness" -type f 2>/dev/null | wc -l)"
  # Only libFuzzer's summary lines: a crash report prints in full.
  if [[ "$(cat "$scratch/$harness.rc" 2>/dev/null)" == 0 ]]; then
    grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|Done )' "$scratch/$harness.log" || true
  else
    grep -v -E '^#[0-9]+|NEW_FUNC|^INFO:' "$scratch/$harness.log" | tail -60
    failed+=("$harness")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz findings in: ${failed[*]} (inputs under $findings; docs/BUILD.md says how to turn one into a unit test)" >&2
  exit 1
fi
echo "no findings"
