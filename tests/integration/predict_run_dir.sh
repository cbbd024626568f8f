# `trainer predict RUN_DIR INPUT...`, as `litpose predict MODEL_DIR INPUT...` is called:
# a label CSV goes to RUN_DIR/image_preds/<csv>/predictions.csv (+ the pixel error file)
# and equals the explicit `--checkpoint ... --overrides data.csv_file=...` call, which
# no longer conflicts with the run's imported data_files and no longer overwrites the
# run's own predictions.csv; a video goes to RUN_DIR/video_preds/ (with a labeled video;
# lightning-pose's --skip_viz, --overwrite, --batch_size); misuse is `error:` +
# exit 2 (no inputs, a missing input, an image folder, --checkpoint twice, --out with
# --video, lightning-pose's --output_dir, a lightning-pose model directory without a checkpoint).
source "$(dirname "$0")/lib/common.sh"
TOOL=${TRAINER_TEST_VIDEO_TOOL:-$(dirname "$TRAINER")/tests/test_video_tool}
[[ -x $TOOL ]] || fail "test helper $TOOL not built (target test_video_tool)"
cd "$SCRATCH"

"$TRAINER" synth --out s.h5 --frames 24 --size 64 --keypoints 3 --seed 1 >/dev/null || fail "synth"
"$TRAINER" synth --out new.h5 --frames 6 --size 64 --keypoints 3 --seed 2 --export-dir proj >/dev/null ||
  fail "synth --export-dir"
[[ -s proj/CollectedData.csv ]] || fail "no exported label CSV"
cat >s.cfg <<CFG
[data]
data_files = $SCRATCH/s.h5
data_dir = $SCRATCH/proj
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = none
train_batch_size = 4
val_batch_size = 4
max_epochs = 1
unfreezing_epoch = 0
num_workers = 1
[model]
backbone = resnet18
CFG
"$TRAINER" train --config s.cfg --out run --max-steps 4 >train.log 2>&1 || { cat train.log; fail "train"; }
[[ -s run/predictions.csv ]] || fail "training wrote no predictions.csv"
own_before=$(md5sum <run/predictions.csv)

# A label CSV, the litpose way.
"$TRAINER" predict run proj/CollectedData.csv >csv.log 2>&1 || { cat csv.log; fail "predict RUN_DIR CSV"; }
out=run/image_preds/CollectedData.csv
[[ -s $out/predictions.csv && -s $out/predictions_pixel_error.csv ]] || { ls -R run; fail "no image_preds output"; }
[[ $(tail -n +4 $out/predictions.csv | wc -l) == 6 ]] || fail "image_preds predictions.csv does not hold 6 frames"
head -n 1 $out/predictions.csv | grep -q ",set$" && fail "predictions on other data have a set column"
[[ $(md5sum <run/predictions.csv) == "$own_before" ]] || fail "the run's own predictions.csv was overwritten"

# The explicit form: data.csv_file on the command line replaces the run's data_files,
# and the default output is the same image_preds file.
rm -rf run/image_preds
"$TRAINER" predict --checkpoint run/checkpoints/last.h5 --overrides data.csv_file="$SCRATCH/proj/CollectedData.csv" \
  >explicit.log 2>&1 || { cat explicit.log; fail "predict --overrides data.csv_file= against a run with data_files"; }
[[ -s $out/predictions.csv ]] || fail "explicit csv_file prediction did not default to image_preds"

# A video, the litpose way: RUN_DIR/video_preds/<video>.csv.
"$TOOL" write clip.mp4 12 64 64 || fail "video_tool write"
"$TRAINER" predict run clip.mp4 >video.log 2>&1 || { cat video.log; fail "predict RUN_DIR VIDEO"; }
[[ -s run/video_preds/clip.csv ]] || { ls -R run; fail "no video_preds/clip.csv"; }
# lightning-pose's defaults and flags: a labeled video unless --skip_viz; an input whose
# prediction file exists is skipped unless --overwrite; --batch_size N frames per batch.
[[ -s run/video_preds/labeled_videos/clip_labeled.mp4 ]] || { ls -R run/video_preds; fail "no labeled video by default"; }
before=$(md5sum <run/video_preds/clip.csv)
"$TRAINER" predict run clip.mp4 proj/CollectedData.csv >again.log 2>&1 || { cat again.log; fail "predict again"; }
grep -q "skipping clip.mp4 (run/video_preds/clip.csv exists; --overwrite predicts it again)" again.log ||
  { cat again.log; fail "an already predicted video was not skipped"; }
