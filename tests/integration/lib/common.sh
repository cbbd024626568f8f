# Shared helpers for integration tests, sourced by each tests/integration/*.sh.
# Every test is called as: bash test.sh TRAINER REPO SCRATCH
set -euo pipefail
TRAINER=$1
REPO=$2
SCRATCH=$3
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
# Cleanup when the test exits, whatever happens. A full ctest run otherwise leaves
# ~11 GB of checkpoints behind (a ResNet-18 checkpoint with Adam moments is 130 MB)
# and filled CI's disk. A passed or skipped test's folder goes; a failed test keeps its
# logs and small files but not its large HDF5 files. TRAINER_KEEP_SCRATCH=1 keeps all.
# Tests add their own cleanup with at_exit (run last-in, first-out, before this).
EXIT_HOOKS=()
at_exit() { EXIT_HOOKS+=("$1"); }
run_exit_hooks() {
  local rc=$? i
  for ((i = ${#EXIT_HOOKS[@]} - 1; i >= 0; i--)); do eval "${EXIT_HOOKS[i]}" || true; done
  if [[ -z ${TRAINER_KEEP_SCRATCH:-} ]]; then
    if [[ $rc == 0 || $rc == 77 ]]; then
      rm -rf "$SCRATCH"
    else
      find "$SCRATCH" -type f -name '*.h5*' -size +16M -delete 2>/dev/null || true
      echo "(test scratch kept in $SCRATCH without its large HDF5 files; TRAINER_KEEP_SCRATCH=1 keeps them)" >&2
    fi
  fi
  exit $rc
}
trap run_exit_hooks EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --oversubscribe"

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIPPED: $*"; exit 77; }
# expect_fail CODE PATTERN cmd...: the command must exit with CODE and print PATTERN on stderr.
expect_fail() {
  local code=$1 pattern=$2; shift 2
  local rc=0
  "$@" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt" || rc=$?
  [[ $rc == "$code" ]] || { cat "$SCRATCH/err.txt" >&2; fail "expected exit $code, got $rc: $*"; }
  grep -qE -- "$pattern" "$SCRATCH/err.txt" || { cat "$SCRATCH/err.txt" >&2; fail "stderr lacks /$pattern/: $*"; }
}
# The epoch rows of a metrics.csv (its train_loss cell is filled; step rows leave it empty).
epoch_rows() { awk -F, 'NR > 1 && $3 != ""' "$1"; }
# test_python MODULE...: the first Python that imports every MODULE: the test tools'
# environment that scripts/setup.sh makes beside the build, then Debian's, then PATH's.
test_python() {
  local py mods
  mods=$(IFS=,; echo "$*")
  for py in "$(dirname "$TRAINER")/python-test-env/bin/python3" /usr/bin/python3 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c "import $mods" >/dev/null 2>&1; then echo "$py"; return 0; fi
  done
  return 1
}
shared_data() { echo "${TRAINER_SHARED_DATA:-$REPO/../shared/data}"; }
