#!/usr/bin/env python3
"""Parity of the context head's multi-frame branch (lightning-pose UpsamplingCRNN,
upsampling_factor 2 for stride-32 backbones, 1 for stride-16 ones) with PyTorch.
Called by tests/unit/model/test_mhcrnn_parity.cpp as `mhcrnn_parity.py DIR`:
DIR/meta.txt holds "K C B F h w [factor]" (factor 2 when absent), DIR/param_<name>.bin
our parameters (float32, PyTorch layout), features.bin [B*F, C, h, w] (row b*F+f)
and dlogits.bin. The module below is a small re-implementation of lightning-pose's
UpsamplingCRNN (same submodule names, shapes and computation); it runs in float64
and writes names.txt (its state_dict names and shapes, without the `layers.*`
aliases), logits.bin, dfeatures.bin and grad_<name>.bin for the C++ side to
compare. Exit 77 when torch is missing.
"""
import os
import sys

import numpy as np

try:
    import torch
    from torch import nn
except ImportError:
    print("SKIPPED: torch is not installed for", sys.executable)
    sys.exit(77)


class CRNN(nn.Module):
    def __init__(self, in_channels, k, factor=2, nf=16):
        super().__init__()
        self.factor = factor
        self.pixel_shuffle = nn.PixelShuffle(2)

        def up(i, o):
            return nn.ConvTranspose2d(i, o, 3, stride=2, padding=1, output_padding=1)

        def hidden():
            return nn.Sequential(
                nn.Conv2d(k, k * nf, 2, stride=2, padding=0, groups=k),
                nn.ConvTranspose2d(k * nf, k, 2, stride=2, padding=0, output_padding=0, groups=k))

        rnn_inputs = k if factor == 2 else in_channels // 4
        if factor == 2:
            self.W_pre = up(in_channels // 4, k)
        self.W_f = up(rnn_inputs, k)
        self.H_f = hidden()
        self.W_b = up(rnn_inputs, k)
        self.H_b = hidden()

    def forward(self, feats, frames):  # feats [B*F, C, h, w], row b*F+f
        x = self.pixel_shuffle(feats)
        if self.factor == 2:
            x = self.W_pre(x)
        x = x.reshape(-1, frames, *x.shape[1:]).permute(1, 0, 2, 3, 4)  # [F, B, ...]
        s = self.W_f(x[0])
        for xt in x[1:]:
            s = self.W_f(xt) + self.H_f(s)
        xb = torch.flip(x, dims=[0])
        sb = self.W_b(xb[0])
        for xt in xb[1:]:
            sb = self.W_b(xt) + self.H_b(sb)
        return (s + sb) / 2  # logits; the model applies the spatial softmax


def load(path, shape):
    return torch.from_numpy(np.fromfile(path, dtype=np.float32).astype(np.float64).reshape(shape))


def main():
    d = sys.argv[1]
    meta = [int(v) for v in open(os.path.join(d, "meta.txt")).read().split()]
    k, c, b, f, h, w = meta[:6]
    factor = meta[6] if len(meta) > 6 else 2
    m = CRNN(c, k, factor).double()
    with open(os.path.join(d, "names.txt"), "w") as out:
        for name, p in m.state_dict().items():
            out.write(name + " " + " ".join(str(s) for s in p.shape) + "\n")
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(load(os.path.join(d, "param_" + name + ".bin"), p.shape))
    feats = load(os.path.join(d, "features.bin"), (b * f, c, h, w)).requires_grad_(True)
    logits = m(feats, f)
    dlogits = load(os.path.join(d, "dlogits.bin"), logits.shape)
    logits.backward(dlogits)
    logits.detach().numpy().astype(np.float32).tofile(os.path.join(d, "logits.bin"))
    feats.grad.numpy().astype(np.float32).tofile(os.path.join(d, "dfeatures.bin"))
    for name, p in m.named_parameters():
        p.grad.numpy().astype(np.float32).tofile(os.path.join(d, "grad_" + name + ".bin"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
