# trainer import --dlc-project: a small DeepLabCut project written here (config.yaml,
# labeled-data/<video>/CollectedData_<scorer>.csv, and .h5 twins written by pandas
# when PyTables is at hand) becomes one HDF5 file with a video id per folder. Also:
# the project named by its config.yaml, one video's CSV without --root, a multi-animal
# project (a warning when its individuals are interchangeable), and the hint of
# `train --config` given the project's config.yaml.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import numpy, h5py" 2>/dev/null || skip "needs /usr/bin/python3 with numpy and h5py"
HAVE_PANDAS_H5=1
$PY -c "import pandas, tables" 2>/dev/null || HAVE_PANDAS_H5=0
P="$SCRATCH/proj-alice-2024-01-01"
$PY - "$P" "$HAVE_PANDAS_H5" <<'PY'
import os, struct, sys, zlib
import numpy as np
root, have_h5 = sys.argv[1], sys.argv[2] == "1"
def png(path, img):  # 8-bit grayscale PNG, no dependencies
    h, w = img.shape
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
os.makedirs(root)
with open(f"{root}/config.yaml", "w") as f:
    f.write("Task: proj\nscorer: alice\ndate: Jan1\nmultianimalproject: false\n"
            "video_sets:\n  /videos/vidA.mp4:\n    crop: 0, 64, 0, 48\n"
            "bodyparts:\n- nose\n- tail\nstart: 0\nstop: 1\nnumframes2pick: 20\n")
rng = np.random.default_rng(0)
def frames(video, numbers):
    d = f"{root}/labeled-data/{video}"
    os.makedirs(d, exist_ok=True)
    for n in numbers: png(f"{d}/img{n:04d}.png", rng.integers(0, 255, (48, 64), dtype=np.uint8))
    return d
# vidA: a CSV with DeepLabCut 2.3's three index columns.
d = frames("vidA", [3, 10, 42])
rows = ["scorer,,,alice,alice,alice,alice", "bodyparts,,,nose,nose,tail,tail", "coords,,,x,y,x,y",
        "labeled-data,vidA,img0003.png,10.5,20.5,30,40",
        "labeled-data,vidA,img0010.png,11.5,21.5,,",
        "labeled-data,vidA,img0042.png,12.5,22.5,32,42"]
open(f"{d}/CollectedData_alice.csv", "w").write("\n".join(rows) + "\n")
# vidB and vidD: only the .h5 twin (pandas "table" with a one-level index, "fixed"
# with DeepLabCut's three-level index); written only when PyTables is at hand.
if have_h5:
    import pandas as pd
    cols = pd.MultiIndex.from_product([["alice"], ["nose", "tail"], ["x", "y"]], names=["scorer", "bodyparts", "coords"])
    d = frames("vidB", [7, 8])
    df = pd.DataFrame([[1.25, 2.25, 3.25, 4.25], [5.0, 6.0, np.nan, np.nan]], columns=cols,
                      index=["labeled-data/vidB/img0007.png", "labeled-data/vidB/img0008.png"])
    df.to_hdf(f"{d}/CollectedData_alice.h5", key="df_with_missing", format="table", mode="w")
    d = frames("vidD", [100])
    df = pd.DataFrame([[7.0, 8.0, 9.0, 10.0]], columns=cols,
                      index=pd.MultiIndex.from_tuples([("labeled-data", "vidD", "img0100.png")]))
    df.to_hdf(f"{d}/CollectedData_alice.h5", key="keypoints", mode="w")
# vidC: extracted but not labeled yet.
frames("vidC", [1])
PY

"$TRAINER" import --dlc-project "$P" --out "$SCRATCH/dlc.h5" | tee "$SCRATCH/import.txt"
grep -q "skipped folders without CollectedData_alice.csv/.h5: vidC" "$SCRATCH/import.txt" || fail "vidC not reported"
if [[ $HAVE_PANDAS_H5 == 1 ]]; then
  grep -q "imported 6 frames (48x64x1, 2 keypoints)" "$SCRATCH/import.txt" || fail "import summary"
  grep -q "read from the .h5 label file (no .csv): vidB vidD" "$SCRATCH/import.txt" || fail ".h5 folders not reported"
