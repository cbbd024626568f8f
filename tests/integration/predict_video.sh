# `trainer predict --video`: lightning-pose's video_preds CSVs for videos the test
# writes itself (tests/tools/video_tool), equal on 1 and 2 ranks, equal to `predict`
# on the same frames extracted to PNG and imported; missing, 0-frame and truncated
# videos are `error:` + exit 2; test_vid.mp4 of the mirror-mouse example when present.
source "$(dirname "$0")/lib/common.sh"
TOOL=${TRAINER_TEST_VIDEO_TOOL:-$(dirname "$TRAINER")/tests/test_video_tool}
[[ -x $TOOL ]] || fail "test helper $TOOL not built (target test_video_tool)"

"$TRAINER" synth --out "$SCRATCH/s.h5" --frames 24 --size 64 --keypoints 3 --seed 1 >/dev/null || fail "synth"
cat >"$SCRATCH/s.cfg" <<CFG
[data]
data_files = $SCRATCH/s.h5
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = default
train_batch_size = 4
val_batch_size = 4
test_batch_size = 8
max_epochs = 1
train_prob = 0.8
val_prob = 0.1
unfreezing_epoch = 0
num_workers = 2
[model]
backbone = resnet18
model_type = heatmap
[eval]
# Several batches per video (lightning-pose's dali.*.predict.sequence_length).
video_sequence_length = 8
context_video_sequence_length = 10
CFG
"$TRAINER" train --config "$SCRATCH/s.cfg" --out "$SCRATCH/run" --max-steps 12 >"$SCRATCH/train.log" 2>&1 \
  || { cat "$SCRATCH/train.log"; fail "train"; }
CKPT=$SCRATCH/run/checkpoints/last.h5

# max |a - b| over the numeric cells of two CSVs with the same shape (header rows skipped).
max_diff() {  # max_diff A B [skip-columns-of-B]
  paste -d'|' <(tail -n +4 "$1") <(tail -n +4 "$2") | awk -F'|' -v off="${3:-0}" '
    { na = split($1, a, ","); nb = split($2, b, ",");
      if (na + off != nb && na + off + 1 != nb) { print "shape " na " vs " nb; exit 1 }
      for (i = 2; i <= na; ++i) { d = a[i] - b[i + off]; if (d < 0) d = -d; if (d > m) m = d } }
    END { printf "%.6f\n", m + 0 }'
}

# ---- one video, one rank ----------------------------------------------------
"$TOOL" write "$SCRATCH/clip.avi" 70 80 60 || fail "video_tool write"
"$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/clip.avi" --video-out "$SCRATCH/out1" >"$SCRATCH/p1.log" 2>&1 \
  || { cat "$SCRATCH/p1.log"; fail "predict --video"; }
cat "$SCRATCH/p1.log"
grep -qE "clip: 70/70 frames, [0-9]+ frames/s, ETA" "$SCRATCH/p1.log" || fail "progress line with frames/s and ETA"
grep -q ", batch 8, " "$SCRATCH/p1.log" || fail "eval.video_sequence_length = 8 is not the batch"
CSV=$SCRATCH/out1/clip.csv
[[ -f $CSV && -f $SCRATCH/out1/clip_temporal_norm.csv ]] || fail "video_preds files missing"
[[ $(wc -l <"$CSV") == 73 ]] || fail "expected 3 header rows + 70 frames in $CSV"
head -1 "$CSV" | grep -q "^scorer,heatmap_tracker," || fail "scorer row"
sed -n 3p "$CSV" | grep -q "^coords,x,y,likelihood,x,y,likelihood,x,y,likelihood$" || fail "coords row (no set column)"
[[ $(tail -n +4 "$CSV" | cut -d, -f1 | tr '\n' ' ') == "$(seq -s ' ' 0 69) " ]] || fail "frame index column"
[[ $(wc -l <"$SCRATCH/out1/clip_temporal_norm.csv") == 71 ]] || fail "temporal norm rows"
sed -n 2p "$SCRATCH/out1/clip_temporal_norm.csv" | grep -q "^0,,," || fail "temporal norm: frame 0 has none"

# ---- a folder of videos, 1 and 2 ranks ----------------------------------------
mkdir -p "$SCRATCH/vids"
cp "$SCRATCH/clip.avi" "$SCRATCH/vids/a.avi"
"$TOOL" write "$SCRATCH/vids/b.mp4" 45 64 64 || fail "video_tool write mp4"
# A container that announces fewer frames than it holds (24 of 48: a Matroska duration
# too short, as MPEG program streams or variable frame rates give): every frame that
# decodes is predicted.
"$TOOL" write "$SCRATCH/vids/c.mkv" 48 64 64 && "$TOOL" understate "$SCRATCH/vids/c.mkv" || fail "video_tool c.mkv"
echo "not a video" >"$SCRATCH/vids/notes.txt"
"$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/vids" --video-out "$SCRATCH/d1" >"$SCRATCH/d1.log" 2>&1 \
  || { cat "$SCRATCH/d1.log"; fail "predict --video DIR"; }
