# Shared helpers for integration tests, sourced by each tests/integration/*.sh.
# Every test is called as: bash test.sh TRAINER REPO SCRATCH
set -euo pipefail
TRAINER=$1
REPO=$2
SCRATCH=$3
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
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
shared_data() { echo "${TRAINER_SHARED_DATA:-$REPO/../shared/data}"; }
