#!/usr/bin/env python3
"""ViT backbone parity with PyTorch (vits_dino: Hugging Face's ViTModel as
lightning-pose's VisionEncoder runs it), from a given state rather than an
initialisation:

  vit_parity.py write WEIGHTS.safetensors
      writes a ViT state under Hugging Face's key names (plus a pooler the trainer
      must ignore) with trained-looking values (LayerNorm gains around 1, non-zero
      biases, position embeddings with structure);
  vit_parity.py check EXPORT_DIR WEIGHTS.safetensors
      after `trainer bench step --backbone vits_dino --init-weights WEIGHTS --export
      EXPORT_DIR`, rebuilds the step in plain PyTorch (modules mirroring
      transformers' ViTModel: same names, eager attention, exact GELU, LayerNorm eps
      1e-12, position embeddings bicubic-resized to the image's patch grid as
      interpolate_pos_encoding does) loading the same safetensors file, and compares
      per tensor: the loaded weights, the loss, every gradient and one Adam step.

Errors are ||x - exact|| / ||exact|| against PyTorch in float64; a tensor passes
below 1e-4 or below 3x PyTorch float32's own error. Two gradients are zero in exact
arithmetic and rounding noise on both sides, so they are compared absolutely (1e-4 of
all tensors' norm, 1e-3 for the last bias, or 3x PyTorch float32's noise there): the last deconvolution's bias (a spatial softmax ignores a
per-channel shift, as in model_parity.py) and every key bias (q . (k + b) shifts a
query's scores over all keys by q . b, which the attention softmax ignores).
`transformers` is not needed (Debian's python3-torch 1.13 has none).
"""
import json
import math
import os
import struct
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
from model_parity import gaussian_targets, norm, rel  # noqa: E402

LIMIT = 1e-4
EPS = 1e-12  # ViTConfig.layer_norm_eps, kept by facebook/dino-vits16


# ---- safetensors without the safetensors package -------------------------------------
def write_safetensors(path, tensors):
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(info["shape"]).copy()
    return out


