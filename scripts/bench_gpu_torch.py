#!/usr/bin/env python3
"""PyTorch reference timings for the GPU comparison (issue: the GPU path).

Trains the lightning-pose heatmap model (ResNet-50 backbone, PixelShuffle +
2 ConvTranspose2d head, spatial softmax, heatmap MSE loss, Adam) on random
256x256 frames and prints training images/s for

  eager-fp32         PyTorch defaults (cuDNN may use TF32 for convolutions)
  eager-fp32-notf32  TF32 off everywhere (the trainer's fp32 parity setting)
  amp-bf16-cl        torch.autocast(bfloat16) with channels_last
  compiled-bf16-cl   torch.compile of the former (PyTorch >= 2, --compile)

at batch 16 (lightning-pose's default) and 64, plus the measured bf16 matrix-
product rate and each run's model FLOP utilization (MFU) against it.

With --trainer-cmd it also runs our trainer for each (batch, precision) and
prints the ratios: precision 32 against eager fp32 with TF32 off, 32 with
--float32-matmul-precision high (TF32) against PyTorch's eager default (TF32
convolutions), bf16-mixed against the best bf16 mode. The command is a template
with {batch} and {precision}; the last number before "images/s" in its output is used:

  /usr/bin/python3 scripts/bench_gpu_torch.py \\
      --trainer-cmd 'build/trainer bench step --accelerator gpu --backbone resnet50 --size 256 \\
                     --batch {batch} --precision {precision} --steps 50 --warmup 10'

With --inference it also times prediction: the forward pass without gradients,
then lightning-pose's subpixel maxima (bicubic x2 and the 5x5 pyramid blur per
upsampling, softmax at temperature 1000, the expectation) and the keypoints copied to
the host, in fp32 (TF32 on and off) and bf16 channels_last. --trainer-predict-cmd
(a template like --trainer-cmd, e.g. `trainer bench step --mode predict ...`) then
prints the trainer's prediction rate against them.

Without a GPU it prints "SKIPPED: no GPU visible" and exits 77, unless
--device cpu is given (a smoke test of the script itself with tiny sizes).
"""
import argparse
import json
import re
import shlex
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    import torchvision
except ImportError:  # pragma: no cover
    torchvision = None


class HeatmapModel(nn.Module):
    """lightning-pose HeatmapTracker with a ResNet-50 backbone, downsample_factor 2."""

    def __init__(self, num_keypoints=17):
        super().__init__()
        resnet = torchvision.models.resnet50(weights=None) if hasattr(
            torchvision.models, "ResNet50_Weights") else torchvision.models.resnet50(pretrained=False)
        self.backbone = nn.Sequential(*list(resnet.children())[:-2])  # drop avgpool and fc
        in_channels = 2048 // 4  # after PixelShuffle(2)
        self.head = nn.Sequential(
            nn.PixelShuffle(2),
            nn.ConvTranspose2d(in_channels, num_keypoints, 3, stride=2, padding=1, output_padding=1),
            nn.ConvTranspose2d(num_keypoints, num_keypoints, 3, stride=2, padding=1, output_padding=1),
        )

    def forward(self, x):
        h = self.head(self.backbone(x))
        n, k, hh, ww = h.shape
        return F.softmax(h.reshape(n, k, hh * ww), dim=-1).reshape(n, k, hh, ww)


