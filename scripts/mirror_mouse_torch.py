#!/usr/bin/env python3
"""The PyTorch side of the GPU-speed issue's mirror-mouse goal: a plain PyTorch training
loop of lightning-pose's heatmap model on lightning-pose's mirror-mouse example, on the
split a trainer run wrote, timed as a whole process, for the device check's step 10.

    python3 scripts/mirror_mouse_torch.py --frames FRAMES.npz --split RUN/split.csv \\
        [--epochs 300] [--size 128] [--batch 16] [--backbone resnet18] [--device cuda]
    python3 scripts/mirror_mouse_torch.py --write-frames FRAMES.npz --data DATA.h5 [--frame-size 128]

The second form (scripts/bundle.sh, on the build machine: it needs h5py) writes the
frames of a `trainer import` HDF5 file resized to --frame-size (bilinear, as
F.interpolate), with their keypoints, original sizes and paths: 1 MB for the
example, where its PNGs would take 5 MB of the 45 MiB device kit. --split is the
trainer's split.csv (index, frame_path, set), so both sides train, validate and test
on the same frames. The loop is what the trainer runs with
`--model.backbone resnet18 --data.image_resize_height/width 128 --training.imgaug default
--training.unfreezing_epoch 0` and inputs/mirror-mouse.cfg's other settings: random
initialisation, frames resized to size x size, ImageNet normalisation, Gaussian target
heatmaps (sigma 1.25) at size / 4, the masked heatmap MSE (0.5 x the mean over labelled
keypoints), Adam 1e-3 with MultiStepLR [150, 200, 250] x 0.5, batches of 16 in a new
order every epoch (the last one short), validation every 10 epochs. It is the fastest
such loop: the frames were resized once, when the .npz was written, and go to the
device once, before the first epoch, with no augmentation (the trainer decodes and
resizes every frame of every epoch, as lightning-pose does). At the end it prints the mean Euclidean error of
soft-argmax keypoints (temperature 1000) in original-frame pixels on each set, and
`wall N s` for the whole process (imports included) on its last line.
"""
import argparse
import csv
import math
import os
import sys
import time

START = time.perf_counter()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_to_torch import HeatmapNet  # noqa: E402

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def write_frames(path, data, frame_size):
    import h5py  # only here: the device has torch, not h5py
    import numpy as np
    with h5py.File(data, "r") as f:
        images = torch.from_numpy(f["images"][()]).float()  # [N, H, W, 1] uint8 -> float
        keypoints = f["keypoints"][()].astype(np.float32)
        paths = np.array([p.decode() if isinstance(p, bytes) else p for p in f["frame_paths"][()]])
    n, h, w, _ = images.shape
    small = F.interpolate(images.permute(0, 3, 1, 2), size=(frame_size, frame_size), mode="bilinear",
                          align_corners=False)[:, 0].round().clamp(0, 255).to(torch.uint8).numpy()
    np.savez_compressed(path, images=small, keypoints=keypoints, frame_width=w, frame_height=h, paths=paths)
    print(f"wrote {path}: {n} frames {h}x{w} -> {frame_size}x{frame_size}")


def read_split(path):
    with open(path, newline="") as f:
        return [(r["frame_path"], r["set"]) for r in csv.DictReader(f)]


def load_frames(frames, paths, size, device):
    """Images [N, 3, size, size] normalised on `device`; keypoints [N, K, 2] in input
    pixels; each frame's (x, y) scale back to the original frame."""
    import numpy as np
    index = {str(p): i for i, p in enumerate(frames["paths"])}
    rows = [index[p] for p in paths]
    img = torch.from_numpy(np.asarray(frames["images"])[rows]).float()[:, None] / 255.0  # [N, 1, S, S]
    if img.shape[-1] != size:
        img = F.interpolate(img, size=(size, size), mode="bilinear", align_corners=False)
    w, h = float(frames["frame_width"]), float(frames["frame_height"])
    keypoints = torch.from_numpy(np.asarray(frames["keypoints"])[rows]) * torch.tensor([size / w, size / h])
    scales = torch.tensor([w / size, h / size]).expand(len(rows), 2)
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    x = (img.expand(-1, 3, -1, -1) - mean) / std
    return x.to(device), keypoints.to(device), scales.to(device)


