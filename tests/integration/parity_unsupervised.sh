# Parity of the unsupervised keypoint losses (temporal_loss, pca_loss) and the PCA
# fit with lightning-pose's formulas: the unit-test binary exports cases (hidden
# Catch2 test "[parity_unsupervised]"), tests/parity/unsupervised_parity.py
# recomputes them with torch / numpy in float64 and compares (rel. error < 1e-5).
# The mirror-mouse fit cases need ${MIRROR_MOUSE_DIR:-<repo>/../shared/data/mirror-mouse-example}
# and are skipped visibly without it.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
"$PY" -c "import torch, numpy" 2>/dev/null || skip "$PY has no torch/numpy (Debian: apt-get install python3-torch)"
UNIT="$(dirname "$TRAINER")/tests/unit_tests"
[[ -x "$UNIT" ]] || fail "unit test binary not found at $UNIT (build with TRAINER_TESTS=ON)"
export MIRROR_MOUSE_DIR="${MIRROR_MOUSE_DIR:-$(shared_data)/mirror-mouse-example}"
TRAINER_PARITY_DIR="$SCRATCH/cases" "$UNIT" "[parity_unsupervised]" >"$SCRATCH/export.txt" 2>&1 \
  || { cat "$SCRATCH/export.txt"; fail "exporting the parity cases failed"; }
grep "^SKIP" "$SCRATCH/export.txt" || true
"$PY" "$REPO/tests/parity/unsupervised_parity.py" "$SCRATCH/cases" || fail "unsupervised losses differ from lightning-pose"
