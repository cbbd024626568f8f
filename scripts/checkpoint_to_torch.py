#!/usr/bin/env python3
"""Load a trainer checkpoint (HDF5) into an equivalent PyTorch module.

    from checkpoint_to_torch import load_checkpoint
    net = load_checkpoint("outputs/.../checkpoints/best.h5")   # HeatmapNet, eval mode
    heatmaps = net(images)                                     # [N, K, H/2^d, W/2^d], each sums to 1

or from the shell, to check a file and optionally save a torch state_dict:

    /usr/bin/python3 scripts/checkpoint_to_torch.py best.h5 [--save model.pt]

The module is torchvision's ResNet cut before avgpool/fc, or its EfficientNet's
`features` (as `backbone`), and the
heatmap head (PixelShuffle(2) + ConvTranspose2d layers as `head.deconv<i>`), ending
in a spatial softmax; names and layouts are exactly the checkpoint's /model
datasets (docs/MODEL.md), so load_state_dict(strict=True) succeeds.
Needs torch, torchvision and h5py (Debian: python3-torch python3-torchvision python3-h5py).
"""
import argparse
from collections import OrderedDict

import h5py
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch import nn


class HeatmapHead(nn.Module):
    """PixelShuffle(2), then n = 5 - d - 1 ConvTranspose2d(k3, s2, p1, op1) layers."""

    def __init__(self, in_channels, num_keypoints, downsample_factor):
        super().__init__()
        self.num_deconvs = 5 - downsample_factor - 1
        channels = in_channels // 4
        for i in range(self.num_deconvs):
            setattr(self, f"deconv{i}", nn.ConvTranspose2d(channels, num_keypoints, kernel_size=3, stride=2,
                                                           padding=1, output_padding=1))
            channels = num_keypoints

    def forward(self, x):
        x = F.pixel_shuffle(x, 2)
        for i in range(self.num_deconvs):
            x = getattr(self, f"deconv{i}")(x)
        return x


class HeatmapNet(nn.Module):
    def __init__(self, backbone, num_keypoints, downsample_factor):
        super().__init__()
        base = getattr(torchvision.models, backbone)()
        # Everything before avgpool and fc (ResNet) or classifier (EfficientNet: its
        # `features`), keeping torchvision's child names.
        self.backbone = nn.Sequential(OrderedDict(
            (name, module) for name, module in base.named_children() if name not in ("avgpool", "fc", "classifier")))
        channels = base.classifier[-1].in_features if backbone.startswith("efficientnet") else base.fc.in_features
        self.head = HeatmapHead(channels, num_keypoints, downsample_factor)

    def logits(self, images):
        return self.head(self.backbone(images))

    def forward(self, images):
        x = self.logits(images)
        n, k, h, w = x.shape
        return torch.softmax(x.reshape(n, k, h * w), dim=-1).reshape(n, k, h, w)


def read_state_dict(path):
    """The /model group as a state_dict of torch tensors."""
    state = OrderedDict()
    with h5py.File(path, "r") as f:
        group = f["model"]
        for name in group:
            state[name] = torch.from_numpy(np.array(group[name][()]))
    return state


def describe(path):
    """(backbone, num_keypoints, downsample_factor) from /state, or inferred from the tensors."""
    with h5py.File(path, "r") as f:
        attrs = f["state"].attrs if "state" in f else {}
        backbone = attrs.get("backbone", b"")
        backbone = backbone.decode() if isinstance(backbone, bytes) else str(backbone)
        model = f["model"]
        if not backbone:
            backbone = "resnet50" if "backbone.layer1.0.conv3.weight" in model else (
                "resnet34" if "backbone.layer1.2.conv1.weight" in model else "resnet18")
        keypoints = model["head.deconv0.weight"].shape[1]
        deconvs = sum(1 for name in model if name.startswith("head.deconv") and name.endswith(".weight"))
    return backbone, keypoints, 5 - 1 - deconvs


def load_checkpoint(path, train=False):
    backbone, keypoints, d = describe(path)
    net = HeatmapNet(backbone, keypoints, d)
    net.load_state_dict(read_state_dict(path), strict=True)
    net.train(train)
    return net


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint")
    parser.add_argument("--save", help="also write the state_dict with torch.save")
    args = parser.parse_args()
    net = load_checkpoint(args.checkpoint)
    backbone, keypoints, d = describe(args.checkpoint)
    print(f"loaded {args.checkpoint}: {backbone}, {keypoints} keypoints, downsample {d}, "
          f"{sum(p.numel() for p in net.parameters())} parameters")
    if args.save:
        torch.save(net.state_dict(), args.save)
        print(f"saved {args.save}")


if __name__ == "__main__":
    main()
