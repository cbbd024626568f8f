#!/usr/bin/env python3
"""Training images/s of PyTorch (Debian's torch 1.13, CPU) on the same model, batch,
input size and thread count as `trainer bench step`, run in the same session, and
the ratio trainer / PyTorch.

    /usr/bin/python3 scripts/bench_step_torch.py --trainer build/trainer \
        --backbone resnet18 --size 128 --batch 16 --threads 2

--backbone vits_dino compares the ViT-S/16 model, vitb_sam SAM's ViT-B image encoder,
vitt_sam2 / vits_sam2 / vitb_sam2 SAM 2.1's Hiera encoders. Debian's PyTorch does its matrix
products through the system BLAS: with Debian's reference BLAS they are about 25x
slower than with OpenBLAS (libopenblas0-pthread, which scripts/setup.sh's test mode
installs), so the script prints which one torch loaded.

The PyTorch step is what lightning-pose does per batch: forward (ResNet + heatmap
head + spatial softmax), MSE heatmap loss, backward, Adam step. Both sides run the
same number of warm-up and timed steps; the two runs alternate `--rounds` times so a
busy machine hurts both alike, and the best round of each is reported, in wall time
and in process CPU time (on a shared machine the latter measures the work).
"""
import argparse
import os
import re
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_to_torch import HeatmapNet  # noqa: E402
from bench_gpu_torch import HieraHeatmapModel, SamHeatmapModel, ViTHeatmapModel  # noqa: E402


def make_net(args):
    """lightning-pose's heatmap model with the ResNet (checkpoint_to_torch) or, for
    vits_dino, the ViT-S/16 that the GPU comparison uses (bench_gpu_torch)."""
    if args.backbone in ("vits_dino", "vitb_sam") or args.backbone in HieraHeatmapModel.SPECS:
        if args.downsample != 2:
            sys.exit(f"error: --backbone {args.backbone} is compared at --downsample 2 only")
        if args.backbone in HieraHeatmapModel.SPECS:
            return HieraHeatmapModel(args.backbone, args.keypoints)
        return ViTHeatmapModel(args.keypoints) if args.backbone == "vits_dino" else SamHeatmapModel(args.keypoints, args.size)
    return HeatmapNet(args.backbone, args.keypoints, args.downsample)


def torch_images_per_s(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    net = make_net(args).train()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(args.batch, 3, args.size, args.size)
    h = args.size >> args.downsample
    target = torch.softmax(torch.randn(args.batch, args.keypoints, h * h), -1).reshape(args.batch, args.keypoints, h, h)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = 0.5 * ((net(x) - target) ** 2).sum(dim=(2, 3)).mean()
        loss.backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(args.steps):
        step()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return args.batch * args.steps / wall, args.batch * args.steps / cpu


def trainer_images_per_s(args):
    cmd = [args.trainer, "bench", "step", "--backbone", args.backbone, "--size", str(args.size), "--batch",
           str(args.batch), "--keypoints", str(args.keypoints), "--downsample", str(args.downsample), "--steps",
           str(args.steps), "--warmup", str(args.warmup), "--threads", str(args.threads)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return (float(re.search(r"trainer: ([0-9.]+) images/s", out).group(1)),
            float(re.search(r"trainer: ([0-9.]+) images per CPU-second", out).group(1)))


def loaded_blas():
    """The BLAS library mapped into this process (torch links the system libblas.so.3)."""
    try:
        with open("/proc/self/maps") as maps:
            names = {line.split()[-1] for line in maps if "blas" in line.split()[-1].lower()}
    except OSError:
        return "unknown"
    return ", ".join(sorted(os.path.realpath(n) for n in names)) or "none found"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trainer", default="build/trainer")
    parser.add_argument("--backbone", default="resnet18")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--keypoints", type=int, default=17)
    parser.add_argument("--downsample", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"PyTorch's BLAS: {loaded_blas()}")
    ours, theirs = [], []
    for r in range(args.rounds):
        ours.append(trainer_images_per_s(args))
        theirs.append(torch_images_per_s(args))
        print(f"round {r + 1}: trainer {ours[-1][0]:.2f} images/s ({ours[-1][1]:.2f} per CPU-s), "
              f"PyTorch {torch.__version__} {theirs[-1][0]:.2f} images/s ({theirs[-1][1]:.2f} per CPU-s)")
    best = lambda runs, i: max(run[i] for run in runs)  # noqa: E731
    print(f"{args.backbone} {args.size}x{args.size} batch {args.batch}, {args.threads} threads:")
    print(f"  wall:     trainer {best(ours, 0):.2f} images/s, PyTorch {best(theirs, 0):.2f} images/s, "
          f"ratio {best(ours, 0) / best(theirs, 0):.2f}")
    print(f"  CPU time: trainer {best(ours, 1):.2f} images/CPU-s, PyTorch {best(theirs, 1):.2f} images/CPU-s, "
          f"ratio {best(ours, 1) / best(theirs, 1):.2f}  (set OMP_WAIT_POLICY=passive; see docs/PERFORMANCE.md)")


if __name__ == "__main__":
    main()