def gaussian_targets(keypoints_hm, h, w, sigma=1.25):
    """Targets [N, K, h, w] summing to 1, and the mask [N, K] of labelled keypoints."""
    ys = torch.arange(h, device=keypoints_hm.device, dtype=torch.float32).view(1, 1, h, 1)
    xs = torch.arange(w, device=keypoints_hm.device, dtype=torch.float32).view(1, 1, 1, w)
    x = keypoints_hm[..., 0].unsqueeze(-1).unsqueeze(-1)
    y = keypoints_hm[..., 1].unsqueeze(-1).unsqueeze(-1)
    mask = ~(torch.isnan(keypoints_hm).any(-1))
    g = torch.exp(-((xs - torch.nan_to_num(x)) ** 2 + (ys - torch.nan_to_num(y)) ** 2) / (2 * sigma ** 2))
    g = g / g.sum(dim=(2, 3), keepdim=True).clamp_min(1e-30)
    return g * mask[..., None, None], mask.float()


def heatmap_loss(heatmaps, targets, mask):
    per_keypoint = ((heatmaps - targets) ** 2).sum(dim=(2, 3))
    return 0.5 * (per_keypoint * mask).sum() / mask.sum().clamp_min(1)


def soft_argmax(heatmaps, temperature=1000.0):
    """Keypoints [N, K, 2] in heatmap pixels from softmax-normalised heatmaps."""
    n, k, h, w = heatmaps.shape
    p = torch.softmax(heatmaps.reshape(n, k, h * w) * temperature, dim=-1).reshape(n, k, h, w)
    xs = torch.arange(w, device=heatmaps.device, dtype=heatmaps.dtype)
    ys = torch.arange(h, device=heatmaps.device, dtype=heatmaps.dtype)
    return torch.stack([(p.sum(2) * xs).sum(-1), (p.sum(3) * ys).sum(-1)], dim=-1)


def pixel_error(net, x, kp, scale, stride, batch):
    """Mean Euclidean error in original-frame pixels over the labelled keypoints."""
    net.eval()
    errors = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            pred = soft_argmax(net(x[i:i + batch])) * stride
            d = (pred - kp[i:i + batch]) * scale[i:i + batch, None, :]
            e = d.norm(dim=-1)
            errors.append(e[~torch.isnan(e)])
    net.train()
    e = torch.cat(errors)
    return e.mean().item() if len(e) else math.nan


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", help="the frames .npz (--write-frames)")
    parser.add_argument("--split", help="the trainer run's split.csv")
    parser.add_argument("--write-frames", metavar="NPZ", help="write the frames of --data to NPZ and stop")
    parser.add_argument("--data", help="with --write-frames: a `trainer import` HDF5 file")
    parser.add_argument("--frame-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--backbone", default="resnet18")
    parser.add_argument("--val-every", type=int, default=10)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=44)
    args = parser.parse_args()
    if args.write_frames:
        if not args.data:
            parser.error("--write-frames needs --data")
        return write_frames(args.write_frames, args.data, args.frame_size)
    if not args.frames or not args.split:
        parser.error("--frames and --split are required")
    import numpy as np
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    frames = np.load(args.frames)
    split = read_split(args.split)
    sets = {}
    for name in ("train", "val", "test"):
        paths = [p for p, s in split if s == name]
        if paths:
            sets[name] = load_frames(frames, paths, args.size, device)
    print(f"split from {args.split}: " + ", ".join(f"{len(sets[s][0])} {s}" for s in sets))
    stride = 4  # downsample factor 2
    net = HeatmapNet(args.backbone, frames["keypoints"].shape[1], 2).to(device).train()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[150, 200, 250], gamma=0.5)
    x, kp, _ = sets["train"]
    hm = args.size // stride
    targets, mask = gaussian_targets(kp / stride, hm, hm)
    loop_start = time.perf_counter()
    for epoch in range(args.epochs):
        order = torch.randperm(len(x), device=device)
        for i in range(0, len(x), args.batch):
            b = order[i:i + args.batch]
            optimizer.zero_grad(set_to_none=True)
            loss = heatmap_loss(net(x[b]), targets[b], mask[b])
            loss.backward()
            optimizer.step()
        scheduler.step()
        if "val" in sets and ((epoch + 1) % args.val_every == 0 or epoch + 1 == args.epochs):
            vx, vkp, _ = sets["val"]
            vt, vm = gaussian_targets(vkp / stride, hm, hm)
            net.eval()
            with torch.no_grad():
                val_loss = heatmap_loss(net(vx), vt, vm).item()
            net.train()
            print(f"epoch {epoch} loss {loss.item():.6f} val_loss {val_loss:.6f} ({time.perf_counter() - START:.1f} s)")
    if device.type == "cuda":
        torch.cuda.synchronize()
    loop_s = time.perf_counter() - loop_start
    errors = {s: pixel_error(net, *sets[s], stride, args.batch) for s in sets}
    print("mean euclidean px: " + ", ".join(f"{s} {e:.2f}" for s, e in errors.items()))
    print(f"training loop {loop_s:.1f} s ({args.epochs} epochs)")
    print(f"wall {time.perf_counter() - START:.1f} s")


if __name__ == "__main__":
    main()