# ---- Hugging Face's ViTModel, mirrored module by module (same state_dict keys) ---------
class SelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)

    def forward(self, x):
        n, t, c = x.shape
        split = lambda y: y.view(n, t, self.heads, c // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(c // self.heads), dim=-1)
        return (probs @ v).transpose(1, 2).reshape(n, t, c)


class SelfOutput(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.dense = nn.Linear(width, width)

    def forward(self, x):
        return self.dense(x)


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.attention = SelfAttention(width, heads)
        self.output = SelfOutput(width)

    def forward(self, x):
        return self.output(self.attention(x))


class Intermediate(nn.Module):
    def __init__(self, width, mlp):
        super().__init__()
        self.dense = nn.Linear(width, mlp)

    def forward(self, x):
        return F.gelu(self.dense(x))  # exact (erf), HF's "gelu"


class Output(nn.Module):
    def __init__(self, width, mlp):
        super().__init__()
        self.dense = nn.Linear(mlp, width)

    def forward(self, x, residual):
        return self.dense(x) + residual


class Layer(nn.Module):
    def __init__(self, width, heads, mlp):
        super().__init__()
        self.attention = Attention(width, heads)
        self.intermediate = Intermediate(width, mlp)
        self.output = Output(width, mlp)
        self.layernorm_before = nn.LayerNorm(width, eps=EPS)
        self.layernorm_after = nn.LayerNorm(width, eps=EPS)

    def forward(self, x):
        x = self.attention(self.layernorm_before(x)) + x
        return self.output(self.intermediate(self.layernorm_after(x)), x)


class PatchEmbeddings(nn.Module):
    def __init__(self, width, patch):
        super().__init__()
        self.projection = nn.Conv2d(3, width, kernel_size=patch, stride=patch)


class Embeddings(nn.Module):
    def __init__(self, width, patch, grid):
        super().__init__()
        self.patch = patch
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.patch_embeddings = PatchEmbeddings(width, patch)
        self.position_embeddings = nn.Parameter(torch.zeros(1, grid * grid + 1, width))

    def interpolate_pos_encoding(self, tokens, height, width):
        """transformers' ViTEmbeddings.interpolate_pos_encoding (size=, not scale_factor=)."""
        patches, positions = tokens.shape[1] - 1, self.position_embeddings.shape[1] - 1
        if patches == positions and height == width:
            return self.position_embeddings
        cls_pos, patch_pos = self.position_embeddings[:, :1], self.position_embeddings[:, 1:]
        dim, side = tokens.shape[-1], int(positions ** 0.5)
        patch_pos = patch_pos.reshape(1, side, side, dim).permute(0, 3, 1, 2)
        patch_pos = F.interpolate(patch_pos, size=(height // self.patch, width // self.patch), mode="bicubic",
                                  align_corners=False)
        return torch.cat((cls_pos, patch_pos.permute(0, 2, 3, 1).reshape(1, -1, dim)), dim=1)

    def forward(self, images):
        n, _, h, w = images.shape
        tokens = self.patch_embeddings.projection(images).flatten(2).transpose(1, 2)
        tokens = torch.cat((self.cls_token.expand(n, -1, -1), tokens), dim=1)
        return tokens + self.interpolate_pos_encoding(tokens, h, w)


class Encoder(nn.Module):
    def __init__(self, width, heads, mlp, layers):
        super().__init__()
        self.layer = nn.ModuleList(Layer(width, heads, mlp) for _ in range(layers))


class ViTModel(nn.Module):
    def __init__(self, width=384, heads=6, mlp=1536, layers=12, patch=16, grid=14):
        super().__init__()
        self.embeddings = Embeddings(width, patch, grid)
        self.encoder = Encoder(width, heads, mlp, layers)
        self.layernorm = nn.LayerNorm(width, eps=EPS)

    def forward(self, images):
        x = self.embeddings(images)
        for layer in self.encoder.layer:
            x = layer(x)
        return self.layernorm(x)


class VisionEncoder(nn.Module):
    """lightning-pose's wrapper: CLS dropped, patch tokens as a [N, C, h, w] map."""

    def __init__(self, **spec):
        super().__init__()
        self.vision_encoder = ViTModel(**spec)

    def forward(self, images):
        tokens = self.vision_encoder(images)[:, 1:]
        n, _, h, w = images.shape
        patch = self.vision_encoder.embeddings.patch
        return tokens.reshape(n, h // patch, w // patch, -1).permute(0, 3, 1, 2)


class HeatmapNet(nn.Module):
    def __init__(self, keypoints, downsample, **spec):
        super().__init__()
        self.backbone = VisionEncoder(**spec)
        self.deconvs = int(math.log2(16)) - downsample - 1  # lightning-pose's n_layers for stride 16
        channels = spec.get("width", 384) // 4
        self.head = nn.Module()
        for i in range(self.deconvs):
            setattr(self.head, f"deconv{i}", nn.ConvTranspose2d(channels, keypoints, 3, stride=2, padding=1,
                                                                output_padding=1))
            channels = keypoints

    def forward(self, images):
        x = F.pixel_shuffle(self.backbone(images), 2)
        for i in range(self.deconvs):
            x = getattr(self.head, f"deconv{i}")(x)
        n, k, h, w = x.shape
        return torch.softmax(x.reshape(n, k, h * w), dim=-1).reshape(n, k, h, w)


# ---- write -------------------------------------------------------------------------------
def write(path, width=384, heads=6, mlp=1536, layers=12):
    rng = np.random.default_rng(7)
    model = ViTModel(width=width, heads=heads, mlp=mlp, layers=layers)
    tensors = {}
    for name, p in model.state_dict().items():
        shape = tuple(p.shape)
        if "layernorm" in name and name.endswith("weight"):
            value = 1.0 + 0.2 * rng.standard_normal(shape)
        elif name.endswith("bias"):
            value = 0.05 * rng.standard_normal(shape)
        elif "position_embeddings" in name:  # smooth over the grid, as learnt ones are
            grid = int(round((shape[1] - 1) ** 0.5))
            yy, xx = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
            freq = rng.uniform(0.2, 1.2, size=(shape[2], 2))
            phase = rng.uniform(0, 2 * np.pi, size=shape[2])
            waves = np.sin(freq[:, 0, None, None] * yy + freq[:, 1, None, None] * xx + phase[:, None, None])
            value = np.concatenate([0.3 * rng.standard_normal((1, shape[2])),
                                    0.3 * waves.reshape(shape[2], -1).T], axis=0)[None]
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            value = rng.standard_normal(shape) / np.sqrt(fan_in)
        tensors[name] = value.astype(np.float32)
    tensors["pooler.dense.weight"] = rng.standard_normal((width, width)).astype(np.float32)  # not the backbone's
    tensors["pooler.dense.bias"] = np.zeros(width, dtype=np.float32)
    write_safetensors(path, tensors)
    print(f"wrote {path}: {len(tensors)} tensors")
    return 0


# ---- check -------------------------------------------------------------------------------
def run_torch(weights, head, images, kp, keypoints, downsample, dtype):
    net = HeatmapNet(keypoints, downsample)
    state = {"backbone.vision_encoder." + k: torch.from_numpy(v) for k, v in weights.items()
             if not k.startswith("pooler.")}
    state.update({k: torch.from_numpy(v) for k, v in head.items()})
    net.load_state_dict(state, strict=True)
    net = net.to(dtype).train()
    x = torch.from_numpy(images).to(dtype)
    heatmaps = net(x)
    n, k, h, w = heatmaps.shape
    t, m = gaussian_targets(kp * np.array([w / images.shape[3], h / images.shape[2]]), h, w)
    t, m = torch.from_numpy(t).to(dtype), torch.from_numpy(m).to(dtype)
    loss = 0.5 * (((heatmaps - t) ** 2).sum(dim=(2, 3)) * m).sum() / m.sum()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    optimizer.zero_grad()
    loss.backward()
    out = {"loss": loss.item(), "grad": {}, "param": {}, "exp_avg": {}, "exp_avg_sq": {}}
    for name, p in net.named_parameters():
        out["grad"][name] = p.grad.double().numpy().copy()
    optimizer.step()
    for name, p in net.named_parameters():
        out["param"][name] = p.detach().double().numpy().copy()
        out["exp_avg"][name] = optimizer.state[p]["exp_avg"].double().numpy().copy()
        out["exp_avg_sq"][name] = optimizer.state[p]["exp_avg_sq"].double().numpy().copy()
    return out


def check(export_dir, weights_path):
    failures = []
    weights = read_safetensors(weights_path)
    with h5py.File(os.path.join(export_dir, "initial.h5"), "r") as f:
        model = {name: np.array(f["model"][name]) for name in f["model"]}
    head = {k: v for k, v in model.items() if k.startswith("head.")}
    keypoints = head["head.deconv0.weight"].shape[1]
    downsample = int(math.log2(16)) - 1 - sum(1 for k in head if k.endswith(".weight"))

    # The trainer loaded every backbone tensor of the file, bit for bit, and nothing else.
    backbone = {k: v for k, v in model.items() if k.startswith("backbone.")}
    expected = {"backbone.vision_encoder." + k for k in weights if not k.startswith("pooler.")}
    if set(backbone) != expected:
        failures.append(f"names differ: missing {sorted(expected - set(backbone))[:5]}, "
                        f"extra {sorted(set(backbone) - expected)[:5]}")
    for name in sorted(expected & set(backbone)):
        if not np.array_equal(backbone[name], weights[name[len("backbone.vision_encoder."):]]):
            failures.append(f"{name}: not loaded as in the file")
    print(f"weights: {len(backbone)} backbone tensors as in {os.path.basename(weights_path)}")

    with h5py.File(os.path.join(export_dir, "batch.h5"), "r") as f:
        images = np.array(f["images"])
        kp = np.array(f["keypoints"], dtype=np.float64)
        ours = {"loss": float(np.array(f["loss"])[0]), "grad": {n: np.array(f["grad"][n]) for n in f["grad"]}}
    with h5py.File(os.path.join(export_dir, "after.h5"), "r") as f:
        for kind, group in (("param", "model"), ("exp_avg", "optimizer/exp_avg"), ("exp_avg_sq", "optimizer/exp_avg_sq")):
            ours[kind] = {n: np.array(f[group][n]) for n in ours["grad"]}

    exact = run_torch(weights, head, images, kp, keypoints, downsample, torch.float64)
    t32 = run_torch(weights, head, images, kp, keypoints, downsample, torch.float32)
    loss_rel = abs(ours["loss"] - exact["loss"]) / abs(exact["loss"])
    print(f"loss: ours {ours['loss']:.9g} torch64 {exact['loss']:.9g} rel {loss_rel:.2e}")
    if loss_rel > LIMIT:
        failures.append(f"loss rel {loss_rel:.3g}")
    zero_grad = f"head.deconv{int(math.log2(16)) - downsample - 2}.bias"
    for kind in ("grad", "exp_avg", "exp_avg_sq", "param"):
        worst, errs = (0.0, 0.0, ""), []
        scale = np.sqrt(sum(norm(v) ** 2 for v in exact[kind].values()))
        for name, ref in exact[kind].items():
            if name not in ours[kind]:
                failures.append(f"{kind} {name}: missing from the export")
                continue
            mine = ours[kind][name].reshape(ref.shape)
            if name == zero_grad or name.endswith("attention.attention.key.bias"):
                # The last layer's bias is held to 10x less (exempt from the per-tensor bar:
                # its noise is a sum over every heatmap pixel); key biases to 1e-4.
                bar = max((1e-3 if name == zero_grad else LIMIT) * scale, 3 * norm(t32[kind][name] - ref))
                if norm(mine - ref) > bar:
                    failures.append(f"{kind} {name}: |diff| {norm(mine - ref):.3g} > {bar:.3g}")
                continue
            err, err32 = rel(mine, ref), rel(t32[kind][name], ref)
            worst = max(worst, (err, err32, name))
            errs.append(err)
            if err > max(LIMIT, 3 * err32):
                failures.append(f"{kind} {name}: error {err:.3g} (PyTorch float32: {err32:.3g})")
        print(f"{kind:10s}: worst error {worst[0]:.2e} ({worst[2]}; PyTorch float32 there: {worst[1]:.2e}); "
              f"mean {float(np.mean(errs)):.2e} over {len(errs)} tensors")
    if failures:
        print("FAILED:")
        for line in failures[:30]:
            print("  " + line)
        return 1
    print(f"PASSED: vits_dino, {keypoints} keypoints, d = {downsample}, images {images.shape}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "write":
        sys.exit(write(sys.argv[2]))
    if len(sys.argv) >= 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(2)
