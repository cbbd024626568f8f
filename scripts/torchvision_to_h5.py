#!/usr/bin/env python3
"""Convert torchvision ResNet weights to an HDF5 file for `trainer train --init-weights`.

    /usr/bin/python3 scripts/torchvision_to_h5.py --arch resnet50 --out resnet50_imagenet.h5
    /usr/bin/python3 scripts/torchvision_to_h5.py --arch resnet18 --weights resnet18-f37072fd.pth --out r18.h5

Every entry of the ResNet's state_dict except fc.* is written as
/model/backbone.<key> (float32, PyTorch layout; num_batches_tracked as int64),
the names the trainer's checkpoints use. --weights takes a local .pth file (e.g.
from torchvision's download cache, ~/.cache/torch/hub/checkpoints/); without it,
torchvision's pretrained weights are requested (needs network access), or
--random writes a freshly initialized network (for tests).
"""
import argparse

import h5py
import numpy as np
import torch
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="resnet50", choices=["resnet18", "resnet34", "resnet50"])
    parser.add_argument("--weights", help="local .pth state_dict (torchvision's file)")
    parser.add_argument("--random", action="store_true", help="random initialization instead of pretrained")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    net = getattr(torchvision.models, args.arch)()
    if args.weights:
        net.load_state_dict(torch.load(args.weights, map_location="cpu"))
    elif not args.random:
        net = getattr(torchvision.models, args.arch)(pretrained=True)
    count = 0
    with h5py.File(args.out, "w") as f:
        group = f.create_group("model")
        for key, value in net.state_dict().items():
            if key.startswith("fc."):
                continue
            array = value.detach().cpu().numpy()
            if array.dtype != np.int64:
                array = array.astype(np.float32)
            group.create_dataset("backbone." + key, data=array)
            count += 1
    print(f"wrote {count} tensors of {args.arch} to {args.out}")


if __name__ == "__main__":
    main()
