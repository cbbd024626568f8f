#!/usr/bin/env bash
# Fails when a source file includes a header of a layer it may not use (src/LAYERS):
#   scripts/check_layers.sh [ROOT]     ROOT defaults to the repository
# Prints one line per offending include, with file and line, and exits 1; exits 0
# with a one-line summary otherwise. kernels/ is checked as part of compute.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
layers_file=$root/src/LAYERS
[[ -f $layers_file ]] || { echo "check_layers: no $layers_file" >&2; exit 2; }

declare -A allowed=()
while IFS= read -r line; do
  [[ $line =~ ^([a-z]+):(.*)$ ]] || continue
  allowed[${BASH_REMATCH[1]}]=" ${BASH_REMATCH[1]} ${BASH_REMATCH[2]} "
done <"$layers_file"

violations=0
files=0
check_file() {  # check_file FILE LAYER
  local file=$1 layer=$2 n=0 line target
  files=$((files + 1))
  while IFS= read -r line; do
    n=$((n + 1))
    [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([a-z_]+)/ ]] || continue
    target=${BASH_REMATCH[1]}
    [[ -n ${allowed[$target]:-} ]] || continue  # not a layer folder (e.g. a kernels-local path)
    if [[ ${allowed[$layer]} != *" $target "* ]]; then
      echo "${file#"$root"/}:$n: $layer includes a header of $target; $layer may include:${allowed[$layer]}" >&2
      violations=$((violations + 1))
    fi
  done <"$file"
}

for layer in "${!allowed[@]}"; do
  [[ -d $root/src/$layer ]] || continue
  while IFS= read -r -d '' file; do check_file "$file" "$layer"; done \
    < <(find "$root/src/$layer" -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) -print0)
done
if [[ -d $root/kernels ]]; then
  while IFS= read -r -d '' file; do check_file "$file" compute; done \
    < <(find "$root/kernels" -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.hpp' -o -name '*.h' \) -print0)
fi
# Every folder of src/ must be a declared layer, so a new one cannot slip past.
for dir in "$root"/src/*/; do
  name=$(basename "$dir")
  [[ -n ${allowed[$name]:-} ]] || { echo "src/$name/ is not a layer in src/LAYERS" >&2; violations=$((violations + 1)); }
done
if (( violations > 0 )); then
  echo "check_layers: $violations upward include(s); see src/LAYERS for what each layer may use" >&2
  exit 1
fi
echo "check_layers: $files files, every include goes to the same or a lower layer"
