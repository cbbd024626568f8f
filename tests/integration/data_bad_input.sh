# Bad input through the command line: every case exits 2 with an error naming the
# file (and line or dataset), never a crash.
source "$(dirname "$0")/lib/common.sh"
S=$SCRATCH

# import: missing CSV, wrong columns, non-numeric cell, duplicate path, missing image.
expect_fail 2 "error: cannot open label file $S/none.csv" "$TRAINER" import --csv "$S/none.csv" --out "$S/o.h5"
expect_fail 2 "error: import: --out is required" "$TRAINER" import --csv "$S/none.csv"
"$TRAINER" synth --out "$S/s.h5" --frames 4 --size 64 --keypoints 2 --export-dir "$S/p" >/dev/null
csv="$S/p/CollectedData.csv"
cp "$csv" "$S/p/good.csv"
sed '5s/,[^,]*$//' "$S/p/good.csv" >"$csv"
expect_fail 2 "CollectedData.csv:5: expected 5 columns, found 4" "$TRAINER" import --csv "$csv" --out "$S/o.h5"
sed '6s/,[^,]*$/,oops/' "$S/p/good.csv" >"$csv"
expect_fail 2 "CollectedData.csv:6: column 5 \(ear_left y\): 'oops' is not a number" "$TRAINER" import --csv "$csv" --out "$S/o.h5"
{ cat "$S/p/good.csv"; sed -n '4p' "$S/p/good.csv"; } >"$csv"
expect_fail 2 "CollectedData.csv:8: duplicate frame path labeled-data/img00000.png \(first at line 4\)" \
  "$TRAINER" import --csv "$csv" --out "$S/o.h5"
cp "$S/p/good.csv" "$csv"
rm "$S/p/labeled-data/img00002.png"
expect_fail 2 "CollectedData.csv:6: image file .*img00002.png not found" "$TRAINER" import --csv "$csv" --out "$S/o.h5"
[[ ! -e $S/o.h5 ]] || fail "a failed import left $S/o.h5 behind"
ls "$S" | grep -q 'tmp-' && fail "a failed import left a temporary file"
# Frames of different sizes: an error naming both, unless --resize.
"$TRAINER" synth --out "$S/big.h5" --frames 3 --size 80 --keypoints 2 --export-dir "$S/big" >/dev/null
cp "$S/big/labeled-data/img00001.png" "$S/p/labeled-data/img00002.png"
expect_fail 2 "frames differ in size: labeled-data/img00000.png is 64x64 but labeled-data/img00002.png .*is 80x80" \
  "$TRAINER" import --csv "$csv" --out "$S/o.h5"
"$TRAINER" import --csv "$csv" --out "$S/o.h5" --resize 64x64 >/dev/null || fail "--resize did not fix mixed sizes"
expect_fail 2 "--resize '64' is not HxW" "$TRAINER" import --csv "$csv" --out "$S/o.h5" --resize 64
echo "not an image" >"$S/p/labeled-data/img00001.png"
expect_fail 2 "CollectedData.csv:5: cannot decode image" "$TRAINER" import --csv "$csv" --out "$S/o2.h5"

# Dataset files: missing, not HDF5, truncated (read through `bench loader --data`).
expect_fail 2 "error: cannot open data file $S/missing.h5: no such file" \
  "$TRAINER" bench loader --data "$S/missing.h5" --workers 0 --seconds 0.1
echo "hello" >"$S/text.h5"
expect_fail 2 "error: data file $S/text.h5 is not an HDF5 file" "$TRAINER" bench loader --data "$S/text.h5" --workers 0 --seconds 0.1
"$TRAINER" synth --out "$S/cut.h5" --frames 40 --size 64 >/dev/null
truncate -s 40000 "$S/cut.h5"
expect_fail 2 "error: .*$S/cut.h5.*(truncated or damaged)" "$TRAINER" bench loader --data "$S/cut.h5" --workers 2 --seconds 0.1
# synth: bad options.
expect_fail 2 "synth: --keypoints must be between 1 and 15" "$TRAINER" synth --out "$S/x.h5" --keypoints 40
expect_fail 2 "synth: --out FILE is required" "$TRAINER" synth
expect_fail 2 "imgaug = 'heavy' is not supported" "$TRAINER" bench loader --imgaug heavy --workers 0
expect_fail 2 "^error: bench loader: --channels is 1 or 3" \
  "$TRAINER" bench loader --unlabeled "$S/missing.mp4" --channels 2 --workers 1
# A video after training that cannot be read is refused at the start, not after the
# whole training: exit 2 naming it, and no run folder.
mkdir -p "$S/badvids" && echo junk >"$S/badvids/x.mp4"
expect_fail 2 "^error: eval.test_videos_directory: .*x.mp4" "$TRAINER" train --data.data_files "$S/s.h5" \
  --data.image_resize_height 64 --data.image_resize_width 64 --training.train_batch_size 2 --max-steps 1 \
  --eval.test_videos_directory "$S/badvids" --out "$S/badvid-run"
[[ ! -e $S/badvid-run ]] || fail "the refused run left $S/badvid-run behind"
echo "OK"
