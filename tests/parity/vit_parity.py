#!/usr/bin/env python3
"""ViT backbone parity with PyTorch (vits_dino: Hugging Face's ViTModel as
lightning-pose's VisionEncoder runs it; vits_dinov2: Dinov2Model as its
VisionEncoderDino runs it, patch kernels resized 14 -> 16 at load; vits_dinov3:
DINOv3ViTModel as VisionEncoderDino runs it, CLS + 4 register tokens dropped,
2-D RoPE on the patch tokens' queries and keys; vitb_sam: SAM ViT-B's
SamVisionEncoder as VisionEncoderSam runs it: NHWC tokens, a 64x64 position table
antialias-bicubic-resized to the image's patch grid at load, 14x14 windowed
attention (zero-padded) but in layers 2, 5, 8, 11, no relative positions, no neck;
vitt_sam2, vits_sam2, vitb_sam2: SAM 2.1's Sam2HieraDetModel as VisionEncoderSam2 runs
it: a 7x7 stride-4 patch embedding, a [1, C, 7, 7] (base+: 14x14) table bicubic-resized
to the token grid on every forward plus an 8x8 window table tiled over it, four stages
of windowed (zero-padded) or global attention whose entry blocks max-pool their queries
inside each window and their residual on the grid, last_hidden_state as a stride-32
map, no neck; its head is built for stride 32, as lightning-pose's BACKBONE_STRIDES
says), from a given state rather than an initialisation:

  vit_parity.py write WEIGHTS.safetensors [dinov2|dinov3|mae|sam]
  vit_parity.py write WEIGHTS.safetensors sam2 [vitt_sam2|vits_sam2|vitb_sam2]
      writes a ViT state under Hugging Face's key names (plus a pooler the trainer
      must ignore; mae: ViT-B as facebook/vit-mae-base's ViTMAEForPreTraining file
      holds it, the encoder under vit. beside a decoder the trainer must ignore;
      sam: as facebook/sam-vit-base's SamModel file holds it, the encoder under
      vision_encoder. beside prompt-encoder, mask-decoder and shared-embedding
      tensors the trainer must ignore; sam2: as facebook/sam2.1-hiera-tiny's (-small's,
      -base-plus's) Sam2Model file holds it, the backbone under vision_encoder.backbone.
      beside the FPN neck's convs, prompt-encoder, mask-decoder and no_memory_embedding
      tensors the trainer must ignore) with trained-looking values (LayerNorm gains
      around 1, non-zero biases, position embeddings with structure);
  vit_parity.py check EXPORT_DIR WEIGHTS.safetensors
      after `trainer bench step --backbone vits_dino --init-weights WEIGHTS --export
      EXPORT_DIR`, rebuilds the step in plain PyTorch (modules mirroring
      transformers' ViTModel: same names, eager attention, exact GELU, LayerNorm eps
      1e-12, position embeddings bicubic-resized to the image's patch grid as
      interpolate_pos_encoding does) loading the same safetensors file, and compares
      per tensor: the loaded weights, the loss, every gradient and one Adam step.
  vit_parity.py check EXPORT_DIR WEIGHTS.safetensors --trained CHECKPOINT.h5
      the same from a trained state: after `trainer train` started from WEIGHTS and
      `bench step --init-checkpoint CHECKPOINT --export EXPORT_DIR`, the step's state
      must be the checkpoint's bit for bit and have moved away from WEIGHTS; the
      reference starts from that state (its 16x16 DINOv2 kernels as trained, its
      SAM position table at the image's grid as trained, SAM2's tables at their own
      size as ever).
  vit_parity.py selftest-sam
      checks the SAM reference on its own (windows against global attention, the
      window partition's round trip, the position table's resize against separable
      Keys weights, a float64 step at 64x64 and 256x256); needs no trainer.
  vit_parity.py selftest-sam2
      checks the SAM2 reference on its own in float64 (the window partition's round
      trip and zero padding, queries max-pooled inside windows against the max-pool of
      the padded grid, the position embedding against cubic-convolution weights and
      the tiled window table, one window over the grid against global attention, stage
      shapes of all three at 64/128/256/1024 on the meta device, parameter counts
      against Sam2HieraDetConfig's, a float64 step of the tiny at 64x64); needs no
      trainer.

Errors are ||x - exact|| / ||exact|| against PyTorch in float64; a tensor passes
below 1e-4 or below 3x PyTorch float32's own error. Two kinds of gradient are zero
in exact arithmetic and rounding noise on both sides: every attention key bias
(q . (k + b) shifts a query's scores over all keys by q . b, which the softmax
ignores; SAM's is the middle third of each qkv.bias, split out for this, and its
zero-padded window tokens have key b too; SAM2's likewise, pooled queries or not) is
compared absolutely (1e-4 of all tensors' norm, or 3x PyTorch float32's noise there);
the last deconvolution's bias (a spatial softmax ignores a per-channel shift) is
exempt and only printed.
Tensors the forward does not use (DINOv2's and DINOv3's mask_token, SAM's
rel_pos_h/rel_pos_w and neck) get no gradient in PyTorch, so Adam skips them: where
the export holds them, their gradient must be zero and the step must leave them as
they were.
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
EPS = {False: 1e-12, True: 1e-6}  # layer_norm_eps: ViTConfig's (dino-vits16), Dinov2Config's
DINOV3_EPS, DINOV3_REGISTERS, DINOV3_THETA = 1e-5, 4, 100.0  # dinov3-vits16-pretrain-lvd1689m's config


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
        self.layernorm_before = nn.LayerNorm(width, eps=EPS[False])
        self.layernorm_after = nn.LayerNorm(width, eps=EPS[False])

    def forward(self, x):
        x = self.attention(self.layernorm_before(x)) + x
        return self.output(self.intermediate(self.layernorm_after(x)), x)


class LayerScale(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lambda1 = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * self.lambda1


class Mlp(nn.Module):
    def __init__(self, width, mlp):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(width, mlp), nn.Linear(mlp, width)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Dinov2Layer(nn.Module):
    """transformers' Dinov2Layer (no drop path: DINOv2-S/B configs have rate 0)."""

    def __init__(self, width, heads, mlp):
        super().__init__()
        self.norm1 = nn.LayerNorm(width, eps=EPS[True])
        self.attention = Attention(width, heads)
        self.layer_scale1 = LayerScale(width)
        self.norm2 = nn.LayerNorm(width, eps=EPS[True])
        self.mlp = Mlp(width, mlp)
        self.layer_scale2 = LayerScale(width)

    def forward(self, x):
        x = self.layer_scale1(self.attention(self.norm1(x))) + x
        return self.layer_scale2(self.mlp(self.norm2(x))) + x


class PatchEmbeddings(nn.Module):
    def __init__(self, width, patch):
        super().__init__()
        self.projection = nn.Conv2d(3, width, kernel_size=patch, stride=patch)


class Embeddings(nn.Module):
    def __init__(self, width, patch, grid, dinov2=False):
        super().__init__()
        self.patch = patch
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        if dinov2:
            self.mask_token = nn.Parameter(torch.zeros(1, width))  # unused without a mask, as in lightning-pose
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
    def __init__(self, width, heads, mlp, layers, dinov2=False):
        super().__init__()
        self.layer = nn.ModuleList((Dinov2Layer if dinov2 else Layer)(width, heads, mlp) for _ in range(layers))


class ViTModel(nn.Module):
    """transformers' ViTModel(add_pooling_layer=False), or with dinov2=True its Dinov2Model."""

    def __init__(self, width=384, heads=6, mlp=1536, layers=12, patch=16, grid=14, dinov2=False):
        super().__init__()
        self.embeddings = Embeddings(width, patch, grid, dinov2)
        self.encoder = Encoder(width, heads, mlp, layers, dinov2)
        self.layernorm = nn.LayerNorm(width, eps=EPS[dinov2])

    def resize_patch_kernels(self, patch):
        """lightning-pose's VisionEncoderDino._resize_patch_embedding_weights."""
        old = self.embeddings.patch_embeddings.projection
        c_out, c_in, h, w = old.weight.shape
        weight = F.interpolate(old.weight.data.view(c_out * c_in, 1, h, w), size=(patch, patch), mode="bicubic",
                               align_corners=True, antialias=True).view(c_out, c_in, patch, patch)
        new = nn.Conv2d(c_in, c_out, kernel_size=patch, stride=patch)
        new.weight.data, new.bias.data = weight, old.bias.data
        self.embeddings.patch_embeddings.projection = new
        self.embeddings.patch = patch

    def forward(self, images):
        x = self.embeddings(images)
        for layer in self.encoder.layer:
            x = layer(x)
        return self.layernorm(x)


