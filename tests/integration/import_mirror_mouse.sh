# trainer import of the mirror-mouse example project; h5dump -H shows the schema.
source "$(dirname "$0")/lib/common.sh"
PROJECT="$(shared_data)/mirror-mouse-example"
[[ -f $PROJECT/CollectedData.csv ]] || skip "$PROJECT/CollectedData.csv not found (set TRAINER_SHARED_DATA)"
command -v h5dump >/dev/null || skip "h5dump not installed (hdf5-tools)"

"$TRAINER" import --help | grep -q -- "--resize" || fail "import --help lacks --resize"
"$TRAINER" import --csv "$PROJECT/CollectedData.csv" --out "$SCRATCH/mm.h5" | tee "$SCRATCH/import.txt"
grep -q "imported 90 frames (406x396x1, 17 keypoints)" "$SCRATCH/import.txt" || fail "unexpected import summary"
h5dump -H "$SCRATCH/mm.h5" >"$SCRATCH/schema.txt"
cat "$SCRATCH/schema.txt"
grep -A2 'DATASET "images"' "$SCRATCH/schema.txt" | grep -q 'H5T_STD_U8LE' || fail "/images is not uint8"
grep -A2 'DATASET "images"' "$SCRATCH/schema.txt" | grep -q '( 90, 406, 396, 1 )' || fail "/images shape"
grep -A2 'DATASET "keypoints"' "$SCRATCH/schema.txt" | grep -q 'H5T_IEEE_F32LE' || fail "/keypoints is not float32"
grep -A2 'DATASET "keypoints"' "$SCRATCH/schema.txt" | grep -q '( 90, 17, 2 )' || fail "/keypoints shape"
grep -A8 'DATASET "keypoint_names"' "$SCRATCH/schema.txt" | grep -q '( 17 )' || fail "/keypoint_names"
grep -A8 'DATASET "frame_paths"' "$SCRATCH/schema.txt" | grep -q '( 90 )' || fail "/frame_paths"
for attr in format_version creator source; do
  grep -q "ATTRIBUTE \"$attr\"" "$SCRATCH/schema.txt" || fail "root attribute $attr missing"
done
# One frame per chunk.
h5dump -p -H -d /images "$SCRATCH/mm.h5" | grep -q 'CHUNKED ( 1, 406, 396, 1 )' || fail "/images is not chunked per frame"
# Values: the first frame path and the first keypoint of the CSV.
h5dump -d /frame_paths -s 0 -c 1 "$SCRATCH/mm.h5" | grep -q '"labeled-data/img01.png"' || fail "first frame path"
h5dump -d /keypoints -s 0,0,0 -c 1,1,2 "$SCRATCH/mm.h5" | grep -q '77.25, 36.25' || fail "first keypoint"

# --resize scales frames and keypoints together.
"$TRAINER" import --csv "$PROJECT/CollectedData.csv" --out "$SCRATCH/mm256.h5" --resize 203x198 --deflate 4
h5dump -H "$SCRATCH/mm256.h5" | grep -A2 'DATASET "images"' | grep -q '( 90, 203, 198, 1 )' || fail "resized shape"
h5dump -d /keypoints -s 0,0,0 -c 1,1,2 "$SCRATCH/mm256.h5" | grep -q '38.625, 18.125' || fail "resized keypoint"
# The loader reads it (bench loader opens and streams the file).
"$TRAINER" bench loader --data "$SCRATCH/mm.h5" --workers 0,2 --seconds 0.5 --height 128 --width 128 --batch 8
echo "OK"