[[ $(wc -l <"$SCRATCH/d1/a.csv") == 73 && $(wc -l <"$SCRATCH/d1/b.csv") == 48 ]] || fail "folder: a.csv / b.csv rows"
grep -q "c.mkv': its container announces 24 frames, 48 decode; all 48 are predicted" "$SCRATCH/d1.log" ||
  { cat "$SCRATCH/d1.log"; fail "c.mkv: the real frame count is not reported"; }
[[ $(wc -l <"$SCRATCH/d1/c.csv") == 51 ]] || fail "c.mkv: expected 3 header rows + 48 frames, got $(wc -l <"$SCRATCH/d1/c.csv") lines"
[[ $(tail -n +4 "$SCRATCH/d1/c.csv" | cut -d, -f1 | tr '\n' ' ') == "$(seq -s ' ' 0 47) " ]] || fail "c.mkv: frame index column"
timeout 600 $MPIRUN -np 2 "$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/vids" --video-out "$SCRATCH/d2" \
  >"$SCRATCH/d2.log" 2>&1 || { cat "$SCRATCH/d2.log"; fail "mpirun -np 2 predict --video"; }
grep -q "on 2 rank(s)" "$SCRATCH/d2.log" || { cat "$SCRATCH/d2.log"; fail "2 ranks"; }
for v in a b c; do
  d=$(max_diff "$SCRATCH/d1/$v.csv" "$SCRATCH/d2/$v.csv") || fail "$v: $d"
  echo "$v.csv: 1 rank vs 2 ranks, max |diff| = $d"
  awk -v d="$d" 'BEGIN { exit !(d < 1e-3) }' || fail "$v.csv differs between 1 and 2 ranks by $d"
  [[ $(cut -d, -f1 "$SCRATCH/d1/$v.csv") == $(cut -d, -f1 "$SCRATCH/d2/$v.csv") ]] || fail "$v.csv frame column"
done

# ---- heatmap_mhcrnn: 5 context frames per row; the ranks' ranges decode the
# neighbours beyond their ends, so 2 ranks still equal 1 --------------------------
"$TRAINER" synth --out "$SCRATCH/v.h5" --frames 24 --size 64 --keypoints 3 --videos 2 --seed 1 >/dev/null || fail "synth --videos"
sed -e "s|^data_files = .*|data_files = $SCRATCH/v.h5|" -e "s|model_type = heatmap|model_type = heatmap_mhcrnn|" \
  "$SCRATCH/s.cfg" >"$SCRATCH/v.cfg"
"$TRAINER" train --config "$SCRATCH/v.cfg" --out "$SCRATCH/vrun" --max-steps 6 >"$SCRATCH/vtrain.log" 2>&1 \
  || { cat "$SCRATCH/vtrain.log"; fail "train heatmap_mhcrnn"; }
"$TRAINER" predict --checkpoint "$SCRATCH/vrun/checkpoints/last.h5" --video "$SCRATCH/clip.avi" --video-out "$SCRATCH/c1" \
  >"$SCRATCH/c1.log" 2>&1 || { cat "$SCRATCH/c1.log"; fail "predict --video heatmap_mhcrnn"; }
grep -q "5 context frames" "$SCRATCH/c1.log" || { cat "$SCRATCH/c1.log"; fail "context frames not used"; }
grep -q ", batch 6, " "$SCRATCH/c1.log" || fail "eval.context_video_sequence_length = 10 does not predict 6 frames a batch"
timeout 600 $MPIRUN -np 2 "$TRAINER" predict --checkpoint "$SCRATCH/vrun/checkpoints/last.h5" --video "$SCRATCH/clip.avi" \
  --video-out "$SCRATCH/c2" >"$SCRATCH/c2.log" 2>&1 || { cat "$SCRATCH/c2.log"; fail "mpirun -np 2 predict --video heatmap_mhcrnn"; }
d=$(max_diff "$SCRATCH/c1/clip.csv" "$SCRATCH/c2/clip.csv") || fail "mhcrnn: $d"
echo "heatmap_mhcrnn clip.csv: 1 rank vs 2 ranks, max |diff| = $d"
awk -v d="$d" 'BEGIN { exit !(d < 1e-3) }' || fail "heatmap_mhcrnn: 2 ranks differ from 1 by $d"