else
  echo "SKIPPED (part): no pandas+PyTables at /usr/bin/python3: the .h5 label files are not tested"
  grep -q "imported 3 frames (48x64x1, 2 keypoints)" "$SCRATCH/import.txt" || fail "import summary"
fi
$PY - "$SCRATCH/dlc.h5" "$HAVE_PANDAS_H5" <<'PY' || fail "imported values differ"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
have_h5 = sys.argv[2] == "1"
paths = [p.decode() if isinstance(p, bytes) else p for p in f["frame_paths"][:]]
want = ["labeled-data/vidA/img0003.png", "labeled-data/vidA/img0010.png", "labeled-data/vidA/img0042.png"]
vid, num = [0, 0, 0], [3, 10, 42]
kp = [[10.5, 20.5, 30, 40], [11.5, 21.5, np.nan, np.nan], [12.5, 22.5, 32, 42]]
if have_h5:
    want += ["labeled-data/vidB/img0007.png", "labeled-data/vidB/img0008.png", "labeled-data/vidD/img0100.png"]
    vid += [1, 1, 2]; num += [7, 8, 100]
    kp += [[1.25, 2.25, 3.25, 4.25], [5, 6, np.nan, np.nan], [7, 8, 9, 10]]
assert paths == want, paths
assert list(f["video_id"][:]) == vid, f["video_id"][:]
assert list(f["frame_number"][:]) == num, f["frame_number"][:]
got = f["keypoints"][:].reshape(len(want), 4)
assert np.allclose(got, np.array(kp, dtype=np.float32), equal_nan=True), got
names = [n.decode() if isinstance(n, bytes) else n for n in f["keypoint_names"][:]]
assert names == ["nose", "tail"], names
assert f["images"].shape == (len(want), 48, 64, 1)
print("values OK:", len(want), "frames,", len(set(vid)), "videos")
PY

# A single .h5 label file works with --csv too ("fixed" layout: it names its columns).
if [[ $HAVE_PANDAS_H5 == 1 ]]; then
  "$TRAINER" import --csv "$P/labeled-data/vidD/CollectedData_alice.h5" --root "$P" --out "$SCRATCH/d.h5" |
    tee "$SCRATCH/d.txt"
  grep -q "imported 1 frames (48x64x1, 2 keypoints)" "$SCRATCH/d.txt" || fail "--csv of a fixed-layout .h5"
  expect_fail 2 "error: label file .*vidB/CollectedData_alice.h5: its pandas 'table' layout keeps the column names pickled" \
    "$TRAINER" import --csv "$P/labeled-data/vidB/CollectedData_alice.h5" --root "$P" --out "$SCRATCH/b.h5"
  grep -q "hint: import the whole project with --dlc-project" "$SCRATCH/err.txt" || fail "no --dlc-project hint"
fi

# The project's config.yaml names the project as well as its folder does.
"$TRAINER" import --dlc-project "$P/config.yaml" --out "$SCRATCH/by-config.h5" >"$SCRATCH/by-config.txt" ||
  fail "--dlc-project PROJECT/config.yaml"
grep -q "imported .* frames .* from $P " "$SCRATCH/by-config.txt" || { cat "$SCRATCH/by-config.txt"; fail "by config.yaml"; }
# One video's CSV with --csv: its labeled-data/<video>/... paths start at the project,
# found without --root.
"$TRAINER" import --csv "$P/labeled-data/vidA/CollectedData_alice.csv" --out "$SCRATCH/vidA.h5" >"$SCRATCH/vidA.txt" ||
  fail "--csv of a project's labeled-data CSV without --root"
grep -q "imported 3 frames (48x64x1, 2 keypoints)" "$SCRATCH/vidA.txt" || fail "--csv vidA summary"
# A run trained on the project predicts one video's CSV the same way: its images are
# found from the project folder (data.data_dir is not set for a whole-project import).
"$TRAINER" train --data.data_files "$SCRATCH/dlc.h5" --data.image_resize_height 64 \
  --data.image_resize_width 64 --model.backbone resnet18 --training.train_batch_size 2 --max-steps 1 --out "$SCRATCH/dlcrun" >"$SCRATCH/dlcrun.log" 2>&1 ||
  { cat "$SCRATCH/dlcrun.log"; fail "train on the imported project"; }
