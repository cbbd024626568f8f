#!/usr/bin/env python3
"""Whole-model parity with PyTorch: `trainer bench step --export DIR` writes the
initial weights (initial.h5), the batch, our loss and gradients (batch.h5) and the
weights and Adam moments after one step (after.h5). This script rebuilds the same
computation in PyTorch (scripts/checkpoint_to_torch.py) and compares:
  1. checkpoint names and shapes == torchvision's ResNet state_dict (minus fc) or
     EfficientNet state_dict (minus classifier) + head
  2. the loss (lightning-pose MSE heatmap loss on Gaussian targets)
  3. every parameter's gradient
  4. one Adam step: parameters, exp_avg, exp_avg_sq, BN running statistics
Errors are ||x - exact|| / ||exact|| per tensor, where "exact" is PyTorch in float64.
A tensor passes when our error is below 1e-4, or below 3x PyTorch's own float32
error on it: deep networks at initialization (ResNet-50) have gradients whose
float32 rounding error exceeds 1e-4 in any implementation (PyTorch's included),
and that is the honest bar there. Exit code 0 = all pass, 1 = a mismatch.

--relu-flips (ResNet-50): float32 forward rounding (~1e-5 relative, ours and
PyTorch's alike) moves a few pre-activations that are ~1e-5 from zero across zero,
which flips their ReLU mask and changes the gradient of everything upstream by the
dropped/added term (0.3-2 % per tensor). Which tensors get hit is a matter of luck
for each implementation, so a per-tensor "3x PyTorch float32" bar is unfair there.
In that mode a tensor passes at max(1e-4, 3x PyTorch float32, 5 %), and the mean
error over all tensors of each kind must stay within max(1e-4, 3x PyTorch float32's
mean): a real bug (wrong formula, aliased buffer) shows up as a broad or large error.
"""
import os
import sys

import h5py
import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from checkpoint_to_torch import describe, load_checkpoint  # noqa: E402

LIMIT = 1e-4
failures = []


def norm(x):
    return float(np.linalg.norm(np.asarray(x, dtype=np.float64).ravel()))


def rel(x, exact):
    x = np.asarray(x, dtype=np.float64)
    exact = np.asarray(exact, dtype=np.float64)
    d = norm(exact)
    return norm(x - exact) / d if d > 0 else norm(x)


def gaussian_targets(keypoints_hm, h, w, sigma=1.25):
    """Documented heatmap_targets: Gaussian at (x, y) in heatmap pixels, sum 1; NaN or
    outside [-1, W+1] x [-1, H+1] -> all zero, mask 0."""
    n, k, _ = keypoints_hm.shape
    t = np.zeros((n, k, h, w), dtype=np.float64)
    mask = np.zeros((n, k))
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    for i in range(n):
        for j in range(k):
            x, y = keypoints_hm[i, j]
            if np.isnan(x) or np.isnan(y) or x < -1 or x > w + 1 or y < -1 or y > h + 1:
                continue
            g = np.exp(-((cols - x) ** 2 + (rows - y) ** 2) / (2 * sigma ** 2))
            t[i, j] = g / g.sum()
            mask[i, j] = 1
    return t, mask


class FixedRowScale(torch.nn.Module):
    """torchvision's StochasticDepth("row") with the draws the trainer made."""

    def __init__(self, factors):
        super().__init__()
        self.factors = factors

    def forward(self, x):
        return x * self.factors.to(x.dtype).reshape(-1, *([1] * (x.dim() - 1)))


