# The layering holds: no source file includes a header of a layer above it
# (src/LAYERS, scripts/check_layers.sh). And the check is not vacuous: a copy of
# the tree with one upward include (runtime -> train), and one with a folder that
# is not a declared layer, must each fail with the offending file named.
source "$(dirname "$0")/lib/common.sh"

bash "$REPO/scripts/check_layers.sh" "$REPO" || fail "an upward include in the repository (see above)"

copy=$SCRATCH/tree
mkdir -p "$copy"
cp -r "$REPO/src" "$copy/src"
[[ -d $REPO/kernels ]] && cp -r "$REPO/kernels" "$copy/kernels"
printf '#include "train/step.hpp"  // an upward include, on purpose\n' >>"$copy/src/runtime/world.hpp"
expect_fail 1 "src/runtime/world.hpp:[0-9]+: runtime includes a header of train" bash "$REPO/scripts/check_layers.sh" "$copy"


cp "$REPO/src/runtime/world.hpp" "$copy/src/runtime/world.hpp"
mkdir -p "$copy/src/extra" && echo '// new' >"$copy/src/extra/x.cpp"
expect_fail 1 "upward include" bash "$REPO/scripts/check_layers.sh" "$copy"
grep -q "src/extra/ is not a layer" "$SCRATCH/err.txt" || fail "an undeclared folder passed"
echo "layering: ok"