grep -q "skipping .*CollectedData.csv (run/image_preds/CollectedData.csv/predictions.csv exists" again.log ||
  { cat again.log; fail "an already predicted CSV was not skipped"; }
# Every input skipped: the options are still checked (a typo is not silently ignored).
expect_fail 2 "^error: predict: unknown option '--bogus_flag'" "$TRAINER" predict run clip.mp4 --bogus_flag 1
expect_fail 2 "^error: predict: unknown option '--output_dir'" "$TRAINER" predict run clip.mp4 --output_dir x
rm run/video_preds/labeled_videos/clip_labeled.mp4
"$TRAINER" predict run clip.mp4 --overwrite --skip_viz --batch_size 5 >over.log 2>&1 || { cat over.log; fail "--overwrite"; }
grep -q "skipping" over.log && fail "--overwrite still skipped"
grep -q ", batch 5, " over.log || { cat over.log; fail "--batch_size 5 is not the video batch"; }
[[ ! -e run/video_preds/labeled_videos/clip_labeled.mp4 ]] || fail "--skip_viz still drew a labeled video"
[[ $(md5sum <run/video_preds/clip.csv) == "$before" ]] || fail "the video's predictions changed between two calls"
# Under mpirun, rank 0 alone predicts a label CSV (the videos are shared, first).
timeout 300 $MPIRUN -np 2 "$TRAINER" predict run proj/CollectedData.csv clip.mp4 --overwrite --skip_viz >mpi.log 2>&1 ||
  { cat mpi.log; fail "predict under mpirun -np 2"; }
[[ $(grep -c "^predicted .* frames with" mpi.log) == 1 ]] || { cat mpi.log; fail "the label CSV was not predicted exactly once"; }
[[ $(grep -c "^configuration: " mpi.log) == 2 ]] || { cat mpi.log; fail "rank 1 read the CSV's configuration too"; }
# A CSV of other keypoints is refused, naming them (--overwrite: image_preds/ already
# holds a CollectedData.csv), from its header: before its images are imported.
"$TRAINER" synth --out four.h5 --frames 4 --size 64 --keypoints 4 --seed 3 --export-dir proj4 >/dev/null || fail "synth 4"
imports_before=$(ls imported 2>/dev/null | wc -l)
expect_fail 2 "predicts 3 keypoints but the data has 4 \(nose, ear_left, ear_right, paw_LF\)" \
  "$TRAINER" predict run proj4/CollectedData.csv --overwrite
[[ $(ls imported 2>/dev/null | wc -l) == "$imports_before" ]] || fail "the refused CSV was imported first: $(ls imported)"
expect_fail 2 "--runtime onnx .* is not supported" "$TRAINER" predict run clip.mp4 --runtime onnx
# A wrong --precision is refused even when every input was predicted before (skipped).
expect_fail 2 "unknown --precision 'fp64'" "$TRAINER" predict run clip.mp4 --precision fp64
expect_fail 2 "--batch_size 'x' is not a positive number" "$TRAINER" predict run clip.mp4 --batch_size x

# Misuse.
expect_fail 2 "nothing to predict after the run folder" "$TRAINER" predict run
expect_fail 2 "input 'missing.mp4' does not exist" "$TRAINER" predict run missing.mp4
mkdir -p images && cp proj/labeled-data/*/*.png images/ 2>/dev/null || touch images/a.png
expect_fail 2 "holds no videos" "$TRAINER" predict run images
expect_fail 2 "--checkpoint given with a run folder" "$TRAINER" predict run clip.mp4 --checkpoint run/checkpoints/last.h5
expect_fail 2 "--video writes a CSV per video" "$TRAINER" predict --checkpoint run/checkpoints/last.h5 --video clip.mp4 --out x.csv
expect_fail 2 "unknown option '--output_dir'" "$TRAINER" predict --checkpoint run/checkpoints/last.h5 --output_dir x
mkdir -p lpmodel/tb_logs && touch lpmodel/config.yaml
expect_fail 2 "lightning-pose model directory .lpmodel. has no checkpoint" "$TRAINER" predict lpmodel clip.mp4
mkdir -p empty
expect_fail 2 "holds no checkpoints/best.h5" "$TRAINER" predict empty clip.mp4
echo "PASSED"
