# Parity of every CPU op with PyTorch: the unit-test binary exports random inputs
# and our outputs (hidden Catch2 test "[parity]"), tests/parity/ops_parity.py
# recomputes them with torch and compares (rel. error < 1e-4, fp32).
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
"$PY" -c "import torch, numpy" 2>/dev/null || skip "$PY has no torch/numpy (Debian: apt-get install python3-torch)"
UNIT="$(dirname "$TRAINER")/tests/unit_tests"
[[ -x "$UNIT" ]] || fail "unit test binary not found at $UNIT (build with TRAINER_TESTS=ON)"
TRAINER_PARITY_DIR="$SCRATCH/cases" "$UNIT" "[parity]" >"$SCRATCH/export.txt" 2>&1 \
  || { cat "$SCRATCH/export.txt"; fail "exporting the parity cases failed"; }
"$PY" "$REPO/tests/parity/ops_parity.py" "$SCRATCH/cases" || fail "ops differ from PyTorch"
