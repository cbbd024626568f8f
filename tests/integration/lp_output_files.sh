# lightning-pose's output files after training, read as its users read them:
# predictions.csv with pandas.read_csv(header=[0, 1, 2], index_col=0) (scorer
# heatmap_tracker, bodyparts, coords x/y/likelihood, a `set` column with train,
# validation, test, unused as split.csv says), predictions_pixel_error.csv (index_col=0:
# one column per keypoint, the Euclidean error against the labels, plus `set`), and
# metrics.csv's val_pixel_error_px = sqrt(2) x val_rmse_px, and with
# data.columns_for_singleview_pca predictions_pca_singleview_error.csv (metrics.py's
# PCA reprojection error per keypoint, empty outside the PCA, plus `set`), recomputed
# here with lightning-pose's NaNPCA fit on the training split's labels. The run's config.ini holds
# absolute paths, so predict works from another directory; predicting other data
# leaves the set column out.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import pandas, h5py, numpy" 2>/dev/null || skip "pandas, h5py or numpy missing for $PY"
cd "$SCRATCH"
"$TRAINER" synth --out data/small.h5 --frames 40 --size 64 --keypoints 3 --seed 1 >/dev/null || fail "synth"
"$TRAINER" synth --out data/other.h5 --frames 12 --size 64 --keypoints 3 --seed 2 >/dev/null || fail "synth other"
cat >small.cfg <<CFG
[data]
data_files = data/small.h5
image_resize_height = 64
image_resize_width = 64
columns_for_singleview_pca = [0, 2]
[training]
imgaug = none
train_batch_size = 8
val_batch_size = 8
max_epochs = 1
train_prob = 0.6
val_prob = 0.2
train_frames = 0.5
check_val_every_n_epoch = 1
num_workers = 1
[model]
backbone = resnet18
CFG
"$TRAINER" train --config small.cfg --out run >train.log 2>&1 || { cat train.log; fail "train"; }
grep -q "validation: loss .* pixel error .* px  RMSE .* px" train.log || { cat train.log; fail "no pixel error in the validation line"; }
grep -q "^data_files = \[/" run/config.ini || { grep data_files run/config.ini; fail "config.ini holds a relative data path"; }
$PY - run data/small.h5 <<'PY' || fail "the output files differ from lightning-pose's layout"
import sys, math, numpy as np, pandas as pd, h5py
run, data = sys.argv[1], sys.argv[2]
preds = pd.read_csv(f"{run}/predictions.csv", header=[0, 1, 2], index_col=0)
assert list(preds.columns.names) == ["scorer", "bodyparts", "coords"], preds.columns.names
with h5py.File(data, "r") as f:
    names = [n.decode() if isinstance(n, bytes) else n for n in f["keypoint_names"][()]]
    labels = np.asarray(f["keypoints"][()], dtype=np.float64).reshape(len(preds), -1, 2)
    paths = [p.decode() if isinstance(p, bytes) else p for p in f["frame_paths"][()]]
want = pd.MultiIndex.from_product([["heatmap_tracker"], names, ["x", "y", "likelihood"]])
assert list(preds.columns[:-1]) == list(want), preds.columns[:6]
assert preds.columns[-1][0] == "set", preds.columns[-1]
assert list(preds.index) == paths
split = pd.read_csv(f"{run}/split.csv", index_col=0)
sets = preds[preds.columns[-1]].tolist()
expect = [{"val": "validation"}.get(s, s) for s in split["set"]]
assert sets == expect, (sets, expect)
assert set(sets) == {"train", "validation", "test", "unused"}, set(sets)   # train_frames = 0.5 leaves some unused
err = pd.read_csv(f"{run}/predictions_pixel_error.csv", index_col=0)
assert list(err.columns) == names + ["set"], err.columns
assert err["set"].tolist() == sets and list(err.index) == paths
xy = preds[preds.columns[:-1]].to_numpy().reshape(len(preds), -1, 3)[:, :, :2]
euclid = np.linalg.norm(xy - labels, axis=2)           # lightning-pose's metrics.pixel_error
got = err[names].to_numpy()
assert np.allclose(got, euclid, atol=2e-3, equal_nan=True), np.nanmax(np.abs(got - euclid))
pca_err = pd.read_csv(f"{run}/predictions_pca_singleview_error.csv", index_col=0)
assert list(pca_err.columns) == names + ["set"], pca_err.columns
assert pca_err["set"].tolist() == sets and list(pca_err.index) == paths
assert pca_err[names[1]].isna().all(), "keypoint 1 is outside the PCA: its column must be empty"
# KeypointPCA (NaNPCA, components_to_keep 0.95) on the train split, then
# pca_singleview_reprojection_error on the predictions.
cols = [0, 2]
X = labels[np.array([s == "train" for s in sets])][:, cols, :].reshape(-1, 2 * len(cols))
mean = np.nanmean(X, axis=0)
w, V = np.linalg.eigh(np.ma.cov(np.ma.masked_invalid(X), rowvar=False).data)
w, V = np.flip(w), np.flip(V, axis=1)
w[w < 0] = 0
n = int(np.where(np.cumsum(w / w.sum()) >= 0.95)[0][0]) + 1
evecs = V.T[:n]
P = xy[:, cols, :].reshape(len(xy), -1)
reproj = ((P - mean) @ evecs.T) @ evecs + mean
ref = np.linalg.norm((P - reproj).reshape(len(P), len(cols), 2), axis=2)
got_pca = pca_err[[names[c] for c in cols]].to_numpy()
assert np.allclose(got_pca, ref, atol=2e-3), np.abs(got_pca - ref).max()
print(f"predictions_pca_singleview_error.csv: {n} of {2 * len(cols)} components, "
      f"mean {np.mean(got_pca):.3f} px, matches lightning-pose's metric")
m = pd.read_csv(f"{run}/metrics.csv")
ep = m[m.train_loss.notna() & m.val_rmse_px.notna()]
assert len(ep) == 1 and math.isclose(ep.val_pixel_error_px.iloc[0], math.sqrt(2) * ep.val_rmse_px.iloc[0], rel_tol=1e-5)
print(f"predictions.csv and predictions_pixel_error.csv: {len(preds)} frames, sets {sorted(set(sets))}, "
      f"mean pixel error {np.nanmean(got):.2f} px")
PY
# From another directory: the run's absolute paths find the data.
mkdir -p elsewhere && (cd elsewhere && "$TRAINER" predict --checkpoint ../run/checkpoints/best.h5 --out p.csv >p.log 2>&1) ||
  { cat elsewhere/p.log; fail "predict from another directory"; }
[[ -s elsewhere/p_pixel_error.csv ]] || fail "predict wrote no pixel error file beside its --out"
# Other data than the training data: no set column.
"$TRAINER" predict --checkpoint run/checkpoints/best.h5 --data.data_files data/other.h5 --out other.csv >other.log 2>&1 ||
  { cat other.log; fail "predict on other data"; }
head -n 1 other.csv | grep -q ",set$" && fail "predictions on data the model was not trained on have a set column"
$PY -c "import pandas as pd; d = pd.read_csv('other.csv', header=[0,1,2], index_col=0); assert d.shape == (12, 9), d.shape" ||
  fail "other.csv layout"
echo "PASSED"