class VisionEncoder(nn.Module):
    """lightning-pose's wrapper: CLS dropped, patch tokens as a [N, C, h, w] map."""

    def __init__(self, dinov3=False, sam=False, sam2=None, **spec):
        super().__init__()
        self.sam = sam or sam2 is not None
        self.vision_encoder = (Sam2HieraDet(**SAM2_CONFIGS[sam2]) if sam2 else SamVisionEncoder(**spec) if sam else
                               Dinov3Model(**spec) if dinov3 else ViTModel(**spec))
        self.prefix = 1 + (DINOV3_REGISTERS if dinov3 else 0)

    def forward(self, images):
        if self.sam:  # VisionEncoderSam(2).forward: [N, h, w, C] tokens already, no CLS, no neck
            return self.vision_encoder(images).permute(0, 3, 1, 2)
        tokens = self.vision_encoder(images)[:, self.prefix:]
        n, _, h, w = images.shape
        patch = self.vision_encoder.embeddings.patch
        return tokens.reshape(n, h // patch, w // patch, -1).permute(0, 3, 1, 2)


def head_stride(spec):
    """lightning-pose's BACKBONE_STRIDES for the backbone of `spec` (a SPECS entry)."""
    return SAM2_STRIDE if spec.get("sam2") else 16


class HeatmapNet(nn.Module):
    def __init__(self, keypoints, downsample, **spec):
        super().__init__()
        self.backbone = VisionEncoder(**spec)
        # lightning-pose's n_layers = log2(stride) - downsample - 1 (BACKBONE_STRIDES: 16, SAM2's 32)
        self.deconvs = int(math.log2(head_stride(spec))) - downsample - 1
        channels = (SAM2_CONFIGS[spec["sam2"]]["dims"][-1] if spec.get("sam2") else spec.get("width", 384)) // 4
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


# ---- Hugging Face's DINOv3ViTModel, mirrored module by module (same state_dict keys) ------
def rope_tables(grid_h, grid_w, head_dim, rescale=None):
    """DINOv3ViTRopePositionEmbedding in float32 whatever the model's dtype, as
    transformers computes it; [h*w, head_dim]. `rescale`: the train-mode coordinate
    factor (transformers draws it per forward, log-uniform in [1/2, 2]; here it is the
    one the trainer drew for the step, from its export); None: eval mode."""
    inv_freq = 1 / DINOV3_THETA ** torch.arange(0, 1, 4 / head_dim, dtype=torch.float32)
    ys = torch.arange(0.5, grid_h, dtype=torch.float32) / grid_h
    xs = torch.arange(0.5, grid_w, dtype=torch.float32) / grid_w
    coords = 2.0 * torch.stack(torch.meshgrid(ys, xs, indexing="ij"), dim=-1).flatten(0, 1) - 1.0
    if rescale is not None:  # augment_patches_center_coordinates' rescale_hw, a float32 [1]
        coords = coords * torch.tensor([rescale], dtype=torch.float32)
    angles = (2 * math.pi * coords[:, :, None] * inv_freq[None, None, :]).flatten(1, 2).tile(2)
    return torch.cos(angles), torch.sin(angles)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Dinov3Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.k_proj = nn.Linear(width, width, bias=False)  # DINOv3ViTConfig.key_bias = False
        self.v_proj, self.q_proj, self.o_proj = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)

    def forward(self, x, cos, sin):
        n, t, c = x.shape
        split = lambda y: y.view(n, t, self.heads, c // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        prefix = t - cos.shape[0]  # CLS and registers are not turned
        turn = lambda y: torch.cat((y[:, :, :prefix], y[:, :, prefix:] * cos + rotate_half(y[:, :, prefix:]) * sin),  # noqa: E731
                                   dim=2)
        q, k = turn(q), turn(k)
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(c // self.heads), dim=-1)
        return self.o_proj((probs @ v).transpose(1, 2).reshape(n, t, c))


class Dinov3Mlp(nn.Module):
    def __init__(self, width, mlp):
        super().__init__()
        self.up_proj, self.down_proj = nn.Linear(width, mlp), nn.Linear(mlp, width)

    def forward(self, x):
        return self.down_proj(F.gelu(self.up_proj(x)))


class Dinov3Layer(nn.Module):
    """transformers' DINOv3ViTLayer (drop path rate 0, plain GELU MLP for ViT-S/B)."""

    def __init__(self, width, heads, mlp):
        super().__init__()
        self.norm1 = nn.LayerNorm(width, eps=DINOV3_EPS)
        self.attention = Dinov3Attention(width, heads)
        self.layer_scale1 = LayerScale(width)
        self.norm2 = nn.LayerNorm(width, eps=DINOV3_EPS)
        self.mlp = Dinov3Mlp(width, mlp)
        self.layer_scale2 = LayerScale(width)

    def forward(self, x, cos, sin):
        x = self.layer_scale1(self.attention(self.norm1(x), cos, sin)) + x
        return self.layer_scale2(self.mlp(self.norm2(x))) + x


class Dinov3Embeddings(nn.Module):
    def __init__(self, width, patch):
        super().__init__()
        self.patch = patch
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.mask_token = nn.Parameter(torch.zeros(1, 1, width))  # unused without a mask
        self.register_tokens = nn.Parameter(torch.zeros(1, DINOV3_REGISTERS, width))
        self.patch_embeddings = nn.Conv2d(3, width, kernel_size=patch, stride=patch)

    def forward(self, images):
        n = images.shape[0]
        tokens = self.patch_embeddings(images).flatten(2).transpose(1, 2)
        return torch.cat((self.cls_token.expand(n, -1, -1), self.register_tokens.expand(n, -1, -1), tokens), dim=1)


class Dinov3Model(nn.Module):
    """transformers' DINOv3ViTModel (its rope_embeddings hold no state_dict entry)."""

    def __init__(self, width=384, heads=6, mlp=1536, layers=12, patch=16, **_):
        super().__init__()
        self.heads = heads
        self.embeddings = Dinov3Embeddings(width, patch)
        self.layer = nn.ModuleList(Dinov3Layer(width, heads, mlp) for _ in range(layers))
        self.norm = nn.LayerNorm(width, eps=DINOV3_EPS)
        self.rope_rescale = None  # the train-mode coordinate factor of the next forward

    def forward(self, images):
        _, _, h, w = images.shape
        x = self.embeddings(images)
        patch = self.embeddings.patch
        cos, sin = rope_tables(h // patch, w // patch, x.shape[-1] // self.heads, self.rope_rescale)
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        for layer in self.layer:
            x = layer(x, cos, sin)
        return self.norm(x)


# ---- Hugging Face's SamVisionEncoder, mirrored module by module (same state_dict keys) ----
# facebook/sam-vit-base's SamVisionConfig: 1024 / 16 = 64 patches a side, windows of 14
# tokens but in the global layers, LayerNorm eps 1e-6, a 256-channel neck.
SAM_GRID, SAM_WINDOW, SAM_GLOBAL, SAM_EPS, SAM_NECK = 64, 14, (2, 5, 8, 11), 1e-6, 256


def resize_sam_pos_embed(table, grid):
    """lightning-pose's VisionEncoderSam._resize_pos_embed: [1, 64, 64, C] -> [1, h, w, C]
    (antialiased bicubic, align_corners False); the table itself on its own grid."""
    if tuple(table.shape[1:3]) == tuple(grid):
        return table
    return F.interpolate(table.permute(0, 3, 1, 2), size=tuple(grid), mode="bicubic", align_corners=False,
                         antialias=True).permute(0, 2, 3, 1)


def window_partition(x, window):
    """SamVisionLayer.window_partition: [B, H, W, C] zero-padded at the bottom and right
    to multiples of the window (after layer_norm1, so a padded token is exactly zero
    and its key and value are the qkv bias), then [B * windows, window, window, C]."""
    b, h, w, c = x.shape
    pad_h, pad_w = (window - h % window) % window, (window - w % window) % window
    x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
    hp, wp = h + pad_h, w + pad_w
    x = x.reshape(b, hp // window, window, wp // window, window, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, window, window, c), (hp, wp)


def window_unpartition(windows, window, padded, size):
    """SamVisionLayer.window_unpartition: the inverse permutation, padding cropped."""
    hp, wp = padded
    b = windows.shape[0] // (hp // window * (wp // window))
    x = windows.reshape(b, hp // window, wp // window, window, window, -1).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, hp, wp, -1)[:, :size[0], :size[1]]


class SamAttention(nn.Module):
    """SamVisionAttention with use_rel_pos = False, as lightning-pose sets it: rel_pos_h
    and rel_pos_w stay in the state_dict (2 * 64 - 1 rows in the global layers, 2 * 14 - 1
    in the windowed ones) but take no part."""

    def __init__(self, width, heads, rel_side):
        super().__init__()
        self.heads = heads
        self.rel_pos_h = nn.Parameter(torch.zeros(2 * rel_side - 1, width // heads))
        self.rel_pos_w = nn.Parameter(torch.zeros(2 * rel_side - 1, width // heads))
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)

    def forward(self, x):
        b, h, w, c = x.shape
        qkv = self.qkv(x).reshape(b, h * w, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, b * self.heads, h * w, c // self.heads).unbind(0)
        # HF: softmax(dtype=torch.float32).to(q.dtype), which is plain softmax in float32;
        # the float64 reference keeps float64 to stay exact.
        probs = torch.softmax((q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1), dim=-1)
        out = (probs @ v).reshape(b, self.heads, h, w, c // self.heads).permute(0, 2, 3, 1, 4)
        return self.proj(out.reshape(b, h, w, c))


class SamMlp(nn.Module):
    def __init__(self, width, mlp):
        super().__init__()
        self.lin1, self.lin2 = nn.Linear(width, mlp), nn.Linear(mlp, width)

    def forward(self, x):
        return self.lin2(F.gelu(self.lin1(x)))  # exact (erf), SamVisionConfig's "gelu"


class SamLayer(nn.Module):
    """transformers' SamVisionLayer; window 0: global attention over the whole grid."""

    def __init__(self, width, heads, mlp, window):
        super().__init__()
        self.window = window
        self.layer_norm1 = nn.LayerNorm(width, eps=SAM_EPS)
        self.attn = SamAttention(width, heads, window if window else SAM_GRID)
        self.layer_norm2 = nn.LayerNorm(width, eps=SAM_EPS)
        self.mlp = SamMlp(width, mlp)

    def forward(self, x):
        residual, h = x, self.layer_norm1(x)
        if self.window:
            size = h.shape[1:3]
            h, padded = window_partition(h, self.window)
        h = self.attn(h)
        if self.window:
            h = window_unpartition(h, self.window, padded, size)
        x = residual + h
        return x + self.mlp(self.layer_norm2(x))


class SamLayerNorm2d(nn.Module):
    """SamLayerNorm (channels_first): only its parameters, the neck never runs."""

    def __init__(self, channels):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(channels)), nn.Parameter(torch.zeros(channels))


class SamNeck(nn.Module):
    """SamVisionNeck: in the state_dict, unused by VisionEncoderSam.forward."""

    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(width, SAM_NECK, kernel_size=1, bias=False)
        self.layer_norm1 = SamLayerNorm2d(SAM_NECK)
        self.conv2 = nn.Conv2d(SAM_NECK, SAM_NECK, kernel_size=3, padding=1, bias=False)
        self.layer_norm2 = SamLayerNorm2d(SAM_NECK)


class SamVisionEncoder(nn.Module):
    """transformers' SamVisionEncoder run as VisionEncoderSam.forward runs it: patch
    embedding (its size check bypassed) to NHWC, + pos_embed, the layers; no neck.
    `grid`: the position table's grid (64x64 in the file, the image's in a checkpoint)."""

    def __init__(self, width=768, heads=12, mlp=3072, layers=12, patch=16, grid=(SAM_GRID, SAM_GRID), **_):
        super().__init__()
        self.patch = patch
        self.pos_embed = nn.Parameter(torch.zeros(1, grid[0], grid[1], width))
        self.patch_embed = PatchEmbeddings(width, patch)
        self.layers = nn.ModuleList(SamLayer(width, heads, mlp, 0 if i in SAM_GLOBAL else SAM_WINDOW)
                                    for i in range(layers))
        self.neck = SamNeck(width)

    def forward(self, images):
        x = self.patch_embed.projection(images).permute(0, 2, 3, 1) + self.pos_embed
        for layer in self.layers:
            x = layer(x)
        return x


# ---- Hugging Face's Sam2HieraDetModel (SAM 2.1's image encoder), mirrored module by module ----
# Sam2HieraDetConfig as transformers' converter sets it for facebook/sam2.1-hiera-tiny,
# -small and -base-plus (lightning-pose's vitt_sam2, vits_sam2, vitb_sam2). All three:
# patch embedding Conv2d(3, C0, 7, stride 4, padding 3), windows [8, 4, 14, 7] per
# stage, query stride 2 at the first block of stages 1-3, MLP ratio 4, exact GELU,
# LayerNorm eps 1e-6; the FPN neck (Sam2VisionModel's, not the backbone's) is dropped
# by VisionEncoderSam2.
SAM2_WINDOWS, SAM2_POOL_STAGES, SAM2_QUERY_STRIDE, SAM2_EPS, SAM2_MLP = (8, 4, 14, 7), 3, 2, 1e-6, 4
SAM2_PATCH = dict(kernel=7, stride=4, padding=3)
SAM2_CONFIGS = {
    "vitt_sam2": dict(dims=(96, 192, 384, 768), heads=(1, 2, 4, 8), blocks=(1, 2, 7, 2), global_blocks=(5, 7, 9),
                      background=7),
    "vits_sam2": dict(dims=(96, 192, 384, 768), heads=(1, 2, 4, 8), blocks=(1, 2, 11, 2),
                      global_blocks=(7, 10, 13), background=7),
    "vitb_sam2": dict(dims=(112, 224, 448, 896), heads=(2, 4, 8, 16), blocks=(2, 3, 16, 3),
                      global_blocks=(12, 16, 20), background=14),
}
SAM2_STRIDE = SAM2_PATCH["stride"] * SAM2_QUERY_STRIDE ** SAM2_POOL_STAGES  # 32: BACKBONE_STRIDES' for all three


def sam2_blocks(cfg):
    """(dim, dim_out, heads, window, pool) of each block in order: a stage's first block
    (stages 1-3) takes the previous stage's width and window and pools its queries; a
    global block has window 0 (attention over the whole grid)."""
    out = []
    for stage, count in enumerate(cfg["blocks"]):
        for i in range(count):
            entering = stage > 0 and i == 0
            window = SAM2_WINDOWS[stage - 1 if entering else stage]
            out.append((cfg["dims"][stage - 1 if entering else stage], cfg["dims"][stage], cfg["heads"][stage],
                        0 if len(out) in cfg["global_blocks"] else window,
                        entering and stage <= SAM2_POOL_STAGES))
    return out


def pool_nhwc(x):
    """do_pool: max_pool2d 2x2, stride 2 (floor) over the H and W of a [B, H, W, C] tensor."""
    return F.max_pool2d(x.permute(0, 3, 1, 2), SAM2_QUERY_STRIDE, SAM2_QUERY_STRIDE).permute(0, 2, 3, 1)


class Sam2Attention(nn.Module):
    """Sam2MultiScaleAttention: qkv Linear(dim, 3 dim_out) read as [tokens, 3, heads,
    head_dim]; with query stride, the queries (heads side by side in the channels) are
    max-pooled over each window's (or the whole grid's) H x W; eager softmax attention
    scaled by head_dim^-1/2, then proj."""

    def __init__(self, dim, dim_out, heads, pool):
        super().__init__()
        self.dim_out, self.heads, self.pool = dim_out, heads, pool
        self.qkv, self.proj = nn.Linear(dim, 3 * dim_out), nn.Linear(dim_out, dim_out)

    def forward(self, x):
        b, h, w, _ = x.shape
        head_dim = self.dim_out // self.heads
        q, k, v = self.qkv(x).reshape(b, h * w, 3, self.heads, head_dim).unbind(2)
        if self.pool:
            q = pool_nhwc(q.reshape(b, h, w, self.dim_out))
            h, w = q.shape[1:3]
            q = q.reshape(b, h * w, self.heads, head_dim)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, heads, tokens, head_dim]
        probs = torch.softmax(q @ k.transpose(2, 3) * head_dim ** -0.5, dim=-1)
        return self.proj((probs @ v).transpose(1, 2).reshape(b, h, w, self.dim_out))


class Sam2FeedForward(nn.Module):
    """Sam2FeedForward with num_layers 2: proj_out(GELU(proj_in(x))), exact (erf) GELU."""

    def __init__(self, width, hidden):
        super().__init__()
        self.proj_in, self.proj_out = nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, x):
        return self.proj_out(F.gelu(self.proj_in(x)))


class Sam2Block(nn.Module):
    """Sam2MultiScaleBlock. Windowed (window > 0): layer_norm1's output zero-padded at the
    bottom and right to multiples of the window and cut into windows (a padded token's
    q, k and v are the qkv biases, and it takes part as a key); with query stride the
    windows come back halved and are laid out on the pooled grid padded to multiples of
    the halved window, then cropped. dim != dim_out: the residual is
    max_pool(proj(layer_norm1(x))) on the (unpadded) grid."""

    def __init__(self, dim, dim_out, heads, window, pool):
        super().__init__()
        self.window, self.pool, self.changes_width = window, pool, dim != dim_out
        self.layer_norm1 = nn.LayerNorm(dim, eps=SAM2_EPS)
        self.attn = Sam2Attention(dim, dim_out, heads, pool)
        self.layer_norm2 = nn.LayerNorm(dim_out, eps=SAM2_EPS)
        self.mlp = Sam2FeedForward(dim_out, SAM2_MLP * dim_out)
        if self.changes_width:
            self.proj = nn.Linear(dim, dim_out)
        self.layout = None  # (grid, window, padded grid) of the last forward, for selftest-sam2

    def forward(self, x):
        normed = self.layer_norm1(x)
        residual = x
        if self.changes_width:
            residual = self.proj(normed)
            residual = pool_nhwc(residual) if self.pool else residual
        grid = tuple(residual.shape[1:3])  # the output's grid
        if not self.window:
            out = self.attn(normed)
            self.layout = (tuple(x.shape[1:3]), 0, tuple(x.shape[1:3]))
        else:
            windows, padded = window_partition(normed, self.window)
            self.layout = (tuple(x.shape[1:3]), self.window, padded)
            out = self.attn(windows)
            window = self.window // SAM2_QUERY_STRIDE if self.pool else self.window
            out_padded = tuple(-(-side // window) * window for side in grid)
            assert out.shape[0] == x.shape[0] * (out_padded[0] // window) * (out_padded[1] // window), \
                "the pooled windows do not tile the pooled grid"
            out = window_unpartition(out, window, out_padded, grid)
        x = residual + out
        return x + self.mlp(self.layer_norm2(x))


class Sam2PatchEmbeddings(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.projection = nn.Conv2d(3, width, kernel_size=SAM2_PATCH["kernel"], stride=SAM2_PATCH["stride"],
                                    padding=SAM2_PATCH["padding"])


def sam2_pos_embed(table, window_table, grid):
    """Sam2HieraDetModel._get_pos_embed: the [1, C, b, b] table bicubic-resized to the
    token grid on every forward (F.interpolate's defaults: align_corners False, no
    antialias, i.e. cubic convolution a = -0.75 with border-clamped taps), plus the
    [1, C, 8, 8] window table tiled over the grid; NHWC [1, h, w, C]."""
    resized = F.interpolate(table, size=tuple(grid), mode="bicubic", align_corners=False)
    reps = [a // b for a, b in zip(resized.shape, window_table.shape)]
    return (resized + window_table.tile(reps)).permute(0, 2, 3, 1)


class Sam2HieraDet(nn.Module):
    """transformers' Sam2HieraDetModel (same state_dict keys) run as VisionEncoderSam2
    runs it: last_hidden_state, NHWC [N, H/32, W/32, C3]. The tables are used at their
    own size (no resize at load, in a file or a checkpoint)."""

    def __init__(self, dims, heads, blocks, global_blocks, background):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, dims[0], background, background))
        self.pos_embed_window = nn.Parameter(torch.zeros(1, dims[0], SAM2_WINDOWS[0], SAM2_WINDOWS[0]))
        self.patch_embed = Sam2PatchEmbeddings(dims[0])
        layout = dict(dims=dims, heads=heads, blocks=blocks, global_blocks=global_blocks)
        self.blocks = nn.ModuleList(Sam2Block(*spec) for spec in sam2_blocks(layout))
        self.stage_ends = [int(e) for e in np.cumsum(blocks) - 1]

    def forward(self, images, stages=None):
        x = self.patch_embed.projection(images).permute(0, 2, 3, 1)
        x = x + sam2_pos_embed(self.pos_embed, self.pos_embed_window, x.shape[1:3])
        for i, block in enumerate(self.blocks):
            x = block(x)
            if stages is not None and i in self.stage_ends:
                stages.append(tuple(x.shape))
        return x


# ---- write -------------------------------------------------------------------------------
DINOV2 = dict(patch=14, grid=37, dinov2=True)  # facebook/dinov2-small: 518 / 14 = 37
VIT_B = dict(width=768, heads=12, mlp=3072)
# vitb_imagenet: MAE's encoder read into a plain ViTModel (ViT-B, ViTConfig's eps).
SPECS = {"dino": {}, "dinov2": DINOV2, "dinov3": dict(dinov3=True), "mae": VIT_B, "vitb": VIT_B,
         "sam": dict(VIT_B, sam=True)}
NAMES = {"dino": "vits_dino", "dinov2": "vits_dinov2", "dinov3": "vits_dinov3", "vitb": "vitb_dino / vitb_imagenet",
         "sam": "vitb_sam"}
SAM_EXTRA = {"shared_image_embedding.positional_embedding": (2, 128),  # SamModel's, not the backbone's
             "prompt_encoder.no_mask_embed.weight": (1, 256), "mask_decoder.iou_token.weight": (1, 256)}
# SAM 2.1 (kind sam2, one of SAM2_CONFIGS' names): Sam2HieraDetModel's keys, no resize.
SPECS.update({name: dict(sam2=name) for name in SAM2_CONFIGS})
NAMES.update({name: name for name in SAM2_CONFIGS})
SAM2_FPN = 256  # Sam2VisionConfig.fpn_hidden_size: the neck's 1x1 convs from [C3, C2, C1, C0] to 256
SAM2_EXTRA_BEFORE = {"shared_image_embedding.positional_embedding": (2, 128)}  # Sam2Model's, not the backbone's
SAM2_EXTRA_AFTER = {"prompt_encoder.shared_embedding.positional_embedding": (2, 128),
                    "prompt_encoder.no_mask_embed.weight": (1, 256), "mask_decoder.iou_token.weight": (1, 256),
                    "mask_decoder.conv_s0.weight": (32, 256, 1, 1), "no_memory_embedding": (1, 1, 256)}


def encoder_tensors(weights):
    """The file's encoder tensors under ViTModel's (SamVisionEncoder's) keys: MAE's
    ViTMAEForPreTraining file holds them as vit.*, beside a decoder.* that is not the
    backbone's; SAM's SamModel file as vision_encoder.*, beside the prompt encoder,
    the mask decoder and shared_image_embedding, none of them the backbone's; SAM 2.1's
    Sam2Model file as vision_encoder.backbone.*, beside the FPN neck (vision_encoder.neck.*,
    which VisionEncoderSam2 drops), the prompt encoder, the mask decoder and more."""
    sam2 = "vision_encoder.backbone."
    if any(k.startswith(sam2) for k in weights):
        return {k[len(sam2):]: v for k, v in weights.items() if k.startswith(sam2)}
    if any(k.startswith("vision_encoder.") for k in weights):
        return {k[len("vision_encoder."):]: v for k, v in weights.items() if k.startswith("vision_encoder.")}
    out = {}
    for k, v in weights.items():
        k = k[len("vit."):] if k.startswith("vit.") else k
        if not k.startswith(("pooler.", "decoder.")):
            out[k] = v
    return out


def make_sam2_weights(name):
    """A SAM 2.1 Sam2Model file's tensors (`name`: vitt_sam2, vits_sam2, vitb_sam2): the
    backbone under vision_encoder.backbone., with trained-looking values (a smooth
    background table, a rough window table, LayerNorm gains around 1, non-zero biases),
    beside the FPN neck's 1x1 convs, the prompt encoder, the mask decoder and
    no_memory_embedding, none of which the trainer may take."""
    rng = np.random.default_rng(7)
    cfg = SAM2_CONFIGS[name]
    tensors = {}
    for key, p in Sam2HieraDet(**cfg).state_dict().items():
        shape = tuple(p.shape)
        if key == "pos_embed":  # [1, C, b, b]: waves of 0.2 to 1.5 periods over the grid
            _, c, gh, gw = shape
            yy, xx = np.meshgrid(np.arange(gh) / gh, np.arange(gw) / gw, indexing="ij")
            freq = 2 * np.pi * rng.uniform(0.2, 1.5, size=(c, 2)) * rng.choice([-1.0, 1.0], size=(c, 2))
            phase = rng.uniform(0, 2 * np.pi, size=c)
            waves = np.sin(freq[:, 0, None, None] * yy + freq[:, 1, None, None] * xx + phase[:, None, None])
            value = (0.1 * rng.standard_normal((c, 1, 1)) + 0.3 * waves)[None]
        elif key == "pos_embed_window":  # [1, C, 8, 8], added to every 8x8 tile of the grid
            value = 0.2 * rng.standard_normal(shape)
        elif "norm" in key and key.endswith("weight"):
            value = 1.0 + 0.2 * rng.standard_normal(shape)
        elif key.endswith("bias"):
            value = 0.05 * rng.standard_normal(shape)
        else:
            value = rng.standard_normal(shape) / np.sqrt(int(np.prod(shape[1:])))
        tensors["vision_encoder.backbone." + key] = value.astype(np.float32)
    for j, channels in enumerate(reversed(cfg["dims"])):  # Sam2VisionNeck: backbone_channel_list [C3, ..., C0]
        tensors[f"vision_encoder.neck.convs.{j}.weight"] = (rng.standard_normal((SAM2_FPN, channels, 1, 1)) /
                                                            np.sqrt(channels)).astype(np.float32)
        tensors[f"vision_encoder.neck.convs.{j}.bias"] = (0.05 * rng.standard_normal(SAM2_FPN)).astype(np.float32)
    extra = lambda table: {k: rng.standard_normal(v).astype(np.float32) for k, v in table.items()}  # noqa: E731
    return dict(**extra(SAM2_EXTRA_BEFORE), **tensors, **extra(SAM2_EXTRA_AFTER))  # Sam2Model's order


def make_weights(kind="dino", layers=12):
    """The tensors `write` saves, in the file's layout."""
    if kind in SAM2_CONFIGS:
        return make_sam2_weights(kind)
    rng = np.random.default_rng(7)
    spec = dict(dict(width=384, heads=6, mlp=1536), **SPECS[kind], layers=layers)
    width = spec["width"]
    model = (Dinov3Model(**spec) if kind == "dinov3" else SamVisionEncoder(**spec) if kind == "sam" else
             ViTModel(**spec))
    tensors = {}
    for name, p in model.state_dict().items():
        shape = tuple(p.shape)
        if name.endswith("lambda1"):  # trained layer scales are small
            value = 0.1 * np.exp(0.5 * rng.standard_normal(shape))
        elif ("layernorm" in name or "norm" in name) and name.endswith("weight"):
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
        elif name == "pos_embed":  # SAM's [1, 64, 64, C]: smooth too, but with waves of 0.3 to 4
            # periods over the grid, many slow enough to outlive the antialiased shrink to 4x4
            _, gh, gw, c = shape
            yy, xx = np.meshgrid(np.arange(gh), np.arange(gw), indexing="ij")
            freq = rng.uniform(0.03, 0.4, size=(c, 2)) * rng.choice([-1.0, 1.0], size=(c, 2))
            phase = rng.uniform(0, 2 * np.pi, size=c)
            waves = np.sin(freq[:, 0, None, None] * yy + freq[:, 1, None, None] * xx + phase[:, None, None])
            value = (0.1 * rng.standard_normal((c, 1, 1)) + 0.3 * waves).transpose(1, 2, 0)[None]
        elif "register_tokens" in name:
            value = 0.5 * rng.standard_normal(shape)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            value = rng.standard_normal(shape) / np.sqrt(fan_in)
        tensors[name] = value.astype(np.float32)
    if kind == "mae":  # ViTMAEForPreTraining's layout: the encoder under vit., and a decoder
        tensors = {"vit." + k: v for k, v in tensors.items()}
        tensors["decoder.decoder_embed.weight"] = rng.standard_normal((512, width)).astype(np.float32)
        tensors["decoder.decoder_norm.weight"] = np.ones(512, dtype=np.float32)
    elif kind == "sam":  # SamModel's layout, in its state_dict order: the encoder under vision_encoder.
        extra = {k: rng.standard_normal(shape).astype(np.float32) for k, shape in SAM_EXTRA.items()}
        tensors = dict(list(extra.items())[:1] + [("vision_encoder." + k, v) for k, v in tensors.items()] +
                       list(extra.items())[1:])
    else:
        tensors["pooler.dense.weight"] = rng.standard_normal((width, width)).astype(np.float32)  # not the backbone's
        tensors["pooler.dense.bias"] = np.zeros(width, dtype=np.float32)
    return tensors


def write(path, kind="dino", layers=12):
    tensors = make_weights(kind, layers)
    write_safetensors(path, tensors)
    print(f"wrote {path}: {len(tensors)} tensors")
    return 0


# ---- check -------------------------------------------------------------------------------
def run_torch(weights, head, images, kp, keypoints, downsample, dtype, kind, rope_rescale=None, trained=False):
    """trained: `weights` is a trained state, whose DINOv2 patch kernels are 16x16 already
    and whose SAM position table is on the image's patch grid already."""
    resize = kind == "dinov2" and not trained
    spec = dict(SPECS[kind], patch=16) if kind == "dinov2" and trained else SPECS[kind]
    if kind == "sam":  # the table's own grid: the file's 64x64, or a checkpoint's resized one
        spec = dict(spec, grid=tuple(weights["pos_embed"].shape[1:3]))
    net = HeatmapNet(keypoints, downsample, **spec)
    state = {"backbone.vision_encoder." + k: torch.from_numpy(v) for k, v in encoder_tensors(weights).items()}
    state.update({k: torch.from_numpy(v) for k, v in head.items()})
    net.load_state_dict(state, strict=True)
    if resize:  # in float64 before any cast, as the file's float32 values are
        net.backbone.vision_encoder.double().resize_patch_kernels(16)
    if kind == "sam" and not trained:  # at load, in float64 as above
        encoder = net.backbone.vision_encoder.double()
        grid = (images.shape[2] // encoder.patch, images.shape[3] // encoder.patch)
        encoder.pos_embed = nn.Parameter(resize_sam_pos_embed(encoder.pos_embed.data, grid))
    net = net.to(dtype).train()
    if kind == "dinov3":
        net.backbone.vision_encoder.rope_rescale = rope_rescale
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
        if p.grad is not None:  # DINOv2's and DINOv3's mask_token, SAM's rel_pos and neck take no part
            out["grad"][name] = p.grad.double().numpy().copy()
    optimizer.step()
    for name, p in net.named_parameters():
        if p.grad is None:
            continue
        out["param"][name] = p.detach().double().numpy().copy()
        out["exp_avg"][name] = optimizer.state[p]["exp_avg"].double().numpy().copy()
        out["exp_avg_sq"][name] = optimizer.state[p]["exp_avg_sq"].double().numpy().copy()
    return out


def read_model(path):
    with h5py.File(path, "r") as f:
        return {name: np.array(f["model"][name]) for name in f["model"]}


def check_trained_start(model, checkpoint_path, weights, failures):
    """The step started from the checkpoint (bit for bit), which training moved away
    from the weights file; returns the checkpoint's backbone under ViTModel's keys."""
    trained = read_model(checkpoint_path)
    if set(trained) != set(model):
        failures.append(f"the step's tensors are not the checkpoint's: {sorted(set(trained) ^ set(model))[:5]}")
    for name in sorted(set(trained) & set(model)):
        if not np.array_equal(trained[name], model[name]):
            failures.append(f"{name}: not the checkpoint's")
    prefix = "backbone.vision_encoder."
    backbone = {k[len(prefix):]: v for k, v in model.items() if k.startswith(prefix)}
    moved = [rel(v, weights[k]) for k, v in backbone.items() if k in weights and v.shape == weights[k].shape]
    median = float(np.median(moved)) if moved else 0.0
    print(f"trained start: {len(trained)} tensors as in {os.path.basename(checkpoint_path)}; the backbone moved "
          f"from the file by a median {median:.1e} per tensor (max {max(moved, default=0):.1e})")
    if median < 1e-3:
        failures.append(f"the checkpoint is not a trained state (median change {median:.2g} from the weights file)")
    return backbone


def check(export_dir, weights_path, trained_path=None):
    failures = []
    weights = encoder_tensors(read_safetensors(weights_path))
    model = read_model(os.path.join(export_dir, "initial.h5"))
    head = {k: v for k, v in model.items() if k.startswith("head.")}
    keypoints = head["head.deconv0.weight"].shape[1]

    # The trainer loaded every backbone tensor of the file, bit for bit (DINOv2's
    # patch kernels, SAM's position table: resized as lightning-pose resizes them),
    # and nothing else.
    backbone = {k: v for k, v in model.items() if k.startswith("backbone.")}
    pos_embed = "backbone.vision_encoder.pos_embed"
    family = (sam2_family(backbone) if pos_embed + "_window" in backbone else
              "sam" if pos_embed in backbone else
              "dinov3" if "backbone.vision_encoder.embeddings.register_tokens" in backbone else
              "dinov2" if "backbone.vision_encoder.embeddings.mask_token" in backbone else
              "vitb" if backbone["backbone.vision_encoder.embeddings.cls_token"].shape[-1] == 768 else "dino")
    if family is None:
        return report([f"a SAM2 backbone of none of the configurations {sorted(SAM2_CONFIGS)}"])
    stride = head_stride(SPECS[family])
    downsample = int(math.log2(stride)) - 1 - sum(1 for k in head if k.endswith(".weight"))
    dinov2 = family == "dinov2"
    expected = {"backbone.vision_encoder." + k for k in weights}
    if trained_path:
        weights = check_trained_start(model, trained_path, weights, failures)
        expected = set()  # the names were checked against the checkpoint's
    elif set(backbone) != expected:
        failures.append(f"names differ: missing {sorted(expected - set(backbone))[:5]}, "
                        f"extra {sorted(set(backbone) - expected)[:5]}")
    kernel = "backbone.vision_encoder.embeddings.patch_embeddings.projection.weight"
    for name in sorted(expected & set(backbone)):
        stored = weights[name[len("backbone.vision_encoder."):]]
        if dinov2 and name == kernel:
            ref = ViTModel(**DINOV2).double()
            ref.embeddings.patch_embeddings.projection.weight.data = torch.from_numpy(stored).double()
            ref.resize_patch_kernels(16)
            resized = ref.embeddings.patch_embeddings.projection.weight.data.numpy()
            err = rel(backbone[name], resized)
            print(f"patch kernels 14 -> 16: error {err:.2e} against PyTorch's antialiased bicubic in float64")
            if err > 1e-6:
                failures.append(f"{name}: resized kernel error {err:.3g}")
        elif family == "sam" and name == pos_embed:
            with h5py.File(os.path.join(export_dir, "batch.h5"), "r") as f:
                grid = tuple(side // 16 for side in f["images"].shape[2:])
            resized = resize_sam_pos_embed(torch.from_numpy(stored).double(), grid).numpy()
            if backbone[name].shape != resized.shape:
                failures.append(f"{name}: shape {backbone[name].shape}, not {resized.shape} for the images")
            elif resized.shape == stored.shape:  # the image's grid is the table's: no resize
                if not np.array_equal(backbone[name], stored):
                    failures.append(f"{name}: not loaded as in the file")
            else:
                err = rel(backbone[name], resized)
                print(f"pos_embed {stored.shape[1]}x{stored.shape[2]} -> {grid[0]}x{grid[1]}: error {err:.2e} "
                      f"against PyTorch's antialiased bicubic in float64")
                if err > 1e-6:
                    failures.append(f"{name}: resized table error {err:.3g}")
        elif not np.array_equal(backbone[name], stored):
            failures.append(f"{name}: not loaded as in the file")
    if not trained_path:
        print(f"weights: {len(backbone)} backbone tensors as in {os.path.basename(weights_path)}")

    with h5py.File(os.path.join(export_dir, "batch.h5"), "r") as f:
        images = np.array(f["images"])
        kp = np.array(f["keypoints"], dtype=np.float64)
        ours = {"loss": float(np.array(f["loss"])[0]), "grad": {n: np.array(f["grad"][n]) for n in f["grad"]}}
        rope_rescale = float(np.array(f["rope_rescale"])[0]) if "rope_rescale" in f else None
    if family == "dinov3":
        # DINOv3 trains with its RoPE coordinates rescaled (pos_embed_rescale = 2), by a
        # factor the trainer draws per step and exports.
        if rope_rescale is None or not 0.5 <= rope_rescale <= 2.0:
            failures.append(f"DINOv3's train-mode RoPE factor: {rope_rescale} in the export, not one in [1/2, 2]")
            rope_rescale = None
        else:
            print(f"RoPE coordinate factor of the step: {rope_rescale:.9g}")
    elif rope_rescale is not None:
        failures.append(f"a RoPE factor ({rope_rescale}) exported for {family}, which has no RoPE")
    # A trained SAM state's table is on the images' patch grid already (it is not resized again).
    if family == "sam" and trained_path and weights["pos_embed"].shape[1:3] != tuple(s // 16 for s in images.shape[2:]):
        failures.append(f"the checkpoint's pos_embed {weights['pos_embed'].shape} is not on the images' patch grid")
        return report(failures)
    with h5py.File(os.path.join(export_dir, "after.h5"), "r") as f:
        for kind, group in (("param", "model"), ("exp_avg", "optimizer/exp_avg"), ("exp_avg_sq", "optimizer/exp_avg_sq")):
            ours[kind] = {n: np.array(f[group][n]) for n in ours["grad"]}

    trained = trained_path is not None
    exact = run_torch(weights, head, images, kp, keypoints, downsample, torch.float64, family, rope_rescale, trained)
    t32 = run_torch(weights, head, images, kp, keypoints, downsample, torch.float32, family, rope_rescale, trained)
    loss_rel = abs(ours["loss"] - exact["loss"]) / abs(exact["loss"])
    print(f"loss: ours {ours['loss']:.9g} torch64 {exact['loss']:.9g} rel {loss_rel:.2e}")
    if loss_rel > LIMIT:
        failures.append(f"loss rel {loss_rel:.3g}")
    zero_grad = f"head.deconv{int(math.log2(stride)) - downsample - 2}.bias"
    for kind in ("grad", "exp_avg", "exp_avg_sq", "param"):
        worst, errs = (0.0, 0.0, ""), []
        exact_k, t32_k, ours_k = (split_qkv_bias(d[kind]) for d in (exact, t32, ours))
        scale = np.sqrt(sum(norm(v) ** 2 for v in exact_k.values()))
        for name, ref in exact_k.items():
            if name not in ours_k:
                failures.append(f"{kind} {name}: missing from the export")
                continue
            mine = ours_k[name].reshape(ref.shape)
            if name == zero_grad:  # exempt: a sum of rounding noise over every heatmap pixel
                print(f"{kind:10s}: {name} (exempt) |diff| {norm(mine - ref):.2e}, PyTorch float32 "
                      f"{norm(t32_k[name] - ref):.2e}, all tensors' norm {scale:.2e}")
                continue
            if name.endswith(("attention.attention.key.bias", "attn.qkv.bias[key]")):
                bar = max(LIMIT * scale, 3 * norm(t32_k[name] - ref))  # or PyTorch float32's own noise
                if norm(mine - ref) > bar:
                    failures.append(f"{kind} {name}: |diff| {norm(mine - ref):.3g} > {bar:.3g}")
                continue
            err, err32 = rel(mine, ref), rel(t32_k[name], ref)
            worst = max(worst, (err, err32, name))
            errs.append(err)
            if err > max(LIMIT, 3 * err32):
                failures.append(f"{kind} {name}: error {err:.3g} (PyTorch float32: {err32:.3g})")
        print(f"{kind:10s}: worst error {worst[0]:.2e} ({worst[2]}; PyTorch float32 there: {worst[1]:.2e}); "
              f"mean {float(np.mean(errs)):.2e} over {len(errs)} tensors")
    # Tensors PyTorch gives no gradient (DINOv2's and DINOv3's mask_token, SAM's rel_pos
    # tables and neck): Adam skips them there, so the export's gradient must be zero and
    # the step must leave them bit for bit as they were.
    unused = sorted(set(ours["grad"]) - set(exact["grad"]))
    for name in unused:
        if np.any(ours["grad"][name] != 0):
            failures.append(f"grad {name}: not zero for a tensor the forward does not use")
        if name not in model or not np.array_equal(ours["param"][name], model[name]):
            failures.append(f"param {name}: changed by the step, though the forward does not use it")
    if unused:
        print(f"unused    : {len(unused)} tensors with zero gradient, unchanged by the step")
    if failures:
        return report(failures)
    print(f"PASSED: {NAMES[family]}, {keypoints} keypoints, d = {downsample}, "
          f"images {images.shape}{', from a trained checkpoint' if trained else ''}")
    return 0


def sam2_family(backbone):
    """The SAM2 backbone name of a trainer model's tensors: its width and block count."""
    prefix = "backbone.vision_encoder."
    width = backbone[prefix + "pos_embed"].shape[1]
    blocks = len({k.split(".")[3] for k in backbone if k.startswith(prefix + "blocks.")})
    for name, cfg in SAM2_CONFIGS.items():
        if cfg["dims"][0] == width and sum(cfg["blocks"]) == blocks:
            return name
    return None


def report(failures):
    print("FAILED:")
    for line in failures[:30]:
        print("  " + line)
    return 1


def split_qkv_bias(tensors):
    """SAM's attention key biases are the middle third of each fused qkv.bias: split
    out as NAME[key] (compared absolutely, as the other ViTs' key.bias) beside
    NAME[query,value] (compared as any tensor). Other tensors pass through."""
    out = {}
    for name, value in tensors.items():
        if name.endswith("attn.qkv.bias"):
            value = value.reshape(-1)
            third = value.shape[0] // 3
            out[name + "[query,value]"] = np.concatenate((value[:third], value[2 * third:]))
            out[name + "[key]"] = value[third:2 * third]
        else:
            out[name] = value
    return out


# ---- selftest-sam: the SAM reference checked against itself, no trainer needed -----------
def keys_resize_matrix(n_in, n_out):
    """[n_out, n_in] weights of PyTorch's antialiased bicubic along one axis (PIL's filter):
    Keys a = -0.5, support 2 stretched by in/out when shrinking, taps normalised,
    output o centred at in/out * (o + 0.5)."""
    def keys(x):
        x = abs(x)
        return (1.5 * x - 2.5) * x * x + 1 if x < 1 else ((-0.5 * x + 2.5) * x - 4) * x + 2 if x < 2 else 0.0
    scale = n_in / n_out
    stretch = max(scale, 1.0)
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        center = scale * (o + 0.5)
        lo, hi = max(int(center - 2 * stretch + 0.5), 0), min(int(center + 2 * stretch + 0.5), n_in)
        taps = np.array([keys((j - center + 0.5) / stretch) for j in range(lo, hi)])
        m[o, lo:hi] = taps / taps.sum()
    return m


def selftest_sam():
    failures = []
    torch.manual_seed(0)
    # 1. One 14x14 window is the whole grid: windowed attention == global attention.
    windowed, whole = SamLayer(768, 12, 3072, SAM_WINDOW).double(), SamLayer(768, 12, 3072, 0).double()
    for p in windowed.parameters():
        p.data.normal_(0, 0.05)
    whole.load_state_dict({k: v for k, v in windowed.state_dict().items() if "rel_pos" not in k}, strict=False)
    x = torch.randn(2, 14, 14, 768, dtype=torch.float64)
    err = rel(windowed(x).detach().numpy(), whole(x).detach().numpy())
    print(f"14x14 grid, windowed vs global layer: error {err:.1e}")
    failures += [f"windowed != global on one window: {err:.3g}"] if err > 1e-13 else []
    # ... and on a 4x4 grid the padded tokens do take part (HF does not mask them).
    x = torch.randn(2, 4, 4, 768, dtype=torch.float64)
    err = rel(windowed(x).detach().numpy(), whole(x).detach().numpy())
    print(f"4x4 grid padded to 14x14, windowed vs global layer: differ by {err:.1e} (the padded keys)")
    failures += ["padded tokens take no part"] if err < 1e-6 else []
    # 2. Partition -> unpartition is the identity on the real tokens; padding is zero.
    x = torch.randn(2, 17, 30, 8, dtype=torch.float64)
    windows, padded = window_partition(x, SAM_WINDOW)
    back = window_unpartition(windows, SAM_WINDOW, padded, (17, 30))
    ok = (windows.shape == (2 * 2 * 3, 14, 14, 8) and padded == (28, 42) and torch.equal(back, x)
          and torch.equal(windows[1], x[0, :14, 14:28]) and windows.pow(2).sum() == x.pow(2).sum())
    print(f"17x30 grid: {windows.shape[0]} windows of 14x14, round trip {'exact' if ok else 'WRONG'}")
    failures += [] if ok else ["window partition round trip"]
    # 3. The position table's resize is the separable antialiased Keys filter.
    table = torch.from_numpy(make_weights("sam", layers=0)["vision_encoder.pos_embed"]).double()
    for grid in ((4, 4), (16, 16), (4, 8), (64, 64)):
        mine = np.einsum("oh,pw,nhwc->nopc", keys_resize_matrix(64, grid[0]), keys_resize_matrix(64, grid[1]),
                         table.numpy())
        resized = resize_sam_pos_embed(table, grid).numpy()
        err = rel(resized, mine)
        print(f"pos_embed 64x64 -> {grid[0]}x{grid[1]}: F.interpolate vs Keys weights {err:.1e} in float64; "
              f"table norm {norm(resized) / math.sqrt(np.prod(grid)):.3f} per position")
        failures += [f"pos_embed resize to {grid}: {err:.3g}"] if err > 1e-12 else []
    # 4. A whole step (pos_embed resized at load, head, loss, backward, Adam) in float64.
    weights = encoder_tensors(make_weights("sam"))
    rng = np.random.default_rng(1)
    for size, batch, keypoints, downsample in ((64, 2, 3, 2), (256, 1, 2, 1)):
        head, channels = {}, 192
        for i in range(int(math.log2(16)) - downsample - 1):
            head[f"head.deconv{i}.weight"] = (rng.standard_normal((channels, keypoints, 3, 3)) / 30).astype(np.float32)
            head[f"head.deconv{i}.bias"] = (0.05 * rng.standard_normal(keypoints)).astype(np.float32)
            channels = keypoints
        images = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
        kp = rng.uniform(0, size, (batch, keypoints, 2))
        exact = run_torch(weights, head, images, kp, keypoints, downsample, torch.float64, "sam")
        t32 = run_torch(weights, head, images, kp, keypoints, downsample, torch.float32, "sam")
        unused = {"backbone.vision_encoder." + k for k in weights if "rel_pos" in k or k.startswith("neck.")}
        used = {"backbone.vision_encoder." + k for k in weights} - unused | set(head)
        grads = exact["grad"]
        key = max(norm(g[768:1536]) / norm(g) for n, g in grads.items() if n.endswith("attn.qkv.bias"))
        pos = grads["backbone.vision_encoder.pos_embed"]
        loss_err = abs(t32["loss"] - exact["loss"]) / exact["loss"]
        grad_err = max(rel(t32["grad"][n], g) for n, g in grads.items() if not n.endswith(("qkv.bias", "deconv0.bias",
                                                                                            "deconv1.bias")))
        print(f"{size}x{size} step in float64: loss {exact['loss']:.6g}, {len(grads)} gradients "
              f"(pos_embed {pos.shape}), key-bias gradient at most {key:.1e} of its qkv.bias's; float32 "
              f"loss {loss_err:.1e} and gradients {grad_err:.1e} from it")
        failures += [] if set(grads) == used else [f"{size}: gradients of {sorted(set(grads) ^ used)[:4]}"]
        failures += [] if pos.shape == (1, size // 16, size // 16, 768) else [f"pos_embed {pos.shape}"]
        failures += [] if np.isfinite(exact["loss"]) and key < 1e-8 else [f"{size}: loss or key-bias gradient"]
        failures += [] if loss_err < 1e-5 and grad_err < 1e-3 else [f"{size}: float32 far from float64"]
    if failures:
        return report(failures)
    print("PASSED: the SAM reference")
    return 0


# ---- selftest-sam2: the SAM2 reference checked against itself, no trainer needed ----------
def cubic_resize_matrix(n_in, n_out, a=-0.75):
    """[n_out, n_in] weights of PyTorch's bicubic without antialias, align_corners False,
    along one axis: output o samples the input at in/out * (o + 0.5) - 0.5 (not clamped),
    Keys' cubic convolution with a = -0.75 over the 4 nearest inputs, indices clamped to
    the border (a tap past it weighs on the edge input)."""
    def cubic(x):
        x = abs(x)
        return ((a + 2) * x - (a + 3)) * x * x + 1 if x <= 1 else ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        src = n_in / n_out * (o + 0.5) - 0.5
        base = math.floor(src)
        for tap in range(-1, 3):
            m[o, min(max(base + tap, 0), n_in - 1)] += cubic(src - (base + tap))
    return m


def sam2_param_count(cfg):
    """Sam2HieraDetModel's parameter count from its config alone: the patch embedding,
    the two position tables, and per block LayerNorms, qkv, proj, the MLP and (where the
    width changes) the residual's Linear."""
    c0 = cfg["dims"][0]
    k = SAM2_PATCH["kernel"]
    total = 3 * k * k * c0 + c0 + c0 * cfg["background"] ** 2 + c0 * SAM2_WINDOWS[0] ** 2
    linear = lambda i, o: i * o + o  # noqa: E731
    for stage, count in enumerate(cfg["blocks"]):
        d_out = cfg["dims"][stage]
        for i in range(count):
            d_in = cfg["dims"][stage - 1] if stage > 0 and i == 0 else d_out
            total += 2 * d_in + linear(d_in, 3 * d_out) + linear(d_out, d_out) + 2 * d_out
            total += linear(d_out, SAM2_MLP * d_out) + linear(SAM2_MLP * d_out, d_out)
            total += linear(d_in, d_out) if d_in != d_out else 0
    return total


def describe_layout(model, cfg):
    """Per stage: the grid, its window (0: global) and the padded grid of each block kind."""
    parts, start = [], 0
    for stage, count in enumerate(cfg["blocks"]):
        kinds = []
        for block in model.blocks[start:start + count]:
            grid, window, padded = block.layout
            text = (f"{grid[0]}/global" if not window else
                    f"{grid[0]}/w{window}" + (f"->{padded[0]}" if padded != grid else "") +
                    f" x{padded[0] // window * (padded[1] // window)}")
            text += " pooled" if block.pool else ""
            if text not in kinds:
                kinds.append(text)
        parts.append(f"s{stage} " + ", ".join(kinds))
        start += count
    return "; ".join(parts)


def selftest_sam2():
    failures = []
    torch.manual_seed(0)
    # 1. Partition -> unpartition is the identity on the real tokens, the padding is zero,
    # at the layouts of 64x64 to 256x256 images (and an odd one).
    for side, window in ((16, 8), (64, 8), (8, 4), (4, 14), (16, 14), (2, 7), (8, 7), (17, 30)):
        x = torch.randn(2, side, side + 3 * (side == 17), 5, dtype=torch.float64)
        windows, padded = window_partition(x, window)
        back = window_unpartition(windows, window, padded, tuple(x.shape[1:3]))
        count = 2 * (padded[0] // window) * (padded[1] // window)
        real = window_partition(torch.ones_like(x), window)[0]  # 1 on the real tokens, 0 on the padding
        ok = (windows.shape == (count, window, window, 5) and torch.equal(back, x) and real.sum() == x.numel()
              and torch.equal(windows[0, :min(window, side), :min(window, x.shape[2])], x[0, :window, :window])
              and not torch.any(windows[real == 0]))
        failures += [] if ok else [f"window partition of {side} in {window}"]
    print(f"window partition round trip, zero padding (16/8, 64/8, 8/4, 4/14, 16/14, 2/7, 8/7, 17x20/30): "
          f"{'exact' if not failures else 'WRONG'}")
    # 2. The queries max-pooled inside each window are the max-pool of the zero-padded
    # grid cut into halved windows, and laid out on the pooled grid they are the
    # max-pool of the grid itself (the pooled block's windows, even grids).
    pool_ok = True
    for side, window in ((16, 8), (32, 8), (8, 4), (16, 4), (4, 14), (8, 14), (16, 14), (64, 14)):
        x = torch.randn(2, side, side, 6, dtype=torch.float64)
        windows, padded = window_partition(x, window)
        pooled = pool_nhwc(windows)
        grid_padded = F.pad(x, (0, 0, 0, padded[1] - side, 0, padded[0] - side))
        half = window // SAM2_QUERY_STRIDE
        out_padded = tuple(-(-(s // 2) // half) * half for s in (side, side))
        pool_ok &= torch.equal(pooled, window_partition(pool_nhwc(grid_padded), half)[0])
        pool_ok &= out_padded == (padded[0] // 2, padded[1] // 2)
        pool_ok &= torch.equal(window_unpartition(pooled, half, out_padded, (side // 2, side // 2)), pool_nhwc(x))
    print(f"max-pool in windows == max-pool of the padded grid (16/8 .. 64/14): {'exact' if pool_ok else 'WRONG'}")
    failures += [] if pool_ok else ["pooling in windows"]
    # 3. The window table is tiled: position (y, x) gets pos_embed_window[..., y % 8, x % 8];
    # the background table's resize is cubic convolution (a = -0.75, border-clamped).
    files = {name: encoder_tensors(make_sam2_weights(name)) for name in ("vitt_sam2", "vitb_sam2")}
    for name, tensors in files.items():
        table = torch.from_numpy(tensors["pos_embed"]).double()
        window_table = torch.from_numpy(tensors["pos_embed_window"]).double()
        bg = table.shape[2]
        for side in (8, 16, 32, 64, 256):
            pos = sam2_pos_embed(table, window_table, (side, side))[0]
            rows = np.arange(side) % SAM2_WINDOWS[0]
            tiled = window_table[0].numpy()[:, rows][:, :, rows].transpose(1, 2, 0)
            m = cubic_resize_matrix(bg, side)
            mine = (m @ table[0].numpy() @ m.T).transpose(1, 2, 0) + tiled
            err = rel(pos.numpy(), mine)
            failures += [f"{name} pos embedding at {side}: {err:.3g}"] if err > 1e-13 else []
            if side in (16, 256):
                print(f"{name} pos embedding {bg}x{bg} -> {side}x{side} + 8x8 tiles: F.interpolate vs cubic "
                      f"weights {err:.1e} in float64")
    # 4. One window over the whole grid is global attention (plain and pooled blocks);
    # a 4x4 grid padded to 14x14 is not (HF does not mask the padded keys).
    for args, side in (((96, 96, 1, 8), 8), ((96, 192, 2, 8), 8), ((192, 384, 4, 4), 4), ((384, 384, 4, 14), 14)):
        pool = args[0] != args[1]
        windowed, whole = Sam2Block(*args, pool).double(), Sam2Block(*args[:3], 0, pool).double()
        for p in windowed.parameters():
            p.data.normal_(0, 0.1)
        whole.load_state_dict(windowed.state_dict())
        x = torch.randn(2, side, side, args[0], dtype=torch.float64)
        err = rel(windowed(x).detach().numpy(), whole(x).detach().numpy())
        failures += [f"windowed != global on one window {args}: {err:.3g}"] if err > 1e-13 else []
    x = torch.randn(2, 4, 4, 384, dtype=torch.float64)
    err = rel(windowed(x).detach().numpy(), whole(x).detach().numpy())
    print(f"one window over the grid == global attention (8/8, 8/8 pooled, 4/4 pooled, 14/14); 4x4 padded to 14: "
          f"differs by {err:.1e} (the padded keys)")
    failures += ["padded tokens take no part"] if err < 1e-6 else []
    # 5. Shapes per stage (the modules run on the meta device: shapes without data, batch
    # 2) and parameter counts against the config.
    for name, cfg in SAM2_CONFIGS.items():
        model = Sam2HieraDet(**cfg).to("meta")
        count, expected = sum(p.numel() for p in model.parameters()), sam2_param_count(cfg)
        print(f"{name}: {count} backbone parameters ({len(model.state_dict())} tensors; from the config: "
              f"{expected})")
        failures += [] if count == expected else [f"{name}: {count} parameters, the config's {expected}"]
        wrong = []
        for size in (64, 128, 256, 1024):
            stages = []
            with torch.no_grad():
                out = model(torch.empty(2, 3, size, size, device="meta"), stages)
            want = [(2, size // 4 >> s, size // 4 >> s, cfg["dims"][s]) for s in range(4)]
            wrong += [] if stages == want and out.shape == want[-1] else [f"{name} at {size}: {stages}"]
            if name == "vitt_sam2":
                print(f"  {size}x{size}: stages {[s[1:] for s in stages]}; {describe_layout(model, cfg)}")
        if name != "vitt_sam2":
            print(f"  stages at 64/128/256/1024: {'as expected' if not wrong else 'WRONG'} (grids as the tiny's, "
                  f"widths {cfg['dims']})")
        failures += wrong
    # 6. A whole step in float64 (the tiny at 64; the parity cases run the others): every
    # backbone tensor gets a gradient, the key biases' is zero, PyTorch float32 agrees.
    rng = np.random.default_rng(1)
    for name, size, batch, keypoints, downsample in (("vitt_sam2", 64, 2, 3, 2),):
        weights = files[name]
        head, channels = {}, SAM2_CONFIGS[name]["dims"][-1] // 4
        for i in range(int(math.log2(SAM2_STRIDE)) - downsample - 1):
            head[f"head.deconv{i}.weight"] = (rng.standard_normal((channels, keypoints, 3, 3)) / 30).astype(np.float32)
            head[f"head.deconv{i}.bias"] = (0.05 * rng.standard_normal(keypoints)).astype(np.float32)
            channels = keypoints
        images = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
        kp = rng.uniform(0, size, (batch, keypoints, 2))
        exact = run_torch(weights, head, images, kp, keypoints, downsample, torch.float64, name)
        t32 = run_torch(weights, head, images, kp, keypoints, downsample, torch.float32, name)
        grads = exact["grad"]
        used = {"backbone.vision_encoder." + k for k in weights} | set(head)
        key = max(norm(g[g.size // 3:2 * g.size // 3]) / norm(g) for n, g in grads.items()
                  if n.endswith("attn.qkv.bias"))
        last_bias = f"head.deconv{len(head) // 2 - 1}.bias"
        loss_err = abs(t32["loss"] - exact["loss"]) / exact["loss"]
        grad_err = max(rel(t32["grad"][n], g) for n, g in grads.items()
                       if not n.endswith(("qkv.bias", last_bias)))
        print(f"{name} {size}x{size} step in float64: loss {exact['loss']:.6g}, {len(grads)} gradients, key-bias "
              f"gradient at most {key:.1e} of its qkv.bias's; float32 loss {loss_err:.1e} and gradients "
              f"{grad_err:.1e} from it")
        failures += [] if set(grads) == used else [f"{name} {size}: gradients of {sorted(set(grads) ^ used)[:4]}"]
        failures += [] if np.isfinite(exact["loss"]) and key < 1e-8 else [f"{name} {size}: loss or key-bias gradient"]
        failures += [] if loss_err < 1e-5 and grad_err < 1e-3 else [f"{name} {size}: float32 far from float64"]
    if failures:
        return report(failures)
    print("PASSED: the SAM2 reference")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["selftest-sam"]:
        sys.exit(selftest_sam())
    if sys.argv[1:] == ["selftest-sam2"]:
        sys.exit(selftest_sam2())
    if len(sys.argv) >= 3 and sys.argv[1] == "write":
        kind = sys.argv[3] if len(sys.argv) > 3 else "dino"
        if kind == "sam2":  # write WEIGHTS sam2 [vitt_sam2|vits_sam2|vitb_sam2]
            kind = sys.argv[4] if len(sys.argv) > 4 else "vitt_sam2"
            if kind not in SAM2_CONFIGS:
                print(f"unknown SAM2 backbone {kind}; one of {sorted(SAM2_CONFIGS)}")
                sys.exit(2)
        sys.exit(write(sys.argv[2], kind=kind))
    if len(sys.argv) == 6 and sys.argv[1] == "check" and sys.argv[4] == "--trained":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[5]))
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(2)
