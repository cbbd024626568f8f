#pragma once
// PyTorch's bicubic resize (F.interpolate(mode="bicubic", align_corners=False,
// antialias=False) with an output size) as a matrix, for resizing the position
// embeddings of a ViT to another grid of patches, as Hugging Face's
// interpolate_pos_encoding does on every forward: the resize is linear, so its
// gradient is the transposed matrix.
#include <vector>  // std::vector

namespace trainer::model {

// [out, in]: row o holds the weights of the inputs that output o mixes (source
// position scale * (o + 0.5) - 0.5 with scale = in / out, Keys' cubic with
// A = -0.75, out-of-range taps clamped to the edge; ATen's upsample_bicubic2d).
std::vector<double> bicubic_resize_matrix(int in, int out);

// [out, in]: PyTorch's antialiased bicubic (F.interpolate(mode="bicubic",
// antialias=True), ATen's separable _upsample_bicubic2d_aa): Keys' cubic with
// A = -0.5, support 2 (widened by the scale when shrinking), taps normalized to sum
// to 1, centers at scale * (o + 0.5); align_corners only changes the scale to
// (in - 1) / (out - 1). lightning-pose resizes DINOv2's 14x14 patch-embedding
// kernels to 16x16 with it (align_corners=True).
std::vector<double> antialiased_bicubic_resize_matrix(int in, int out, bool align_corners);

// The 2-D resize of an in_h x in_w grid to out_h x out_w (row-major cells), as an
// [out_h * out_w, in_h * in_w] matrix: the two 1-D resizes' Kronecker product.
std::vector<float> bicubic_resize_matrix_2d(int in_h, int in_w, int out_h, int out_w);

}  // namespace trainer::model
