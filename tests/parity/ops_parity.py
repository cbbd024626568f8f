#!/usr/bin/python3
"""Compare the CPU backend's ops with PyTorch (1.13, CPU, float32).

Reads the cases that `unit_tests "[parity]"` exported (one folder per case:
meta.txt plus raw float32 tensors), recomputes every output with PyTorch
(autograd for the backward passes; lightning-pose's formulas for the heatmap
ops, written here with torch since kornia is not installed), and checks
    max |ours - torch| / max |torch| < 1e-4
for every output. Prints one line per output; exits 1 on any failure.
Usage: ops_parity.py CASES_DIR
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

TOL = 1e-4
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
    tensors = {}
    for name, shape in shapes.items():
        data = np.fromfile(os.path.join(path, name + ".f32"), dtype="<f4")
        tensors[name] = torch.from_numpy(data.reshape(shape).copy())
    return meta, tensors


def rel(ours, ref):
    ours = ours.double().reshape(-1)
    ref = ref.double().reshape(-1)
    scale = max(ref.abs().max().item(), 1e-12)
    return (ours - ref).abs().max().item() / scale


# ---- references ---------------------------------------------------------------

def ref_conv(m, t):
    x = t["x"].clone().requires_grad_()
    w = t["w"].clone().requires_grad_()
    y = F.conv2d(x, w, stride=int(m["stride"]), padding=int(m["pad"]))
    y.backward(t["dy"])
    return {"y": y, "dx": x.grad, "dw": w.grad}


def ref_deconv(m, t):
    x = t["x"].clone().requires_grad_()
    w = t["w"].clone().requires_grad_()
    b = t["b"].reshape(-1).clone().requires_grad_()
    y = F.conv_transpose2d(x, w, b, stride=int(m["stride"]), padding=int(m["pad"]),
                           output_padding=int(m["output_padding"]))
    y.backward(t["dy"])
    return {"y": y, "dx": x.grad, "dw": w.grad, "db": b.grad}


def ref_bn(m, t, train):
    x = t["x"].clone().requires_grad_()
    g = t["gamma"].reshape(-1).clone().requires_grad_()
    b = t["beta"].reshape(-1).clone().requires_grad_()
    rm = t["running_mean_in"].reshape(-1).clone()
    rv = t["running_var_in"].reshape(-1).clone()
    y = F.batch_norm(x, rm, rv, g, b, training=train, momentum=0.1, eps=1e-5)
    y.backward(t["dy"])
    return {"y": y, "dx": x.grad, "dgamma": g.grad, "dbeta": b.grad,
            "running_mean": rm, "running_var": rv}


def ref_maxpool(m, t):
    x = t["x"].clone().requires_grad_()
    y = F.max_pool2d(x, kernel_size=3, stride=2, padding=1)
    y.backward(t["dy"])
    return {"y": y, "dx": x.grad}


def ref_relu(m, t):
    x = t["x"].clone().requires_grad_()
    y = F.relu(x)
    y.backward(t["dy"])
    return {"y": y, "dx": x.grad}


def ref_pixel_shuffle(m, t):
    x = t["x"].clone().requires_grad_()
    y = F.pixel_shuffle(x, int(m["factor"]))
    y.backward(t["dy"])
    return {"y": y, "dx": x.grad}


def spatial_softmax(x, temperature):
    """kornia spatial_softmax2d: softmax over H*W of x * temperature."""
    n, c, h, w = x.shape
    return F.softmax(x.reshape(n, c, -1) * temperature, dim=-1).reshape(n, c, h, w)


def ref_spatial_softmax(m, t):
    x = t["x"].clone().requires_grad_()
    y = spatial_softmax(x, float(m["temperature"]))
    y.backward(t["dy"])
    return {"y": y, "dx": x.grad}


def ref_heatmap_targets(m, t):
    """lightning-pose generate_heatmaps (zero filler), keypoints already in heatmap pixels."""
    kp = t["keypoints"].reshape(t["targets"].shape[0], t["targets"].shape[1], 2).clone()
    n, k, h, w = t["targets"].shape
    sigma = float(m["sigma"])
    invalid = (torch.isnan(kp[:, :, 0]) | torch.isnan(kp[:, :, 1]) | (kp[:, :, 0] < -1)
               | (kp[:, :, 0] > w + 1) | (kp[:, :, 1] < -1) | (kp[:, :, 1] > h + 1))
    kp = torch.stack([torch.clamp(kp[:, :, 0], -1, w + 1), torch.clamp(kp[:, :, 1], -1, h + 1)], 2)
    yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    xx = xx[None, None].float()
    yy = yy[None, None].float()
    hm = (xx - kp[:, :, 0, None, None]) ** 2 + (yy - kp[:, :, 1, None, None]) ** 2
    hm = torch.exp(-hm / (2 * sigma ** 2))
    hm = hm / hm.sum(dim=(2, 3), keepdim=True)
    hm[invalid] = 0.0
    return {"targets": hm, "mask": (~invalid).float().reshape(-1)}


def kl_2d(p, q):
    """kornia _kl_div_2d(p, q) = sum p log(p / q) over each plane."""
    b, c, h, w = p.shape
    return F.kl_div(q.reshape(b * c, -1).log(), p.reshape(b * c, -1), reduction="none").sum(-1)


def ref_heatmap_loss(m, t):
    """lightning-pose HeatmapMSELoss / HeatmapKLLoss / HeatmapJSLoss, log_weight 0."""
    pred = t["pred"].clone().requires_grad_()
    targ = t["target"]
    n, k, h, w = targ.shape
    keep = ~torch.all(targ.reshape(n, k, -1) == 0.0, dim=-1)
    tv, pv = targ[keep], pred[keep]  # [valid, h, w]
    kind = m["type"]
    if kind == "mse":
        elementwise = F.mse_loss(tv, pv, reduction="none") * h * w
    elif kind == "kl":
        elementwise = kl_2d(tv[None] + 1e-10, pv[None] + 1e-10)
    elif kind == "js":
        p_, q_ = tv[None] + 1e-10, pv[None] + 1e-10
        mix = 0.5 * (p_ + q_)
        elementwise = 0.5 * kl_2d(p_, mix) + 0.5 * kl_2d(q_, mix)
    else:  # a loss registered in src/compute/losses/ needs its reference here
        raise KeyError(f"no PyTorch reference for heatmap loss '{kind}'")
    loss = 0.5 * elementwise.mean()
    loss.backward()
    return {"loss": loss.detach().reshape(1), "dpred": pred.grad}


PYRAMID = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0])
PYRAMID = (PYRAMID[:, None] * PYRAMID[None, :]) / 256.0


def upsample(x):
    """lightning-pose upsample: bicubic x2 (align_corners=False) then the pyramid blur."""
    n, c, h, w = x.shape
    up = F.interpolate(x, size=(2 * h, 2 * w), mode="bicubic", align_corners=False)
    kern = PYRAMID.to(x.dtype)[None, None].repeat(c, 1, 1, 1)
    return F.conv2d(F.pad(up, (2, 2, 2, 2), mode="constant"), kern, groups=c)


def ref_soft_argmax(m, t):
    """lightning-pose run_subpixelmaxima with the exact grid offset (2^d - 1) / 2."""
    d = int(m["downsample_factor"])
    hm = t["heatmaps"]
    for _ in range(d):
        hm = upsample(hm)
    sm = spatial_softmax(hm, float(m["temperature"]))
    n, c, h, w = sm.shape
    xs = torch.arange(w, dtype=sm.dtype)
    ys = torch.arange(h, dtype=sm.dtype)
    ex = (sm.sum(2) * xs).sum(-1)
    ey = (sm.sum(3) * ys).sum(-1)
    preds = torch.stack([ex, ey], -1)  # [n, c, 2]
    # evaluate_heatmaps_at_location: 5x5 window around the truncated location
    pad = 2
    padded = F.pad(sm, (pad, pad, pad, pad))
    conf = torch.zeros(n, c)
    ix = preds[..., 0].long() + pad
    iy = preds[..., 1].long() + pad
    for b in range(n):
        for k in range(c):
            conf[b, k] = padded[b, k, iy[b, k] - 2:iy[b, k] + 3, ix[b, k] - 2:ix[b, k] + 3].sum()
    preds = preds - ((2 ** d) - 1) / 2.0
    return {"coords": preds.reshape(-1), "confidence": conf.reshape(-1)}


def ref_soft_argmax_backward(m, t):
    """Autograd through lightning-pose's run_subpixelmaxima coordinates."""
    hm = t["heatmaps"].clone().requires_grad_(True)
    coords = ref_soft_argmax(m, {"heatmaps": hm})["coords"]
    (coords * t["dcoords"].reshape(-1)).sum().backward()
    return {"dheatmaps": hm.grad}