def run_torch(initial, images, kp, dtype, draws):
    """Loss, gradients, and the state after one Adam step, in `dtype`. draws: the
    EfficientNets' stochastic depth factors per residual block ({} for a ResNet)."""
    net = load_checkpoint(initial, train=True).to(dtype)
    for name, factors in draws.items():  # backbone.features.<stage>.<block>
        _, _, stage, block = name.split(".")
        net.backbone.features[int(stage)][int(block)].stochastic_depth = FixedRowScale(torch.from_numpy(factors))
    x = torch.from_numpy(images).to(dtype)
    heatmaps = net(x)
    n, k, h, w = heatmaps.shape
    t, m = gaussian_targets(kp * np.array([w / images.shape[3], h / images.shape[2]]), h, w)
    t = torch.from_numpy(t).to(dtype)
    m = torch.from_numpy(m).to(dtype)
    loss = 0.5 * (((heatmaps - t) ** 2).sum(dim=(2, 3)) * m).sum() / m.sum()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    optimizer.zero_grad()
    loss.backward()
    out = {"loss": loss.item(), "grad": {}, "param": {}, "exp_avg": {}, "exp_avg_sq": {}, "buffer": {}, "count": {}}
    for name, p in net.named_parameters():
        out["grad"][name] = p.grad.double().numpy().copy()
    optimizer.step()
    for name, p in net.named_parameters():
        out["param"][name] = p.detach().double().numpy().copy()
        out["exp_avg"][name] = optimizer.state[p]["exp_avg"].double().numpy().copy()
        out["exp_avg_sq"][name] = optimizer.state[p]["exp_avg_sq"].double().numpy().copy()
    for name, value in net.state_dict().items():
        if "running" in name:
            out["buffer"][name] = value.double().numpy().copy()
        elif name.endswith("num_batches_tracked"):
            out["count"][name] = int(value)
    return out


FLIP_CAP = 0.05  # per-tensor cap under --relu-flips