class ViTBlock(nn.Module):
    """One pre-norm ViT layer as Hugging Face's ViTLayer computes it, attention through
    F.scaled_dot_product_attention (flash / memory-efficient kernels under autocast, as
    transformers' "sdpa" attention does) where this PyTorch has it."""

    def __init__(self, width, heads, mlp):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width, eps=1e-12)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width, eps=1e-12)
        self.fc1 = nn.Linear(width, mlp)
        self.fc2 = nn.Linear(mlp, width)

    def forward(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if hasattr(F, "scaled_dot_product_attention"):
            a = F.scaled_dot_product_attention(q, k, v)
        else:  # PyTorch < 2.0 (the CPU smoke test on Debian's 1.13)
            a = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(n, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViTSmall(nn.Module):
    """The ViT-S/16 encoder of lightning-pose's vits_dino (Hugging Face's ViTModel of
    facebook/dino-vits16: pre-norm layers, exact GELU, LayerNorm eps 1e-12, a CLS token,
    14x14 position embeddings resized bicubically to the image's patch grid on every
    forward) in plain PyTorch."""

    def __init__(self, width=384, heads=6, mlp=1536, layers=12, patch=16, grid=14):
        super().__init__()
        self.width, self.patch, self.grid = width, patch, grid
        self.patch_embed = nn.Conv2d(3, width, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.pos = nn.Parameter(torch.randn(1, 1 + grid * grid, width) * 0.02)
        self.layers = nn.ModuleList(ViTBlock(width, heads, mlp) for _ in range(layers))
        self.norm = nn.LayerNorm(width, eps=1e-12)

    def forward(self, x):
        n, _, h, w = x.shape
        gh, gw = h // self.patch, w // self.patch
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)
        grid = self.pos[:, 1:].reshape(1, self.grid, self.grid, self.width).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", align_corners=False)
        pos = torch.cat([self.pos[:, :1], grid.permute(0, 2, 3, 1).reshape(1, gh * gw, self.width)], dim=1)
        h_ = torch.cat([self.cls.expand(n, -1, -1), tokens], dim=1) + pos
        for layer in self.layers:
            h_ = layer(h_)
        h_ = self.norm(h_)
        return h_[:, 1:].transpose(1, 2).reshape(n, self.width, gh, gw)


class ViTHeatmapModel(nn.Module):
    """lightning-pose HeatmapTracker with vits_dino, downsample_factor 2: stride-16
    features, PixelShuffle(2) and one ConvTranspose2d (log2(16) - 2 - 1 = 1 layer)."""

    def __init__(self, num_keypoints=17):
        super().__init__()
        self.backbone = ViTSmall()
        self.head = nn.Sequential(
            nn.PixelShuffle(2),
            nn.ConvTranspose2d(384 // 4, num_keypoints, 3, stride=2, padding=1, output_padding=1),
        )

    def forward(self, x):
        h = self.head(self.backbone(x))
        n, k, hh, ww = h.shape
        return F.softmax(h.reshape(n, k, hh * ww), dim=-1).reshape(n, k, hh, ww)


def attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v)
    return torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1) @ v  # PyTorch < 2.0


class SamBlock(nn.Module):
    """One SamVisionLayer of facebook/sam-vit-base as lightning-pose runs it (no relative
    position terms): pre-norm (eps 1e-6), attention over the whole grid (window 0) or
    within window x window squares of the grid zero-padded at the bottom and right (the
    padded windows projected, as transformers does), SDPA where this PyTorch has it."""

    def __init__(self, width, heads, mlp, window):
        super().__init__()
        self.heads, self.window, self.attention_flops = heads, window, 0
        self.norm1 = nn.LayerNorm(width, eps=1e-6)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width, eps=1e-6)
        self.lin1 = nn.Linear(width, mlp)
        self.lin2 = nn.Linear(mlp, width)

    def forward(self, x):  # [n, h, w, d]
        n, h, w, d = x.shape
        y, ws = self.norm1(x), self.window
        if ws:
            hp, wp = h + (-h) % ws, w + (-w) % ws
            y = F.pad(y, (0, 0, 0, wp - w, 0, hp - h))
            y = y.reshape(n, hp // ws, ws, wp // ws, ws, d).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, d)
        else:
            y = y.reshape(n, h * w, d)
        b, t, _ = y.shape
        q, k, v = self.qkv(y).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = self.proj(attention(q, k, v).transpose(1, 2).reshape(b, t, d))
        self.attention_flops = 4 * b * t * t * d
        if ws:
            y = y.reshape(n, hp // ws, wp // ws, ws, ws, d).permute(0, 1, 3, 2, 4, 5).reshape(n, hp, wp, d)
            y = y[:, :h, :w]
        x = x + y.reshape(n, h, w, d)
        return x + self.lin2(F.gelu(self.lin1(self.norm2(x))))


class SamHeatmapModel(nn.Module):
    """lightning-pose HeatmapTracker with vitb_sam, downsample_factor 2: SAM's ViT-B image
    encoder (a position table [1, H/16, W/16, 768], windows of 14, global attention in
    layers 2, 5, 8, 11, no neck), PixelShuffle(2) and one ConvTranspose2d."""

    def __init__(self, num_keypoints=17, size=256, width=768, heads=12, mlp=3072, layers=12):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, width, 16, stride=16)
        self.pos = nn.Parameter(torch.randn(1, size // 16, size // 16, width) * 0.02)
        self.layers = nn.ModuleList(SamBlock(width, heads, mlp, 0 if i in (2, 5, 8, 11) else 14)
                                    for i in range(layers))
        self.head = nn.Sequential(
            nn.PixelShuffle(2),
            nn.ConvTranspose2d(width // 4, num_keypoints, 3, stride=2, padding=1, output_padding=1),
        )

    def forward(self, x):
        h = self.patch_embed(x).permute(0, 2, 3, 1) + self.pos
        for layer in self.layers:
            h = layer(h)
        h = self.head(h.permute(0, 3, 1, 2))
        n, k, hh, ww = h.shape
        return F.softmax(h.reshape(n, k, hh * ww), dim=-1).reshape(n, k, hh, ww)


def pad_windows(x, ws):
    """[N, H, W, C] zero-padded at the bottom and right to multiples of ws, cut into
    [N * windows, ws, ws, C] (SAM2's window_partition)."""
    n, h, w, c = x.shape
    hp, wp = -(-h // ws) * ws, -(-w // ws) * ws
    x = F.pad(x, (0, 0, 0, wp - w, 0, hp - h))
    return x.reshape(n, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws, ws, c), (hp, wp)


def unpad_windows(x, ws, padded, size, n):
    hp, wp = padded
    x = x.reshape(n, hp // ws, wp // ws, ws, ws, -1).permute(0, 1, 3, 2, 4, 5).reshape(n, hp, wp, -1)
    return x[:, :size[0], :size[1]]


def pool2(x):
    """max_pool2d(2, 2) of [N, H, W, C] (Hiera's do_pool)."""
    return F.max_pool2d(x.permute(0, 3, 1, 2), 2, 2).permute(0, 2, 3, 1)


class HieraBlock(nn.Module):
    """One Sam2MultiScaleBlock of transformers' Sam2HieraDetModel: pre-norm (eps 1e-6);
    attention within windows of the grid zero-padded at the bottom and right (window 0:
    global), the queries max-pooled 2x2 in the first block of stages 1-3, whose residual
    is max_pool(proj(LN(x))); SDPA where this PyTorch has it."""

    def __init__(self, dim, dim_out, heads, window, pool):
        super().__init__()
        self.heads, self.window, self.pool = heads, window, pool
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.qkv = nn.Linear(dim, 3 * dim_out)
        self.attn_proj = nn.Linear(dim_out, dim_out)
        self.norm2 = nn.LayerNorm(dim_out, eps=1e-6)
        self.fc1 = nn.Linear(dim_out, 4 * dim_out)
        self.fc2 = nn.Linear(4 * dim_out, dim_out)
        self.proj = nn.Linear(dim, dim_out) if dim != dim_out else None

    def forward(self, x):
        n, h, w, _ = x.shape
        y = self.norm1(x)
        residual = x if self.proj is None else self.proj(y)
        if self.pool:
            residual = pool2(residual)
        ws = self.window
        if ws:
            y, padded = pad_windows(y, ws)
        b, hh, ww, _ = y.shape
        q, k, v = self.qkv(y).reshape(b, hh * ww, 3, self.heads, -1).unbind(2)
        if self.pool:
            q = pool2(q.reshape(b, hh, ww, -1))
            hh, ww = q.shape[1:3]
            q = q.reshape(b, hh * ww, self.heads, -1)
        self.attention_flops = 4 * b * q.shape[1] * k.shape[1] * q.shape[2] * q.shape[3]
        o = attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)
        o = self.attn_proj(o.reshape(b, hh, ww, -1))
        if ws:
            out_ws = ws // 2 if self.pool else ws
            size = residual.shape[1:3]
            o = unpad_windows(o, out_ws, (-(-size[0] // out_ws) * out_ws, -(-size[1] // out_ws) * out_ws), size, n)
        x = residual + o
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class HieraHeatmapModel(nn.Module):
    """lightning-pose HeatmapTracker with a SAM 2.1 Hiera backbone (vitt_sam2, vits_sam2,
    vitb_sam2), downsample_factor 2: the stride-32 head, PixelShuffle(2) and two
    ConvTranspose2d through the keypoints' channels (deconv_out_channels unset), as for
    the ResNet model above."""

    SPECS = {"vitt_sam2": ([96, 192, 384, 768], [1, 2, 4, 8], [1, 2, 7, 2], [5, 7, 9], 7),
             "vits_sam2": ([96, 192, 384, 768], [1, 2, 4, 8], [1, 2, 11, 2], [7, 10, 13], 7),
             "vitb_sam2": ([112, 224, 448, 896], [2, 4, 8, 16], [2, 3, 16, 3], [12, 16, 20], 14)}

    def __init__(self, backbone, num_keypoints=17):
        super().__init__()
        dims, heads, blocks, global_blocks, background = self.SPECS[backbone]
        windows = [8, 4, 14, 7]
        self.patch_embed = nn.Conv2d(3, dims[0], 7, stride=4, padding=3)
        self.pos_embed = nn.Parameter(torch.randn(1, dims[0], background, background) * 0.02)
        self.pos_embed_window = nn.Parameter(torch.randn(1, dims[0], 8, 8) * 0.02)
        layers, index = [], 0
        for stage, count in enumerate(blocks):
            for j in range(count):
                first = stage > 0 and j == 0
                window = 0 if index in global_blocks else windows[stage - 1 if first else stage]
                layers.append(HieraBlock(dims[stage - 1 if first else stage], dims[stage], heads[stage], window, first))
                index += 1
        self.blocks = nn.ModuleList(layers)
        self.head = nn.Sequential(
            nn.PixelShuffle(2),
            nn.ConvTranspose2d(dims[-1] // 4, num_keypoints, 3, stride=2, padding=1, output_padding=1),
            nn.ConvTranspose2d(num_keypoints, num_keypoints, 3, stride=2, padding=1, output_padding=1),
        )

    def forward(self, x):
        h = self.patch_embed(x)
        pos = F.interpolate(self.pos_embed, size=h.shape[2:], mode="bicubic")
        pos = pos + self.pos_embed_window.tile(1, 1, h.shape[2] // 8, h.shape[3] // 8)
        h = (h + pos).permute(0, 2, 3, 1)
        for block in self.blocks:
            h = block(h)
        h = self.head(h.permute(0, 3, 1, 2))
        n, k, hh, ww = h.shape
        return F.softmax(h.reshape(n, k, hh * ww), dim=-1).reshape(n, k, hh, ww)


def make_model(backbone, num_keypoints, size=256):
    if backbone == "vitb_sam":
        return SamHeatmapModel(num_keypoints, size)
    if backbone in HieraHeatmapModel.SPECS:
        return HieraHeatmapModel(backbone, num_keypoints)
    return ViTHeatmapModel(num_keypoints) if backbone == "vits_dino" else HeatmapModel(num_keypoints)


def vit_linear_flops(model, x):
    """Forward FLOPs of the ViT's matrix products: per layer the QKV, output, and two MLP
    projections of every token, plus the attention scores and weighted sums."""
    vit = model.backbone
    n = x.shape[0]
    tokens = 1 + (x.shape[2] // vit.patch) * (x.shape[3] // vit.patch)
    d = vit.width
    mlp = vit.layers[0].fc1.out_features
    per_layer = 2 * tokens * (4 * d * d + 2 * d * mlp) + 2 * 2 * tokens * tokens * d
    return n * per_layer * len(vit.layers)


def heatmap_mse(pred, target):
    # lightning-pose: MSE * H*W, mean over keypoints, weight 0.5
    h, w = target.shape[-2:]
    return 0.5 * F.mse_loss(pred.float(), target, reduction="mean") * h * w


def count_flops(model, x):
    """Forward FLOPs (2 per multiply-add) of convolutions and transposed convolutions."""
    flops = [0]

    def conv_hook(m, inp, out):
        k = m.kernel_size[0] * m.kernel_size[1]
        if isinstance(m, nn.ConvTranspose2d):
            n, c, h, w = inp[0].shape
            flops[0] += 2 * n * c * h * w * k * m.out_channels // m.groups
        else:
            n, c, h, w = out.shape
            flops[0] += 2 * n * c * h * w * k * m.in_channels // m.groups

    def linear_hook(m, inp, out):
        flops[0] += 2 * inp[0].numel() // m.in_features * m.in_features * m.out_features

    hooks = [m.register_forward_hook(conv_hook) for m in model.modules()
             if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d))]
    if isinstance(model, (SamHeatmapModel, HieraHeatmapModel)):  # its Linear layers and attention, as run
        hooks += [m.register_forward_hook(linear_hook) for m in model.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    if isinstance(model, ViTHeatmapModel):
        flops[0] += vit_linear_flops(model, x)
    if isinstance(model, SamHeatmapModel):
        flops[0] += sum(layer.attention_flops for layer in model.layers)
    if isinstance(model, HieraHeatmapModel):
        flops[0] += sum(block.attention_flops for block in model.blocks)
    return flops[0]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_training(mode, batch, args, device):
    torch.manual_seed(0)
    model = make_model(args.backbone, args.keypoints, args.image_size).to(device)
    size = args.image_size
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.rand(batch, args.keypoints, size // 4, size // 4, device=device)
    target = target / target.sum(dim=(2, 3), keepdim=True)
    channels_last = mode in ("amp-bf16-cl", "compiled-bf16-cl")
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    tf32 = mode != "eager-fp32-notf32"
    if device.type == "cuda":
        torch.backends.cudnn.allow_tf32 = tf32 if mode.startswith("eager-fp32") else True
        torch.backends.cuda.matmul.allow_tf32 = tf32 if mode.startswith("eager-fp32") else False
        torch.backends.cudnn.benchmark = True
    fwd_flops = count_flops(model, x)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step_model = model
    if mode == "compiled-bf16-cl":
        step_model = torch.compile(model)
    use_amp = mode in ("amp-bf16-cl", "compiled-bf16-cl")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
            pred = step_model(x)
        loss = heatmap_mse(pred, target)
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    sync(device)
    start = time.perf_counter()
    for _ in range(args.iters):
        step()
    sync(device)
    seconds = (time.perf_counter() - start) / args.iters
    return {"mode": mode, "batch": batch, "images_per_s": batch / seconds,
            "step_ms": seconds * 1e3, "train_flops_per_step": 3 * fwd_flops}


def subpixel_keypoints(heatmaps, upsamplings=2, temperature=1000.0):
    """lightning-pose's run_subpixelmaxima: upsample 2^d, softmax, expectation (host)."""
    k1 = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0], device=heatmaps.device) / 16
    n, k = heatmaps.shape[:2]
    x = heatmaps.float()
    blur = (k1[:, None] * k1[None, :]).expand(k, 1, 5, 5)
    for _ in range(upsamplings):
        x = F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)
        x = F.conv2d(x, blur, padding=2, groups=k)
    h, w = x.shape[-2:]
    p = F.softmax(temperature * x.reshape(n, k, h * w), dim=-1).reshape(n, k, h, w)
    cols = torch.arange(w, device=x.device, dtype=x.dtype)
    rows = torch.arange(h, device=x.device, dtype=x.dtype)
    ex = (p.sum(dim=2) * cols).sum(dim=-1)
    ey = (p.sum(dim=3) * rows).sum(dim=-1)
    return torch.stack([ex, ey], dim=-1).cpu()


def time_inference(mode, batch, args, device):
    torch.manual_seed(0)
    model = make_model(args.backbone, args.keypoints, args.image_size).to(device).eval()
    size = args.image_size
    x = torch.randn(batch, 3, size, size, device=device)
    channels_last = mode == "amp-bf16-cl"
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    if device.type == "cuda":
        tf32 = mode != "eager-fp32-notf32"
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.benchmark = True

    def step():
        with torch.no_grad(), torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                                             enabled=channels_last):
            return subpixel_keypoints(model(x))

    for _ in range(args.warmup):
        step()
    sync(device)
    start = time.perf_counter()
    for _ in range(args.iters):
        step()  # .cpu() waits for the batch, as a prediction loop does
    seconds = (time.perf_counter() - start) / args.iters
    return {"mode": "predict-" + mode, "batch": batch, "images_per_s": batch / seconds, "step_ms": seconds * 1e3}


def bf16_matmul_rate(device, n, reps):
    """Measured dense bf16 GEMM rate in FLOP/s (the MFU denominator)."""
    dtype = torch.bfloat16
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(2):
        a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n ** 3 * reps / (time.perf_counter() - start)


def run_trainer(template, batch, precision):
    # "32-tf32": precision 32 with TF32 convolutions, PyTorch's eager default.
    cmd = template.format(batch=batch, precision=precision.replace("-tf32", ""))
    if precision.endswith("-tf32"):
        cmd += " --float32-matmul-precision high"
    proc = subprocess.run(shlex.split(cmd), capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"trainer command failed ({proc.returncode}): {cmd}\n{proc.stderr}", file=sys.stderr)
        return None
    numbers = re.findall(r"([0-9]+(?:\.[0-9]+)?)\s*images/s", proc.stdout + proc.stderr)
    return float(numbers[-1]) if numbers else None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--backbone", default="resnet50",
                   choices=["resnet50", "vits_dino", "vitb_sam", "vitt_sam2", "vits_sam2", "vitb_sam2"],
                   help="resnet50, vits_dino (ViT-S/16), vitb_sam (SAM's ViT-B image encoder, windowed) or "
                        "vitt_sam2 / vits_sam2 / vitb_sam2 (SAM 2.1's Hiera encoders)")
    p.add_argument("--batches", default="16,64")
    p.add_argument("--image-size", type=int, default=256)
    p.add_argument("--keypoints", type=int, default=17)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--compile", action="store_true", help="also time torch.compile (PyTorch >= 2)")
    p.add_argument("--matmul-size", type=int, default=8192)
    p.add_argument("--trainer-cmd", default=None, help="template with {batch} and {precision}")
    p.add_argument("--json", default=None, help="write the results as JSON lines here")
    p.add_argument("--inference", action="store_true", help="also time prediction (see above)")
    p.add_argument("--trainer-predict-cmd", default=None,
                   help="template with {batch} and {precision} for the trainer's prediction rate")
    p.add_argument("--skip-training", action="store_true", help="time prediction only (with --inference)")
    args = p.parse_args()

    if torchvision is None:
        print("SKIPPED: torchvision is not installed")
        return 77
    if args.device == "cuda" and not torch.cuda.is_available():
        print("SKIPPED: no GPU visible (torch.cuda.is_available() is False)")
        return 77
    device = torch.device(args.device)
    if args.device == "cuda":
        gpu = torch.cuda.get_device_name(0)
    else:
        gpu = "cpu (smoke test)"
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  device: {gpu}  "
          f"torch {torch.__version__}  {args.backbone}  image {args.image_size}x{args.image_size}")

    modes = ["eager-fp32", "eager-fp32-notf32", "amp-bf16-cl"]
    if args.compile:
        if hasattr(torch, "compile"):
            modes.append("compiled-bf16-cl")
        else:
            print("# torch.compile unavailable in this PyTorch; skipping compiled-bf16-cl")
    peak = bf16_matmul_rate(device, args.matmul_size, 10 if args.device == "cuda" else 1)
    print(f"# measured bf16 matmul rate ({args.matmul_size}^3): {peak / 1e12:.1f} TFLOP/s")

    results = []
    trainer_failures = 0  # a trainer command without a rate makes the exit status 1
    batches = [int(b) for b in args.batches.split(",")]
    if args.inference:
        for batch in batches:
            for mode in ("eager-fp32", "eager-fp32-notf32", "amp-bf16-cl"):
                r = time_inference(mode, batch, args, device)
                r["device"] = gpu
                results.append(r)
                print(f"torch {r['mode']:26s} batch {batch:3d}: {r['images_per_s']:9.1f} images/s "
                      f"({r['step_ms']:.1f} ms/batch)", flush=True)
        if args.trainer_predict_cmd:
            print("# trainer prediction vs PyTorch inference")
            for batch in batches:
                by_mode = {r["mode"]: r["images_per_s"] for r in results if r["batch"] == batch}
                for precision, ref_name in (("32", "predict-eager-fp32-notf32"),
                                            ("32-tf32", "predict-eager-fp32"),
                                            ("bf16-mixed", "predict-amp-bf16-cl")):
                    ours = run_trainer(args.trainer_predict_cmd, batch, precision)
                    if ours is None:
                        print(f"trainer predict {precision:10s} batch {batch:3d}: no images/s in its output")
                        trainer_failures += 1
                        continue
                    ref = by_mode[ref_name]
                    results.append({"mode": f"trainer-predict-{precision}", "batch": batch, "images_per_s": ours,
                                    "device": gpu, f"ratio_vs_{ref_name}": ours / ref})
                    print(f"trainer predict {precision:10s} batch {batch:3d}: {ours:9.1f} images/s = "
                          f"{ours / ref:.2f}x torch {ref_name}")
    if args.skip_training:
        batches = []
    for batch in batches:
        for mode in modes:
            r = time_training(mode, batch, args, device)
            r["mfu"] = r["train_flops_per_step"] / (r["step_ms"] / 1e3) / peak
            r["device"] = gpu
            results.append(r)
            print(f"torch {mode:18s} batch {batch:3d}: {r['images_per_s']:9.1f} images/s "
                  f"({r['step_ms']:.1f} ms/step, MFU {100 * r['mfu']:.1f}%)", flush=True)

    if args.trainer_cmd and not args.skip_training:
        print("# trainer vs PyTorch")
        # PyTorch's training runs only (with --inference, results also hold prediction rows).
        training = [r for r in results if "train_flops_per_step" in r]
        for batch in sorted({r["batch"] for r in training}):
            by_mode = {r["mode"]: r["images_per_s"] for r in training if r["batch"] == batch}
            # The same network and batch: the trainer does the same FLOPs per image.
            flops_per_image = next(r["train_flops_per_step"] / batch for r in training if r["batch"] == batch)
            best_bf16 = max(v for k, v in by_mode.items() if "bf16" in k)
            for precision, ref_name, ref in (("32", "eager-fp32-notf32", by_mode["eager-fp32-notf32"]),
                                             ("32-tf32", "eager-fp32", by_mode["eager-fp32"]),
                                             ("bf16-mixed", "best bf16", best_bf16)):
                ours = run_trainer(args.trainer_cmd, batch, precision)
                if ours is None:
                    print(f"trainer {precision:10s} batch {batch:3d}: no images/s in its output")
                    trainer_failures += 1
                    continue
                mfu = ours * flops_per_image / peak
                results.append({"mode": f"trainer-{precision}", "batch": batch, "images_per_s": ours,
                                "device": gpu, "mfu": mfu, f"ratio_vs_{ref_name.replace(' ', '_')}": ours / ref})
                print(f"trainer {precision:10s} batch {batch:3d}: {ours:9.1f} images/s = "
                      f"{ours / ref:.2f}x torch {ref_name} (MFU {100 * mfu:.1f}%)")
    for r in results:
        r["backbone"] = args.backbone
    if args.json:
        with open(args.json, "w") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")
    return 1 if trainer_failures else 0


if __name__ == "__main__":
    sys.exit(main())
