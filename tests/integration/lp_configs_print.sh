# Every lightning-pose config runs `trainer train CONFIG --print-config`: the nine of
# lightning-pose's scripts/configs/ at v2.4.0, config_default.yaml of v1.0.0 and v1.5.1,
# and a model folder's config.yaml (tests/data/lightning-pose-configs/README.md). Only
# the data path is overridden, as a lightning-pose user does. The printed YAML reads
# back the same. The two multiview configs are refused by name: one `error:` line
# naming the file, line and key, one `hint:` line, exit code 2.
source "$(dirname "$0")/lib/common.sh"
CONFIGS="$REPO/tests/data/lightning-pose-configs"
"$TRAINER" train --help | grep -q -- '--print-config' || fail "train --help lacks --print-config"

count=0
for config in "$CONFIGS"/*.yaml; do
  name=$(basename "$config")
  args=(train "$config" --overrides data.data_dir="$SCRATCH/data" --print-config)
  case $name in
    config_default_multiview.yaml | config_mirror-mouse-example_split.yaml)
      expect_fail 2 "^error: .*$name:[0-9]+: data.csv_file takes one value" "$TRAINER" "${args[@]}"
      [[ $(wc -l <"$SCRATCH/err.txt") == 2 ]] || { cat "$SCRATCH/err.txt"; fail "$name: not one error and one hint line"; }
      grep -q '^hint: multiview projects' "$SCRATCH/err.txt" || fail "$name: the hint does not name multiview"
      continue ;;
  esac
  "$TRAINER" "${args[@]}" >"$SCRATCH/printed.yaml" 2>"$SCRATCH/err.txt" ||
    { cat "$SCRATCH/err.txt"; fail "$name: --print-config failed"; }
  grep -q '^error:' "$SCRATCH/err.txt" && fail "$name: an error on stderr"
  grep -q "^  data_dir: $SCRATCH/data$" "$SCRATCH/printed.yaml" || fail "$name: data_dir not overridden"
  "$TRAINER" train "$SCRATCH/printed.yaml" --print-config >"$SCRATCH/again.yaml" 2>"$SCRATCH/err.txt" ||
    { cat "$SCRATCH/err.txt"; fail "$name: the printed config does not read back"; }
  diff <(grep -v '^#' "$SCRATCH/printed.yaml") <(grep -v '^#' "$SCRATCH/again.yaml") >&2 ||
    fail "$name: --print-config does not round-trip"
  count=$((count + 1))
done
[[ $count == 10 ]] || fail "expected 10 configs to print, printed $count"

# The model folder's metadata changes nothing: the same configuration as its source.
"$TRAINER" train "$CONFIGS/model_folder_config.yaml" --overrides data.data_dir="$SCRATCH/data" --print-config \
  | grep -v '^#' >"$SCRATCH/model_folder.yaml"
"$TRAINER" train "$CONFIGS/config_mirror-mouse-example.yaml" --overrides data.data_dir="$SCRATCH/data" --print-config \
  | grep -v '^#' >"$SCRATCH/example.yaml"
diff "$SCRATCH/example.yaml" "$SCRATCH/model_folder.yaml" >&2 || fail "the model folder config reads differently"

# Bad input: one error line naming the key, a hint, exit 2.
expect_fail 2 "^error: .*bad value for training.val_check_interval: expected a count of batches" \
  "$TRAINER" train "$CONFIGS/config_default.yaml" --overrides training.val_check_interval=1.5 --print-config
expect_fail 2 "^error: .*'vit_h_sam' is a lightning-pose 1.x backbone that lightning-pose 2 dropped" \
  "$TRAINER" train "$CONFIGS/config_default.yaml" --overrides model.backbone=vit_h_sam --print-config
grep -q '^hint: model.backbone is one of: resnet18' "$SCRATCH/err.txt" || fail "vit_h_sam: no list of backbones"
[[ $(wc -l <"$SCRATCH/err.txt") == 2 ]] || fail "vit_h_sam: not one error and one hint line"
echo "ok: $count lightning-pose configs print, 2 multiview ones refused by name"
