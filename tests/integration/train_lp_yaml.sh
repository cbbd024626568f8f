# lightning-pose's own mirror-mouse example config (tests/data/lightning-pose-configs/,
# verbatim) trains with `mpirun -np 2 trainer train config.yaml --overrides ...`: only the
# data path (its ${LP_ROOT_PATH:} is lightning-pose's install folder) and the epoch count
# are overridden; most runs also drop its unsupervised loss for speed, one keeps it
# (pca_singleview on videos/test_vid.mp4, 2 ranks). data_dir + csv_file are
# imported on the first run into imported/ beside the run folder, reused by the next,
# and imported again when the CSV changes. Bad YAML, unknown keys and refused keys exit 2.
source "$(dirname "$0")/lib/common.sh"
DATA="$(shared_data)/mirror-mouse-example"
[[ -f $DATA/CollectedData.csv ]] || skip "$DATA/CollectedData.csv not found (set TRAINER_SHARED_DATA)"
DATA="$(cd "$DATA" && pwd)"
CONFIG="$REPO/tests/data/lightning-pose-configs/config_mirror-mouse-example.yaml"
OVERRIDES=(data.data_dir="$DATA" model.losses_to_use=[] training.max_epochs=2)
# The file predicts (and labels) test_vid.mp4 after training: 100 s of ResNet-50 on two
# CPU ranks; tests/integration/predict_video.sh tests that (eval.test_videos_directory).
OVERRIDES+=(eval.predict_vids_after_training=false)
# Its backbone, resnet50_animal_ap10k, until that name is registered: plain resnet50.
if ! "$TRAINER" train --help | grep -q resnet50_animal_ap10k; then
  echo "note: resnet50_animal_ap10k is not a backbone of this build: overriding model.backbone=resnet50"
  OVERRIDES+=(model.backbone=resnet50)
fi

timeout 600 $MPIRUN -np 2 "$TRAINER" train "$CONFIG" --overrides "${OVERRIDES[@]}" --out "$SCRATCH/runs/a" \
  >"$SCRATCH/a.txt" 2>&1 || { cat "$SCRATCH/a.txt"; fail "training with the mirror-mouse YAML failed"; }
cat "$SCRATCH/a.txt"
grep -q "data: imported 90 frames (406x396, 17 keypoints)" "$SCRATCH/a.txt" || fail "no import on the first run"
grep -q "done: 2 epochs" "$SCRATCH/a.txt" || fail "did not train 2 epochs"
# The eval keys are done now: no warning about them.
grep -q "warning: .*eval\." "$SCRATCH/a.txt" && fail "a warning about eval keys"
ls "$SCRATCH"/runs/imported/CollectedData-*.h5 >/dev/null || fail "no cached import beside the run"
grep -q "^data_files = \[$SCRATCH/runs/imported/CollectedData-" "$SCRATCH/runs/a/config.ini" ||
  { cat "$SCRATCH/runs/a/config.ini"; fail "config.ini does not name the imported file"; }
grep -q "^csv_file =$" "$SCRATCH/runs/a/config.ini" || fail "config.ini still imports"
[[ $(tail -n +2 "$SCRATCH/runs/a/metrics.csv" | wc -l) -ge 2 ]] || fail "metrics.csv lacks epoch rows"

# The runs below test the import cache, not the network: ResNet-18 at 128x128 keeps them short.
SMALL=(model.backbone=resnet18 data.image_resize_dims.height=128 data.image_resize_dims.width=128)

# The second run reuses the import.
# (With lightning-pose's train_frames: half of the 72 train frames, the rest unused.)
$MPIRUN -np 2 "$TRAINER" train "$CONFIG" --overrides "${OVERRIDES[@]}" "${SMALL[@]}" training.max_epochs=1 \
  training.train_frames=0.5 --out "$SCRATCH/runs/b" >"$SCRATCH/b.txt" 2>&1 ||
  { cat "$SCRATCH/b.txt"; fail "second run failed"; }
