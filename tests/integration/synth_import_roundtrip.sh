# trainer synth writes a dataset and the same frames as a DLC project; trainer import
# of that project gives back identical images, keypoints, names and paths.
source "$(dirname "$0")/lib/common.sh"
command -v h5diff >/dev/null || skip "h5diff not installed (hdf5-tools)"

"$TRAINER" synth --help | grep -q -- "--videos" || fail "synth --help lacks --videos"
for channels in 3 1; do
  "$TRAINER" synth --out "$SCRATCH/s$channels.h5" --frames 24 --size 96 --keypoints 11 --seed 5 \
    --channels $channels --export-dir "$SCRATCH/proj$channels"
  "$TRAINER" import --csv "$SCRATCH/proj$channels/CollectedData.csv" --out "$SCRATCH/back$channels.h5"
  for d in /images /keypoints /keypoint_names /frame_paths; do
    h5diff "$SCRATCH/s$channels.h5" "$SCRATCH/back$channels.h5" $d $d || fail "round trip differs in $d (channels $channels)"
  done
done
# The import names its CSV and the CSV's folder of images (root attributes), and a run
# trained from it writes them into config.yaml as lightning-pose's data.csv_file and
# data.data_dir, where lightning-pose's tools look for the labelled frames.
h5dump -a /image_root "$SCRATCH/back3.h5" | grep -q "\"$SCRATCH/proj3\"" || fail "no image_root attribute"
h5dump -a /source "$SCRATCH/back3.h5" | grep -q "\"$SCRATCH/proj3/CollectedData.csv\"" || fail "no source attribute"
"$TRAINER" train --out "$SCRATCH/run" --data.data_files "$SCRATCH/back3.h5" --model.backbone resnet18 \
  --data.image_resize_height 64 --data.image_resize_width 64 --training.train_batch_size 4 --max-steps 1 \
  --training.max_epochs 1 >"$SCRATCH/train.log" 2>&1 || { cat "$SCRATCH/train.log"; fail "train from the import"; }
grep -qxF "  data_dir: $SCRATCH/proj3" "$SCRATCH/run/config.yaml" ||
  { grep -A3 "^data:" "$SCRATCH/run/config.yaml"; fail "config.yaml: data.data_dir is not the CSV's folder"; }
grep -qxF "  csv_file: CollectedData.csv" "$SCRATCH/run/config.yaml" || fail "config.yaml: data.csv_file is not the CSV"
# Deterministic for a seed, different for another seed.
"$TRAINER" synth --out "$SCRATCH/again.h5" --frames 24 --size 96 --keypoints 11 --seed 5
h5diff "$SCRATCH/s3.h5" "$SCRATCH/again.h5" /images /images || fail "same seed gave different frames"
"$TRAINER" synth --out "$SCRATCH/other.h5" --frames 24 --size 96 --keypoints 11 --seed 6
if h5diff -q "$SCRATCH/s3.h5" "$SCRATCH/other.h5" /images /images; then fail "different seeds gave the same frames"; fi
# Videos carry /video_id and /frame_number.
"$TRAINER" synth --out "$SCRATCH/v.h5" --frames 30 --size 64 --videos 3
h5dump -d /video_id "$SCRATCH/v.h5" | grep -q '0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1' || fail "/video_id"
h5dump -d /frame_number -s 10 -c 3 "$SCRATCH/v.h5" | grep -q '0, 1, 2' || fail "/frame_number"
echo "OK"
