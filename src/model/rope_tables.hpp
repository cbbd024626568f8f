#pragma once
// DINOv3's 2-D rotary position embedding as cos / sin tables, for the grid of patches
// of one image size (Hugging Face's DINOv3ViTRopePositionEmbedding), and the random
// coordinate rescale that embedding applies in train mode.
//
// Patch (y, x) of an h x w grid has its centre at coordinates
//   cy = 2 (y + 0.5) / h - 1,  cx = 2 (x + 0.5) / w - 1   (each axis normalised to [-1, 1]);
// with D = head_dim and j < D / 4, inv_freq[j] = 1 / theta^(4 j / D), and the angle of
// element i < D / 2 of a head's first half is 2 pi c * inv_freq[i % (D/4)], with
// c = cy for i < D / 4 and cx after (compute/rotary_rule.hpp). Element i + D / 2 uses
// the same angle (the tables are tiled twice in transformers;
// TransformerOps::rotary_forward pairs i with i + D/2). The coordinates and angles are
// float32 products in the order PyTorch evaluates them (pow, cos and sin are evaluated
// in double and rounded: within an ulp of PyTorch's).
//
// In train mode transformers multiplies both coordinates by one random factor per
// forward, log-uniform in [1 / pos_embed_rescale, pos_embed_rescale] (2 for both
// DINOv3 checkpoints; no shift, no jitter). rope_tables() gives the eval-mode tables;
// TransformerOps::rotary_tables makes the rescaled ones on the device from inv_freq
// and a factor that rope_rescale_draw() draws.
#include <vector>  // std::vector

#include "model/hooks.hpp"  // StepKey

namespace trainer::model {

struct RopeTables {
  std::vector<float> cos, sin;  // [h * w, head_dim / 2], patches in row-major (y, x) order
  std::vector<float> inv_freq;  // [head_dim / 4]
};

// Throws SystemError unless head_dim is a positive multiple of 4 and the grid is not empty
// (compute::check_rotary_table_shape).
RopeTables rope_tables(int grid_h, int grid_w, int head_dim, float theta);

// The coordinate factor of training forward `forward` (0: a step's labelled batch,
// 1: its unlabelled frames) of the step `key`: exp(u), u uniform in
// [-ln rescale, ln rescale), from a hash of the key (not a generator's state, so a
// resumed run, every rank and a recorded step's replay draw the same). rescale > 1.
float rope_rescale_draw(const StepKey& key, int forward, float rescale);

}  // namespace trainer::model