# A context model's video batch needs 5 frames: --batch_size below that names itself.
expect_fail 2 "^error: predict: --batch_size 3 is below the 5 frames a heatmap_mhcrnn batch" \
  "$TRAINER" predict "$SCRATCH/vrun" "$SCRATCH/clip.avi" --batch_size 3

# ---- the same frames as images: predict equals predict --video ---------------------
# At the network's own size (64 x 64), where both resizes copy: video frames are resized
# as lightning-pose's DALI pipeline does (antialiased, on floats) and labelled frames as
# its imgaug pipeline does, which differ at other sizes (the unit tests check each).
"$TOOL" write "$SCRATCH/clip64.avi" 70 64 64 || fail "video_tool write 64 x 64"
"$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/clip64.avi" --video-out "$SCRATCH/out64" >/dev/null \
  || fail "predict --video clip64.avi"
CSV=$SCRATCH/out64/clip64.csv
NAMES=$(sed -n 2p "$CSV" | cut -d, -f2- | tr ',' '\n' | awk '!seen[$0]++' | tr '\n' ' ')
"$TOOL" extract "$SCRATCH/clip64.avi" "$SCRATCH/frames" $NAMES || fail "video_tool extract"
"$TRAINER" import --csv "$SCRATCH/frames/CollectedData.csv" --out "$SCRATCH/frames.h5" >/dev/null || fail "import frames"
"$TRAINER" predict --config "$SCRATCH/run/config.ini" --checkpoint "$CKPT" --data.data_files "$SCRATCH/frames.h5" \
  --out "$SCRATCH/frames_pred.csv" >/dev/null || fail "predict on the imported frames"
# Columns of predictions.csv: path, x, y, likelihood..., set (the path column lines up
# with the frame number column; the set column is ignored).
d=$(max_diff "$CSV" "$SCRATCH/frames_pred.csv") || fail "images vs video: $d"
echo "predict --video vs predict on the extracted frames: max |diff| = $d"
awk -v d="$d" 'BEGIN { exit !(d < 1e-3) }' || fail "video predictions differ from image predictions by $d"
# The comparisons can tell frames apart: the predictions of frame t and t+1 differ by
# more than the differences above (a barely trained network varies little, so this
# guards against comparing constants).
{ head -3 "$CSV"; tail -n +5 "$CSV"; tail -1 "$CSV"; } >"$SCRATCH/shifted.csv"
d_shift=$(max_diff "$CSV" "$SCRATCH/shifted.csv") || fail "shifted: $d_shift"
echo "neighbouring frames: max |diff| = $d_shift"
awk -v d="$d_shift" -v e="$d" 'BEGIN { exit !(d > e && d >= 1e-3) }' || fail "predictions barely vary over frames ($d_shift)"

# ---- labeled video, and prediction at the end of training (eval.*) ----------------------
"$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/clip.avi" --video-out "$SCRATCH/lab" --labeled-video \
  --eval.colormap spring >/dev/null || fail "predict --labeled-video"
"$TOOL" extract "$SCRATCH/lab/labeled_videos/clip_labeled.mp4" "$SCRATCH/labframes" x >/dev/null || fail "labeled video unreadable"
[[ $(ls "$SCRATCH/labframes/labeled-data" | wc -l) == 70 ]] || fail "labeled video: expected 70 frames"
# With PCA keypoints in the configuration, lightning-pose's <video>_pca_singleview_error.csv too.
"$TRAINER" train --config "$SCRATCH/s.cfg" --out "$SCRATCH/run_eval" --max-steps 1 \
  --eval.test_videos_directory "$SCRATCH/vids" --eval.save_vids_after_training true \
  --data.columns_for_singleview_pca "[0, 2]" >"$SCRATCH/eval.log" 2>&1 \
  || { cat "$SCRATCH/eval.log"; fail "train with eval.test_videos_directory"; }
for f in a.csv b.csv a_temporal_norm.csv a_pca_singleview_error.csv c_pca_singleview_error.csv \
         labeled_videos/a_labeled.mp4 labeled_videos/b_labeled.mp4; do
  [[ -s $SCRATCH/run_eval/video_preds/$f ]] || { cat "$SCRATCH/eval.log"; fail "after training: video_preds/$f missing"; }
done
PCA_ERR=$SCRATCH/run_eval/video_preds/a_pca_singleview_error.csv
[[ $(wc -l <"$PCA_ERR") == 71 ]] || fail "a_pca_singleview_error.csv: expected a header and 70 frames"
[[ $(head -1 "$PCA_ERR" | tr ',' '\n' | wc -l) == 4 ]] || fail "a_pca_singleview_error.csv: header $(head -1 "$PCA_ERR")"
awk -F, 'NR > 1 && ($1 != NR - 2 || $2 == "" || $3 != "" || $4 == "" || $2 < 0) { bad = 1 } END { exit bad }' "$PCA_ERR" ||
  fail "a_pca_singleview_error.csv: expected frame numbers, errors for keypoints 0 and 2, none for 1"

