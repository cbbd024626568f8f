#pragma once
// Batch-norm statistics as (count, mean, M2) per channel, merged with Chan et
// al.'s pairwise formula, written once for the CPU ops, the CUDA kernels
// (kernels/batchnorm.cu) and the synchronized batch norm that all-gathers them.
// PyTorch's SyncBatchNorm does the same (Welford per rank, then
// batch_norm_gather_stats_with_counts), because E[x^2] - E[x]^2 in float cancels
// catastrophically on a channel whose |mean| is large against its spread.
#include <cmath>    // sqrt
#include <cstddef>  // std::size_t

#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

// The layout, per rank, for C channels: [0, C) mean rounded to float, [C, 2C)
// what that rounding left (mean - float(mean)), [2C, 3C) M2, [3C] count. The
// mean takes two floats because the merge squares differences of means: one
// float (ulp 6e-5 at 1000) would cost 1e-3 of a variance of 1e-4 at mean 1000.
TRAINER_HOST_DEVICE inline std::size_t batchnorm_moments_size(int channels) { return 3 * std::size_t(channels) + 1; }

// Writes channel ch's moments of one rank into `out` (a block of the layout above).
TRAINER_HOST_DEVICE inline void store_moments(float* out, int channels, int ch, double mean, double m2) {
  const float hi = static_cast<float>(mean);
  out[ch] = hi;
  out[channels + ch] = static_cast<float>(mean - double(hi));
  out[2 * channels + ch] = static_cast<float>(m2);
}

struct Moments {
  double count = 0, mean = 0, m2 = 0;  // m2: sum of squared deviations from the mean
};

// Folds b into a (Chan, Golub, LeVeque 1979); exact in exact arithmetic and
// stable in floating point, whatever the order of magnitude of the means.
TRAINER_HOST_DEVICE inline void merge_moments(Moments& a, double count, double mean, double m2) {
  if (count <= 0) return;
  const double n = a.count + count;
  const double delta = mean - a.mean;
  a.mean += delta * (count / n);
  a.m2 += m2 + delta * delta * (a.count * count / n);
  a.count = n;
}

// Folds channel ch of one rank's block (the layout above) into a, the block's count
// given: a kernel that has just stored channel ch reads its count from its own
// arguments, not from the block's last float, which another thread writes.
TRAINER_HOST_DEVICE inline void merge_moments(Moments& a, const float* block, int channels, int ch, float count) {
  merge_moments(a, double(count), double(block[ch]) + double(block[channels + ch]), double(block[2 * channels + ch]));
}
// Folds channel ch of one rank's block (the layout above) into a.
TRAINER_HOST_DEVICE inline void merge_moments(Moments& a, const float* block, int channels, int ch) {
  merge_moments(a, block, channels, ch, block[3 * channels]);
}

// Channel ch's batch-norm statistics from its merged moments (batchnorm_finalize, on
// the CPU and the device): mean, 1/sqrt(biased var + eps), and, when running_mean is
// non-null, the running statistics moved by `momentum` towards the mean and the
// unbiased variance (PyTorch's). A count of 0 (the CPU op refuses it) counts as 1.
TRAINER_HOST_DEVICE inline void finalize_channel(const Moments& m, int ch, float eps, float momentum, float* mean,
                                                 float* invstd, float* running_mean, float* running_var) {
  const double count = m.count > 0.0 ? m.count : 1.0;
  const double var = m.m2 / count;  // biased
  mean[ch] = static_cast<float>(m.mean);
  invstd[ch] = static_cast<float>(1.0 / sqrt(var + double(eps)));
  if (running_mean) {
    const double unbiased = count > 1.0 ? m.m2 / (count - 1.0) : var;
    running_mean[ch] = static_cast<float>((1.0 - momentum) * running_mean[ch] + momentum * m.mean);
    running_var[ch] = static_cast<float>((1.0 - momentum) * running_var[ch] + momentum * unbiased);
  }
}

}  // namespace trainer::compute
