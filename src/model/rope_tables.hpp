#pragma once
// DINOv3's 2-D rotary position embedding as cos / sin tables, for the grid of patches
// of one image size (Hugging Face's DINOv3ViTRopePositionEmbedding, evaluated as in
// eval mode: the train-time coordinate shift / jitter / rescale are not applied, so
// a step is deterministic; docs/MODEL.md says where that differs from lightning-pose).
//
// Patch (y, x) of an h x w grid has its centre at coordinates
//   cy = 2 (y + 0.5) / h - 1,  cx = 2 (x + 0.5) / w - 1   (each axis normalised to [-1, 1]);
// with D = head_dim and j < D / 4, inv_freq[j] = 1 / theta^(4 j / D), and the angle of
// element i < D / 2 of a head's first half is 2 pi c * inv_freq[i % (D/4)], with
// c = cy for i < D / 4 and cx after. Element i + D / 2 uses the same angle (the tables
// are tiled twice in transformers; TransformerOps::rotary_forward pairs i with i + D/2).
// The coordinates and angles are float32 products in the order PyTorch evaluates them
// (pow, cos and sin are evaluated in double and rounded: within an ulp of PyTorch's).
#include <vector>  // std::vector

namespace trainer::model {

struct RopeTables {
  std::vector<float> cos, sin;  // [h * w, head_dim / 2], patches in row-major (y, x) order
};

// Throws SystemError unless head_dim is a positive multiple of 4 and the grid is not empty.
RopeTables rope_tables(int grid_h, int grid_w, int head_dim, float theta);

}  // namespace trainer::model