# ---- errors: exit 2 with the file (and frame) named ------------------------------
expect_fail 2 "error: video '.*nope.mp4' does not exist" \
  "$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/nope.mp4" --video-out "$SCRATCH/e"
"$TOOL" write "$SCRATCH/empty.avi" 0 64 64 || fail "video_tool write 0 frames"
expect_fail 2 "error: video '.*empty.avi' has no frames" \
  "$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/empty.avi" --video-out "$SCRATCH/e"
"$TOOL" write "$SCRATCH/cut.avi" 80 64 64 || fail "video_tool write"
truncate -s $(( $(stat -c %s "$SCRATCH/cut.avi") / 2 )) "$SCRATCH/cut.avi"
expect_fail 2 "error: video '.*cut.avi' frame [0-9]+ does not decode" \
  "$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/cut.avi" --video-out "$SCRATCH/e"
expect_fail 2 "error: video '.*cut.avi' frame [0-9]+ does not decode" \
  timeout 300 $MPIRUN -np 2 "$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/cut.avi" --video-out "$SCRATCH/e"
mkdir -p "$SCRATCH/novids"
expect_fail 2 "holds no videos" "$TRAINER" predict --checkpoint "$CKPT" --video "$SCRATCH/novids"
[[ ! -e $SCRATCH/e/cut.csv ]] || fail "a CSV was written for a damaged video"

# ---- test_vid.mp4 of the mirror-mouse example -------------------------------------
PROJECT="$(shared_data)/mirror-mouse-example"
if [[ ! -f $PROJECT/videos/test_vid.mp4 ]]; then
  echo "SKIPPED (part): $PROJECT/videos/test_vid.mp4 not found (set TRAINER_SHARED_DATA)"
  echo "OK"
  exit 0
fi
"$TRAINER" import --csv "$PROJECT/CollectedData.csv" --out "$SCRATCH/mm.h5" >"$SCRATCH/mmimport.log" || fail "import mirror-mouse"
# labeled-data holds img00..img92, the labels name img01..img90: img00, img91 and img92
# are lightning-pose's context frames of the first and last labelled ones.
grep -q "stored 3 unlabelled neighbour frames" "$SCRATCH/mmimport.log" || { cat "$SCRATCH/mmimport.log"; fail "context frames"; }
sed -e "s|^data_files = .*|data_files = $SCRATCH/mm.h5|" -e "s|= 64$|= 128|" "$SCRATCH/s.cfg" >"$SCRATCH/mm.cfg"
"$TRAINER" train --config "$SCRATCH/mm.cfg" --out "$SCRATCH/mmrun" --max-steps 1 >"$SCRATCH/mmtrain.log" 2>&1 \
  || { cat "$SCRATCH/mmtrain.log"; fail "train mirror-mouse"; }
"$TRAINER" predict --checkpoint "$SCRATCH/mmrun/checkpoints/last.h5" --video "$PROJECT/videos" \
  --video-out "$SCRATCH/mm_preds" >"$SCRATCH/mm.log" 2>&1 || { cat "$SCRATCH/mm.log"; fail "predict test_vid.mp4"; }
tail -1 "$SCRATCH/mm.log"
[[ $(wc -l <"$SCRATCH/mm_preds/test_vid.csv") == 997 ]] || fail "test_vid.csv: 3 header rows + 994 frames"
sed -n 2p "$SCRATCH/mm_preds/test_vid.csv" | grep -q "^bodyparts,paw1LH_top,paw1LH_top,paw1LH_top," || fail "bodyparts"
# heatmap_mhcrnn trains on the imported labels (context from /video_id, /frame_number, /context/*).
sed -e "s|model_type = heatmap|model_type = heatmap_mhcrnn|" "$SCRATCH/mm.cfg" >"$SCRATCH/mmc.cfg"
"$TRAINER" train --config "$SCRATCH/mmc.cfg" --out "$SCRATCH/mmcrun" --max-steps 2 >"$SCRATCH/mmctrain.log" 2>&1 \
  || { cat "$SCRATCH/mmctrain.log"; fail "train heatmap_mhcrnn on mirror-mouse"; }
grep -q "done: 0 epochs, 2 steps" "$SCRATCH/mmctrain.log" || { cat "$SCRATCH/mmctrain.log"; fail "mhcrnn steps"; }
echo "OK"
