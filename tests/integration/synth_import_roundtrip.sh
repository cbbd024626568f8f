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