def main(export_dir, relu_flips=False, gradients_only=False):
    # --gradients-only: the project's rule for parity (gradients per tensor, and the
    # batch norms' running statistics); the Adam step's parameters and moments are
    # printed only. A first Adam step moves every parameter by about lr * sign(grad),
    # so a gradient that is rounding noise (a bias behind a shift-invariant batch norm,
    # a squeeze-excitation bias on a 2x2 feature map) flips a whole step's sign.
    informational = ("exp_avg", "exp_avg_sq", "param") if gradients_only else ()
    initial = os.path.join(export_dir, "initial.h5")
    after = os.path.join(export_dir, "after.h5")
    backbone, keypoints, d = describe(initial)

    # 1. names and shapes
    with h5py.File(initial, "r") as f:
        shapes = {name: tuple(f["model"][name].shape) for name in f["model"]}
    tv = getattr(torchvision.models, backbone)().state_dict()
    expected = {"backbone." + k: tuple(v.shape) for k, v in tv.items()
                if not k.startswith("fc.") and not k.startswith("classifier.")}
    head = {k: v for k, v in shapes.items() if k.startswith("head.")}
    missing = sorted(set(expected) - set(shapes))
    extra = sorted(set(shapes) - set(expected) - set(head))
    shape_diff = sorted(k for k in expected if k in shapes and shapes[k] != expected[k])
    print(f"names: {len(expected)} torchvision backbone keys, {len(head)} head keys; "
          f"missing {len(missing)}, extra {len(extra)}, shape mismatches {len(shape_diff)}")
    if missing or extra or shape_diff:
        failures.append(f"state_dict names differ: missing {missing[:5]} extra {extra[:5]} shapes {shape_diff[:5]}")

    with h5py.File(os.path.join(export_dir, "batch.h5"), "r") as f:
        images = np.array(f["images"])
        kp = np.array(f["keypoints"], dtype=np.float64)
        ours = {"loss": float(np.array(f["loss"])[0]), "grad": {n: np.array(f["grad"][n]) for n in f["grad"]}}
        draws = {n: np.array(f["stochastic_depth"][n]) for n in f["stochastic_depth"]} if "stochastic_depth" in f else {}
    if backbone.startswith("efficientnet"):
        print(f"stochastic depth: {len(draws)} blocks, {sum(int((v == 0).sum()) for v in draws.values())} "
              f"of {sum(v.size for v in draws.values())} samples dropped")
        if not draws:
            failures.append("no stochastic depth draws exported for an EfficientNet")
    with h5py.File(after, "r") as f:
        for kind, group in (("param", "model"), ("exp_avg", "optimizer/exp_avg"), ("exp_avg_sq", "optimizer/exp_avg_sq")):
            ours[kind] = {n: np.array(f[group][n]) for n in ours["grad"]}
        ours["buffer"] = {n: np.array(f["model"][n]) for n in f["model"] if "running" in n}
        ours["count"] = {n: int(np.array(f["model"][n])) for n in f["model"] if n.endswith("num_batches_tracked")}

    exact = run_torch(initial, images, kp, torch.float64, draws)
    t32 = run_torch(initial, images, kp, torch.float32, draws)

    # 2. loss
    loss_rel = abs(ours["loss"] - exact["loss"]) / abs(exact["loss"])
    print(f"loss: ours {ours['loss']:.9g} torch64 {exact['loss']:.9g} rel {loss_rel:.2e}")
    if loss_rel > LIMIT:
        failures.append(f"loss rel {loss_rel:.3g}")

    # 3 and 4. The last deconvolution's bias feeds the spatial softmax, which is
    # invariant to a per-channel shift: its gradient is zero in exact arithmetic and
    # rounding noise on both sides; it is compared absolutely (scaled by all tensors).
    zero_grad = f"head.deconv{5 - d - 2}.bias"
    for kind in ("grad", "exp_avg", "exp_avg_sq", "param", "buffer"):
        worst = (0.0, 0.0, "")
        errs, errs32 = [], []
        scale = np.sqrt(sum(norm(v) ** 2 for v in exact[kind].values()))
        for name, ref in exact[kind].items():
            mine = ours[kind][name]
            # Zero in exact arithmetic, rounding noise on both sides: the last bias, and in
            # the EfficientNets the batch norms whose outputs reach the loss only through
            # another convolution and batch norm (shift-invariant in train mode: their
            # biases' gradients, and the running means behind a zero-mean input).
            if name == zero_grad or norm(ref) <= 1e-9 * scale:
                if norm(mine - ref) > LIMIT * scale:
                    failures.append(f"{kind} {name}: |diff| {norm(mine - ref):.3g} > {LIMIT} x {scale:.3g}")
                continue
            err, err32 = rel(mine, ref), rel(t32[kind][name], ref)
            worst = max(worst, (err, err32, name))
            errs.append(err)
            errs32.append(err32)
            if kind in informational:
                continue
            if err > max(LIMIT, 3 * err32, FLIP_CAP if relu_flips else 0.0):
                failures.append(f"{kind} {name}: error {err:.3g} (PyTorch float32: {err32:.3g})")
        mean, mean32 = float(np.mean(errs)), float(np.mean(errs32))
        note = " (shown, not enforced: --gradients-only)" if kind in informational else ""
        print(f"{kind:10s}{note}: worst error {worst[0]:.2e} ({worst[2]}; PyTorch float32 there: {worst[1]:.2e}); "
              f"mean {mean:.2e} (PyTorch float32: {mean32:.2e})")
        if relu_flips and kind not in informational and mean > max(LIMIT, 3 * mean32):
            failures.append(f"{kind}: mean error {mean:.3g} > 3x PyTorch float32's {mean32:.3g}")
    for name, count in exact["count"].items():
        if ours["count"].get(name) != count:
            failures.append(f"{name}: ours {ours['count'].get(name)} torch {count}")

    if failures:
        print("FAILED:")
        for line in failures[:30]:
            print("  " + line)
        return 1
    print(f"PASSED: {backbone}, {keypoints} keypoints, d = {d}")
    return 0


if __name__ == "__main__":
    # --relu-flips: per-tensor bar tolerant of ReLU mask flips (ResNet-50, see above
    # and docs/MODEL.md).
    sys.exit(main(sys.argv[1], "--relu-flips" in sys.argv[2:], "--gradients-only" in sys.argv[2:]))
