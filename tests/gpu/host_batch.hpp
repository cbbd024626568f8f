#pragma once
// A random training batch whose images sit in the backend's host memory (pinned, for
// CUDA), as the loader's do, with one unlabelled keypoint; for the GPU step tests.
#include <algorithm>  // std::copy
#include <cmath>      // NAN
#include <cstddef>    // std::size_t

#include "compute/backend.hpp"  // Backend
#include "data/batch.hpp"       // data::Batch
#include "gpu_test_util.hpp"    // random_vector

namespace trainer::compute::gpu_test {

struct HostBatch {
  Backend& backend;
  data::Batch batch;
  float* images = nullptr;
  HostBatch(Backend& b, int n, int size, int k, unsigned seed) : backend(b) {
    batch.size = n;
    batch.height = batch.width = size;
    batch.num_keypoints = k;
    images = static_cast<float*>(b.allocate_host(batch.image_floats() * sizeof(float)));
    const auto v = random_vector(batch.image_floats(), seed);
    std::copy(v.begin(), v.end(), images);
    batch.images = images;
    const auto kp = random_vector(std::size_t(n) * k * 2, seed + 1, 2.f, float(size) - 3.f);
    batch.keypoints.assign(kp.begin(), kp.end());
    batch.keypoints[1] = NAN;  // one unlabeled keypoint
    batch.is_real.assign(std::size_t(n), 1);
    batch.scale_x.assign(std::size_t(n), 1.f);
    batch.scale_y.assign(std::size_t(n), 1.f);
  }
  ~HostBatch() { backend.release_host(images); }
  HostBatch(const HostBatch&) = delete;
  HostBatch& operator=(const HostBatch&) = delete;
};

}  // namespace trainer::compute::gpu_test