grep -q "imported before" "$SCRATCH/b.txt" || { cat "$SCRATCH/b.txt"; fail "the cached import was not reused"; }
grep -q "data: 90 frames (36 train, 9 val, 9 test)" "$SCRATCH/b.txt" || fail "train_frames=0.5 did not keep 36"
[[ $(grep -c ",unused$" "$SCRATCH/runs/b/split.csv") == 36 ]] || fail "split.csv lacks the 36 unused frames"
[[ $(ls "$SCRATCH"/runs/imported/*.h5 | wc -l) == 1 ]] || fail "a second import was made"

# A changed CSV is imported again (a copy of the CSV; the images stay where they are).
mkdir -p "$SCRATCH/project"
ln -s "$DATA/labeled-data" "$SCRATCH/project/labeled-data"
sed '5s/,[0-9.]*,/,12.5,/' "$DATA/CollectedData.csv" >"$SCRATCH/project/CollectedData.csv"
cmp -s "$DATA/CollectedData.csv" "$SCRATCH/project/CollectedData.csv" && fail "the CSV copy was not changed"
$MPIRUN -np 2 "$TRAINER" train "$CONFIG" --overrides "${OVERRIDES[@]}" "${SMALL[@]}" training.max_epochs=1 \
  data.data_dir="$SCRATCH/project" --out "$SCRATCH/runs/c" >"$SCRATCH/c.txt" 2>&1 ||
  { cat "$SCRATCH/c.txt"; fail "run on the changed CSV failed"; }
grep -q "data: imported 90 frames" "$SCRATCH/c.txt" || fail "the changed CSV was not imported again"
[[ $(ls "$SCRATCH"/runs/imported/*.h5 | wc -l) == 2 ]] || fail "expected two cached imports"

# predict reads the run's config.ini (the imported file), from another folder.
(cd "$SCRATCH" && "$TRAINER" predict --checkpoint "$SCRATCH/runs/a/checkpoints/last.h5" \
  --out "$SCRATCH/pred.csv" >"$SCRATCH/p.txt" 2>&1) || { cat "$SCRATCH/p.txt"; fail "predict after a YAML run"; }
[[ $(wc -l <"$SCRATCH/pred.csv") -ge 90 ]] || fail "predictions.csv is short"

# --print-config writes YAML after a YAML config.
"$TRAINER" train "$CONFIG" --overrides "${OVERRIDES[@]}" --print-config >"$SCRATCH/printed.yaml"
grep -q "^  optimizer_params:" "$SCRATCH/printed.yaml" || fail "--print-config is not lightning-pose's YAML layout"
"$TRAINER" train --config "$SCRATCH/printed.yaml" --print-config >"$SCRATCH/printed2.yaml"
diff <(grep -v '^#' "$SCRATCH/printed.yaml") <(grep -v '^#' "$SCRATCH/printed2.yaml") || fail "print-config round trip"

# Errors: exit 2 with the key named, on every rank, without hanging.
# Semi-supervised as the file says (losses_to_use: [pca_singleview], the example video),
# on 2 ranks; one epoch at 128x128 to keep it short.
SEMI=(data.data_dir="$DATA" training.max_epochs=1 eval.predict_vids_after_training=false
      data.image_resize_dims.height=128 data.image_resize_dims.width=128)
[[ " ${OVERRIDES[*]} " == *" model.backbone=resnet50 "* ]] && SEMI+=(model.backbone=resnet50)
timeout 900 $MPIRUN -np 2 "$TRAINER" train "$CONFIG" --out "$SCRATCH/semi" --overrides "${SEMI[@]}" \
  >"$SCRATCH/semi.log" 2>&1 || { cat "$SCRATCH/semi.log"; fail "semi-supervised run of the example config"; }
grep -q "pca_singleview: PCA of the labelled keypoints keeps 14 of 28 components" "$SCRATCH/semi.log" \
  || { cat "$SCRATCH/semi.log"; fail "no PCA fit of the 14 columns_for_singleview_pca keypoints"; }
grep -q "unsupervised losses: pca_singleview on 1 video(s) of $DATA/videos: 16 consecutive frames per step (8 per rank)" \
  "$SCRATCH/semi.log" || { cat "$SCRATCH/semi.log"; fail "the unlabelled frames are not the example's"; }
epoch_rows "$SCRATCH/semi/metrics.csv" | awk -F, '$17 + 0 > 0 { found = 1 } END { exit !found }' \
  || { cat "$SCRATCH/semi/metrics.csv"; fail "metrics.csv has no train_pca_singleview_loss"; }
expect_fail 2 "error: .*config_mirror-mouse-example.yaml:10: data.data_dir uses the resolver \\\$\{LP_ROOT_PATH:\}" \
  "$TRAINER" train "$CONFIG" --overrides model.losses_to_use=[]
printf 'training:\n  max_epochs: 3\n  trian_batch_size: 8\n' >"$SCRATCH/typo.yaml"
expect_fail 2 "error: .*typo.yaml:3: unknown key 'training.trian_batch_size'" "$TRAINER" train "$SCRATCH/typo.yaml"
grep -q "hint: did you mean 'training.train_batch_size'" "$SCRATCH/err.txt" || fail "no did-you-mean hint"
printf 'training:\n  max_epochs: [3\n' >"$SCRATCH/bad.yaml"
expect_fail 2 "error: .*bad.yaml:[0-9]+: not valid YAML" "$TRAINER" train --config "$SCRATCH/bad.yaml"
expect_fail 2 "error: .*unknown key 'model.backbonee'" "$TRAINER" train "$CONFIG" --overrides model.backbonee=resnet18
# A missing CSV is named before anything starts, on every rank.
expect_fail 2 "error: cannot open data.csv_file '.*nothing.csv'" \
  timeout 120 $MPIRUN -np 2 "$TRAINER" train "$CONFIG" --overrides "${OVERRIDES[@]}" data.csv_file=nothing.csv \
  --out "$SCRATCH/runs/d"
echo "OK"