"$TRAINER" predict "$SCRATCH/dlcrun" "$P/labeled-data/vidA/CollectedData_alice.csv" >"$SCRATCH/dlcpred.log" 2>&1 ||
  { cat "$SCRATCH/dlcpred.log"; fail "predict RUN a project's labeled-data CSV"; }
[[ $(tail -n +4 "$SCRATCH/dlcrun/image_preds/CollectedData_alice.csv/predictions.csv" | wc -l) == 3 ]] ||
  fail "the labeled-data CSV's 3 frames were not predicted"
# Given to train, the project's config.yaml is refused with the import command to run.
expect_fail 2 "is a DeepLabCut project's config.yaml, not a training configuration" \
  "$TRAINER" train --config "$P/config.yaml" --out "$SCRATCH/never"
grep -qF "hint: import the project first: trainer import --dlc-project $P --out data.h5" "$SCRATCH/err.txt" ||
  { cat "$SCRATCH/err.txt"; fail "the hint does not name the project folder"; }

# Multi-animal: individuals become keypoints of their own; without identity: true they
# are interchangeable, and the import says so.
M="$SCRATCH/multi-alice"
mkdir -p "$M/labeled-data/vidA" && cp "$P"/labeled-data/vidA/*.png "$M/labeled-data/vidA/"
printf '%s\n' "scorer: alice" "multianimalproject: true" "identity: false" "individuals:" "- m1" "- m2" \
  "multianimalbodyparts:" "- nose" "uniquebodyparts: []" "bodyparts: MULTI!" >"$M/config.yaml"
printf '%s\n' "scorer,,,alice,alice,alice,alice" "individuals,,,m1,m1,m2,m2" "bodyparts,,,nose,nose,nose,nose" \
  "coords,,,x,y,x,y" "labeled-data,vidA,img0003.png,1,2,3,4" "labeled-data,vidA,img0010.png,5,6,7,8" \
  >"$M/labeled-data/vidA/CollectedData_alice.csv"
"$TRAINER" import --dlc-project "$M" --out "$SCRATCH/multi.h5" >"$SCRATCH/multi.txt" 2>"$SCRATCH/multi.err" ||
  { cat "$SCRATCH/multi.err"; fail "multi-animal import"; }
grep -q "imported 2 frames (48x64x1, 2 keypoints)" "$SCRATCH/multi.txt" || fail "multi-animal summary"
grep -q "^warning: .*multi-animal project without \`identity: true\`: its individuals are interchangeable" \
  "$SCRATCH/multi.err" || { cat "$SCRATCH/multi.err"; fail "no warning for interchangeable individuals"; }
sed -i 's/^identity: false/identity: true/' "$M/config.yaml"
rm "$SCRATCH/multi.h5"
"$TRAINER" import --dlc-project "$M" --out "$SCRATCH/multi.h5" >"$SCRATCH/multi.txt" 2>"$SCRATCH/multi.err" ||
  fail "multi-animal import with identity: true"
! grep -q "interchangeable" "$SCRATCH/multi.err" || fail "identity: true still warned"

# Errors: exit 2 with the cause.
expect_fail 2 "error: .*has no config.yaml" "$TRAINER" import --dlc-project "$SCRATCH" --out "$SCRATCH/x.h5"
expect_fail 2 "error: import: give --csv or --dlc-project, not both" \
  "$TRAINER" import --dlc-project "$P" --csv "$P/x.csv" --out "$SCRATCH/x.h5"
sed -i 's/^scorer: alice/scorer: bob/' "$P/config.yaml"
expect_fail 2 "error: .*has no CollectedData_bob.csv \(or .h5\)" "$TRAINER" import --dlc-project "$P" --out "$SCRATCH/x.h5"
sed -i 's/^scorer: bob/scorer: alice/; s/^- tail/- tailbase/' "$P/config.yaml"
expect_fail 2 "error: .*bodyparts \(nose, tail\) differ" "$TRAINER" import --dlc-project "$P" --out "$SCRATCH/x.h5"
[[ ! -e $SCRATCH/x.h5 ]] || fail "a failed import left x.h5"
echo "OK"
