#!/usr/bin/python3
"""Compare our unsupervised keypoint losses and PCA fit with lightning-pose's.

Reads the cases that `unit_tests "[parity_unsupervised]"` exported (one folder
per case: meta.txt plus raw .f32 / .f64 tensors) and recomputes them the way
lightning-pose does (lightning_pose/losses/losses.py and utils/pca.py, written
out here since lightning-pose and scikit-learn are not installed):
  temporal_loss  TemporalLoss in torch float64, gradient by autograd;
  pca_loss       PCALoss (KeypointPCA._format_data with its centering_method
                 mean / quantile(q=0.5) for pca_singleview, reproject,
                 compute_reprojection_error, rectify_epsilon, mean) in torch
                 float64 with our fitted tables, gradient by autograd;
  pca_fit        NaNPCA._fit_full (np.nanmean, np.ma.cov, np.linalg.eigh, flip,
                 clipping, sklearn's svd_flip(u_based_decision=False)),
                 ComponentChooser and EmpiricalEpsilon (np.nanpercentile) in
                 numpy float64.
Every value must agree to 1e-5 relative to the reference's largest magnitude
(absolute below 1e-8). Components are compared up to sign only for a row whose
two largest magnitudes tie (where svd_flip's argmax is decided by rounding).
The network-to-frame scale is applied before the loss as in the trainer (which
fits and applies the PCA in frame pixels; see src/train/keypoint_pca.hpp).
Prints one line per output; exits 1 on any failure.
Usage: unsupervised_parity.py CASES_DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

TOL = 1e-5
torch.set_num_threads(1)


def load_case(path):
    meta, shapes = {}, {}
    with open(os.path.join(path, "meta.txt")) as f:
        for line in f:
            key, _, value = line.partition(" = ")
            value = value.strip()
            if key.startswith("shape."):
                shapes[key[6:]] = tuple(int(v) for v in value.split(","))
            else:
                meta[key] = value
    arrays = {}
    for name, shape in shapes.items():
        for ext, dtype in ((".f32", "<f4"), (".f64", "<f8")):
            file = os.path.join(path, name + ext)
            if os.path.exists(file):
                arrays[name] = np.fromfile(file, dtype=dtype).reshape(shape)
    return meta, arrays


def rel(ours, ref):
    ours = np.asarray(ours, dtype=np.float64).reshape(-1)
    ref = np.asarray(ref, dtype=np.float64).reshape(-1)
    if ours.shape != ref.shape:
        return float("inf")
    # NaN (keypoints outside a PCA) must be NaN on both sides; the rest is compared.
    if not np.array_equal(np.isnan(ours), np.isnan(ref)):
        return float("inf")
    ours, ref = ours[~np.isnan(ref)], ref[~np.isnan(ref)]
    scale = max(np.abs(ref).max(initial=0.0), 1e-8 / TOL)
    return float(np.abs(ours - ref).max(initial=0.0) / scale)


def f32(text):
    """A parameter the C++ side held as a float."""
    return float(np.float32(float(text)))


# ---- lightning-pose's data formatting ------------------------------------------

def int_list(text):
    return [int(v) for v in text.split(",")]


def pca_settings(meta):
    s = {"mode": meta["mode"]}
    s["columns"] = int_list(meta["columns"]) if "columns" in meta else None
    if "mirrored_column_matches" in meta:
        s["views"] = [int_list(v) for v in meta["mirrored_column_matches"].split(";")]
    if "components_to_keep_int" in meta:
        s["keep"] = int(meta["components_to_keep_int"])
    else:
        s["keep"] = float(meta["components_to_keep_float"])
    s["percentile"] = float(meta["percentile"])
    s["multiplier"] = float(meta["multiplier"])
    s["epsilon"] = float(meta["epsilon"]) if "epsilon" in meta else None
    s["centering_method"] = meta.get("centering_method")
    return s


def format_data(arr, s):
    """KeypointPCA._format_data on a (batch, 2K) torch tensor or numpy array."""
    is_np = isinstance(arr, np.ndarray)
    t = torch.from_numpy(arr) if is_np else arr
    t = t.reshape(t.shape[0], t.shape[1] // 2, 2)
    if s["mode"] == "singleview":
        if s["columns"] is not None:
            t = t[:, np.array(s["columns"]), :]
        if s["centering_method"] == "mean":
            t = t - t.mean(dim=1, keepdim=True)
        elif s["centering_method"] == "median":
            t = t - t.quantile(dim=1, q=0.5, keepdim=True)
        out = t.reshape(t.shape[0], t.shape[1] * 2)
    else:  # format_multiview_data_for_pca
        views = []
        for v in s["views"]:
            views.append(t[:, np.array(v), :].permute(2, 0, 1).reshape(2, -1))
        out = torch.cat(views, dim=0).T
    return out.numpy() if is_np else out


# ---- references ------------------------------------------------------------------

def ref_temporal(m, a):
    S, K, _ = a["keypoints"].shape
    kp = torch.tensor(a["keypoints"], dtype=torch.float64, requires_grad=True)
    scale = torch.tensor([f32(m["scale_x"]), f32(m["scale_y"])], dtype=torch.float64)
    pred = (kp * scale).reshape(S, 2 * K)  # frame pixels, (batch, 2K) as LP's
    # TemporalLoss.compute_loss
    diffs = torch.diff(pred, dim=0)
    loss = torch.linalg.norm(diffs.reshape(diffs.shape[0], -1, 2), ord=2, dim=2)
    # TemporalLoss.remove_nans (confidence in float32, as LP's tensors)
    if "confidence" in a:
        conf = torch.tensor(a["confidence"], dtype=torch.float32)
        ignore = conf < torch.tensor(float(m["prob_threshold"]), dtype=torch.float32)
        union = torch.logical_or(ignore[:-1], ignore[1:])
        clean = loss.clone()
        clean[union] = 0.0
        loss = clean
    # TemporalLoss.rectify_epsilon, reduce_loss("mean")
    eps = torch.tensor(a["epsilon"], dtype=torch.float64)
    eps = eps.unsqueeze(0).repeat(loss.shape[0], 1)
    value = F.relu(loss - eps).mean()
    value.backward()
    return {"loss": value.detach().numpy(), "dkeypoints": kp.grad.numpy()}


def ref_pca_loss(m, a):
    s = pca_settings(m)
    N, K, _ = a["keypoints"].shape
    kp = torch.tensor(a["keypoints"], dtype=torch.float64, requires_grad=True)
    scale = torch.tensor([f32(m["scale_x"]), f32(m["scale_y"])], dtype=torch.float64)
    pred = (kp * scale).reshape(N, 2 * K)
    data = format_data(pred, s)
    mean = torch.tensor(a["mean"], dtype=torch.float64).unsqueeze(0)
    evecs = torch.tensor(a["components"], dtype=torch.float64)
    # KeypointPCA.reproject and compute_reprojection_error
    reprojection = ((data - mean) @ evecs.T) @ evecs + mean
    diff = data - reprojection
    err = torch.linalg.norm(diff.reshape(diff.shape[0], diff.shape[1] // 2, 2), dim=2)
    value = F.relu(err - float(a["epsilon"][0])).mean()
    value.backward()
    return {"loss": value.detach().numpy(), "dkeypoints": kp.grad.numpy()}


def ref_pca_error(m, a):
    """metrics.py: pca_singleview_reprojection_error / pca_multiview_reprojection_error,
    with our fitted mean and components. With centering the distance is taken in the
    centred frame (lightning-pose compares its uncentred predictions with the centred
    reprojection; see src/train/keypoint_pca.hpp)."""
    s = pca_settings(m)
    kp = a["keypoints"].astype(np.float64)
    N, K, _ = kp.shape
    data = format_data(kp.reshape(N, 2 * K), s)
    mean, evecs = a["mean"], a["components"]
    reproj = ((data - mean) @ evecs.T) @ evecs + mean
    err = np.full((N, K), np.nan)
    if s["mode"] == "singleview":
        cols = s["columns"] if s["columns"] is not None else list(range(K))
        pairs = np.linalg.norm((data - reproj).reshape(N, len(cols), 2), axis=2)
        err[:, cols] = pairs
    else:
        # format_multiview_data_for_pca's rows: row = frame * M + match (M matched
        # keypoints); columns 2v, 2v + 1 are view v's x and y.
        views = s["views"]
        per = np.linalg.norm((data - reproj).reshape(data.shape[0], len(views), 2), axis=2)
        per = per.reshape(N, len(views[0]), len(views))
        for v, cols in enumerate(views):
            for i, col in enumerate(cols):
                err[:, col] = per[:, i, v]
    return {"error": err}


def svd_flip_rows(vt):
    """sklearn.utils.extmath.svd_flip(None, vt, u_based_decision=False)."""
    max_abs_rows = np.argmax(np.abs(vt), axis=1)
    signs = np.sign(vt[np.arange(vt.shape[0]), max_abs_rows])
    return vt * signs[:, np.newaxis]


def choose_components(keep, ratio):
    """ComponentChooser.__call__."""
    if isinstance(keep, int):
        return keep
    if keep != 1.0:
        return int(np.where(np.cumsum(ratio) >= keep)[0][0]) + 1
    return len(ratio)


def ref_pca_fit(m, a):
    s = pca_settings(m)
    labels = a["labels"].astype(np.float64)
    X = format_data(labels.reshape(labels.shape[0], -1), s)
    assert X.shape[0] >= X.shape[1]
    # NaNPCA._fit_full
    mean = np.nanmean(X, axis=0)
    C = np.ma.cov(np.ma.masked_invalid(X), rowvar=False).data
    w, V = np.linalg.eigh(C)
    w = np.flip(w, axis=0).copy()
    V = np.flip(V, axis=1)
    w[w < 0.0] = 0.0
    components = svd_flip_rows(V.T.copy())
    ratio = w / w.sum()
    # KeypointPCA._choose_n_components
    n = 3 if s["mode"] == "multiview" else choose_components(s["keep"], ratio)
    kept = components[:n]
    # compute_reprojection_error on the training rows, EmpiricalEpsilon
    rep = ((X - mean) @ kept.T) @ kept + mean
    diff = X - rep
    err = np.linalg.norm(diff.reshape(diff.shape[0], diff.shape[1] // 2, 2), axis=2)
    empirical = float(np.nanpercentile(err.flatten(), s["percentile"], axis=0))
    eps = s["epsilon"] if s["epsilon"] is not None else empirical * s["multiplier"]
    return {"mean": mean, "components": kept, "explained_variance_ratio": ratio,
            "epsilon": np.array([eps]), "empirical_epsilon": np.array([empirical])}


def compare_components(ours, ref):
    """Row by row; up to sign only where the row's two largest |entries| tie."""
    if ours.shape != ref.shape:
        return float("inf"), 0
    worst, free = 0.0, 0
    for a, b in zip(ours, ref):
        top = np.sort(np.abs(b))[::-1]
        if len(top) > 1 and top[0] - top[1] < 1e-7 * top[0]:
            free += 1
            worst = max(worst, min(np.abs(a - b).max(), np.abs(a + b).max()))
        else:
            worst = max(worst, np.abs(a - b).max())
    return worst, free


REFS = {"temporal_loss": ref_temporal, "pca_loss": ref_pca_loss, "pca_fit": ref_pca_fit,
        "pca_error": ref_pca_error}


def main():
    root = sys.argv[1]
    cases = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not cases:
        print(f"no cases in {root}")
        return 1
    failures = 0
    for name in cases:
        meta, arrays = load_case(os.path.join(root, name))
        ref = REFS[meta["op"]](meta, arrays)
        for key, value in ref.items():
            if key == "components":
                err, free = compare_components(arrays[key], value)
                note = f" ({free} rows up to sign)" if free else ""
            else:
                err, note = rel(arrays[key], value), ""
            ok = err < TOL
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name:36s} {key:26s} rel err {err:.2e}{note}")
        if meta["op"] == "pca_fit":
            ours_kept = arrays["components"].shape[0]
            if ours_kept != ref["components"].shape[0]:
                failures += 1
                print(f"FAIL {name:36s} components kept: ours {ours_kept}, "
                      f"lightning-pose {ref['components'].shape[0]}")
    if not any(c.startswith("fit_mirror_mouse") for c in cases):
        print("SKIP mirror-mouse cases: the labels were not found by the exporter")
    print(f"{len(cases)} cases, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
