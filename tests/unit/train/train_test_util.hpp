#pragma once
// An in-memory BatchSource for loop tests: fixed random frames with blob-like
// keypoints, shuffled per epoch by a seed (deterministic, like the real sampler).
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "data/batch.hpp"
#include "train/batch_source.hpp"

namespace train_test {

class MemorySource : public trainer::train::BatchSource {
 public:
  MemorySource(int frames, int batch, int size, int keypoints, unsigned seed)
      : frames_(frames), batch_(batch), size_(size), k_(keypoints) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> pos(4.f, float(size) - 5.f);
    images_.resize(std::size_t(frames) * 3 * size * size);
    kps_.resize(std::size_t(frames) * keypoints * 2);
    for (int f = 0; f < frames; ++f) {
      float* img = images_.data() + std::size_t(f) * 3 * size * size;
      for (int i = 0; i < 3 * size * size; ++i) img[i] = -1.f;
      for (int j = 0; j < keypoints; ++j) {
        const float x = pos(gen), y = pos(gen);
        kps_[(std::size_t(f) * keypoints + j) * 2] = x;
        kps_[(std::size_t(f) * keypoints + j) * 2 + 1] = y;
        // A bright square in channel j % 3 marks the keypoint.
        for (int dy = -2; dy <= 2; ++dy)
          for (int dx = -2; dx <= 2; ++dx) {
            const int px = int(x) + dx, py = int(y) + dy;
            img[(j % 3) * size * size + py * size + px] = 2.f;
          }
      }
    }
  }
  void start_epoch(int epoch) override {
    order_.resize(frames_);
    for (int i = 0; i < frames_; ++i) order_[i] = i;
    std::mt19937 gen(1000u + unsigned(epoch));
    std::shuffle(order_.begin(), order_.end(), gen);
    next_ = 0;
  }
  const trainer::data::Batch* next() override {
    if (next_ >= frames_) return nullptr;
    const int n = std::min(batch_, frames_ - next_);
    batch_images_.resize(std::size_t(n) * 3 * size_ * size_);
    b_ = trainer::data::Batch{};
    b_.size = n;
    b_.height = b_.width = size_;
    b_.num_keypoints = k_;
    for (int r = 0; r < n; ++r) {
      const int f = order_[next_ + r];
      std::copy_n(images_.data() + std::size_t(f) * 3 * size_ * size_, 3 * size_ * size_,
                  batch_images_.data() + std::size_t(r) * 3 * size_ * size_);
      for (int j = 0; j < 2 * k_; ++j) b_.keypoints.push_back(kps_[std::size_t(f) * k_ * 2 + j]);
      b_.frame_index.push_back(f);
      b_.is_real.push_back(1);
      b_.scale_x.push_back(1.f);
      b_.scale_y.push_back(1.f);
    }
    b_.images = batch_images_.data();
    next_ += n;
    return &b_;
  }
  long batches_per_epoch() const override { return (frames_ + batch_ - 1) / batch_; }

 private:
  int frames_, batch_, size_, k_;
  std::vector<float> images_, kps_, batch_images_;
  std::vector<int> order_;
  int next_ = 0;
  trainer::data::Batch b_;
};

}  // namespace train_test