def ref_adam(m, t):
    p = torch.nn.Parameter(t["p0"].reshape(-1).clone())
    cls = torch.optim.AdamW if int(m["decoupled"]) else torch.optim.Adam
    opt = cls([p], lr=float(m["lr"]), weight_decay=float(m["weight_decay"]))
    grads = t["grads"].reshape(int(m["steps"]), -1)
    for step in range(int(m["steps"])):
        p.grad = grads[step].clone()
        opt.step()
    state = opt.state[p]
    return {"p": p.detach(), "m": state["exp_avg"], "v": state["exp_avg_sq"]}


REFS = {
    "conv": ref_conv,
    "deconv": ref_deconv,
    "bn_train": lambda m, t: ref_bn(m, t, True),
    "bn_eval": lambda m, t: ref_bn(m, t, False),
    "maxpool": ref_maxpool,
    "relu": ref_relu,
    "pixel_shuffle": ref_pixel_shuffle,
    "spatial_softmax": ref_spatial_softmax,
    "heatmap_targets": ref_heatmap_targets,
    "heatmap_loss": ref_heatmap_loss,
    "soft_argmax": ref_soft_argmax,
    "soft_argmax_backward": ref_soft_argmax_backward,
    "adam": ref_adam,
}


def main():
    root = sys.argv[1]
    cases = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not cases:
        print("FAIL: no cases in", root)
        return 1
    failures = 0
    checked = 0
    for case in cases:
        meta, tensors = load_case(os.path.join(root, case))
        ref = REFS[meta["op"]](meta, tensors)
        for name, value in ref.items():
            err = rel(tensors[name], value.detach())
            ok = err < TOL and math.isfinite(err)
            checked += 1
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {case:22s} {name:14s} rel {err:.2e}")
    print(f"{checked - failures}/{checked} outputs within rel {TOL:g} of PyTorch {torch.__version__}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
