// lightning-pose's unsupervised keypoint losses, TemporalLoss and PCALoss: the CPU
// twins of kernels/keypoint_losses.cu. Sizes are tiny (a few hundred keypoints per
// batch), so plain serial loops in double; the order of every sum matches the
// kernels' so the twins agree to rounding.
#include <cmath>   // std::sqrt
#include <vector>  // std::vector

#include "compute/cpu/cpu_backend.hpp"  // CpuBackend, PcaLossTables
#include "compute/pca_centering.hpp"    // PcaCentering, pca_center_weight
#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::compute::cpu {

namespace {
// d relu(norm - eps) / d v for the 2-vector v with norm n, times `weight`: zero
// where relu is flat (torch: relu'(0) = 0) and at n = 0 (torch's norm backward).
inline void rectified_norm_grad(double vx, double vy, double n, double eps, double weight,
                                double& gx, double& gy) {
  if (n - eps > 0.0 && n > 0.0) {
    gx = weight * vx / n;
    gy = weight * vy / n;
  } else {
    gx = gy = 0.0;
  }
}
}  // namespace

// TemporalLoss: diff along frames, norm per keypoint, mask by confidence, relu(. - eps).
void CpuBackend::temporal_loss(const float* keypoints, const float* confidence, int frames,
                               int num_keypoints, const float* epsilon, float prob_threshold,
                               float scale_x, float scale_y, float* loss, float* dkeypoints,
                               float grad_scale, Stream&) {
  TRAINER_ASSERT(frames >= 1 && num_keypoints >= 1,
                 "temporal_loss: " << frames << " frames, " << num_keypoints << " keypoints");
  const int K = num_keypoints, moves = frames - 1;
  if (moves == 0) {  // lightning-pose: the mean of nothing (NaN); here no loss
    loss[0] = 0.f;
    return;
  }
  const double weight = 1.0 / (double(moves) * K);
  // g[(t * K + k) * 2 + c]: d(loss)/d(move t of keypoint k), in network pixels.
  std::vector<double> g(std::size_t(moves) * K * 2, 0.0);
  double total = 0.0;
  for (int t = 0; t < moves; ++t)
    for (int k = 0; k < K; ++k) {
      const std::size_t a = (std::size_t(t) * K + k) * 2, b = a + std::size_t(K) * 2;
      const double dx = (double(keypoints[b]) - keypoints[a]) * scale_x;
      const double dy = (double(keypoints[b + 1]) - keypoints[a + 1]) * scale_y;
      const bool masked = confidence && (confidence[std::size_t(t) * K + k] < prob_threshold ||
                                         confidence[std::size_t(t + 1) * K + k] < prob_threshold);
      const double n = masked ? 0.0 : std::sqrt(dx * dx + dy * dy);
      const double eps = epsilon[k];
      total += n - eps > 0.0 ? n - eps : 0.0;
      if (masked) continue;
      double gx, gy;
      rectified_norm_grad(dx, dy, n, eps, weight, gx, gy);
      g[a] = gx * scale_x;
      g[a + 1] = gy * scale_y;
    }
  loss[0] = float(total * weight);
  if (!dkeypoints) return;
  // Keypoint t enters move t - 1 with + and move t with -.
  for (int t = 0; t < frames; ++t)
    for (int i = 0; i < 2 * K; ++i) {
      const double in = t > 0 ? g[std::size_t(t - 1) * K * 2 + i] : 0.0;
      const double out = t < moves ? g[std::size_t(t) * K * 2 + i] : 0.0;
      dkeypoints[std::size_t(t) * K * 2 + i] += float(double(grad_scale) * (in - out));
    }
}

// PCALoss: gather the PCA rows, reprojection residual (I - V^T V)(x - mean) per
// row, norm per (x, y) pair, relu(. - eps); the gradient goes back through the
// same projector (symmetric) and is scattered to the gathered coordinates.
void CpuBackend::pca_loss(const float* keypoints, int frames, int num_keypoints,
                          const PcaLossTables& tables, float scale_x, float scale_y, float* loss,
                          float* dkeypoints, float grad_scale, Stream&) {
  const int R = tables.rows_per_frame, D = tables.dims, C = tables.num_components;
  TRAINER_ASSERT(frames >= 1 && num_keypoints == tables.num_keypoints && R >= 1 && D >= 2 &&
                     D % 2 == 0 && C >= 0 && C <= D,
                 "pca_loss: " << frames << " frames, " << num_keypoints << " keypoints; tables for "
                              << tables.num_keypoints << " keypoints, " << R << " rows of " << D
                              << ", " << C << " components");
  const int K2 = 2 * num_keypoints, RD = R * D;
  std::vector<int> gather(RD);
  for (int i = 0; i < RD; ++i) {
    gather[i] = int(tables.gather[i]);
    TRAINER_ASSERT(gather[i] >= 0 && gather[i] < K2, "pca_loss: gather index " << gather[i]);
  }
  const double weight = 1.0 / (double(frames) * R * (D / 2));
  const double eps = tables.epsilon;
  const float* V = tables.components;
  const PcaCentering centering = tables.centering;
  std::vector<double> c(D), e(D), ge(D), p(C), gx(RD), w(D);
  double total = 0.0;
  for (int f = 0; f < frames; ++f) {
    const float* kp = keypoints + std::size_t(f) * K2;
    double frame_total = 0.0;
    for (int r = 0; r < R; ++r) {
      const int* gr = gather.data() + r * D;
      for (int d = 0; d < D; ++d) c[d] = double(kp[gr[d]]) * ((gr[d] & 1) ? scale_y : scale_x);
      if (centering != PcaCentering::none) {
        double centre[2] = {0.0, 0.0};
        for (int d = 0; d < D; ++d) {
          w[d] = pca_center_weight(c.data() + (d & 1), 2, D / 2, d / 2, centering);
          centre[d & 1] += w[d] * c[d];
        }
        for (int d = 0; d < D; ++d) c[d] -= centre[d & 1];
      }
      for (int d = 0; d < D; ++d) c[d] -= tables.mean[d];
      for (int j = 0; j < C; ++j) {
        double acc = 0.0;
        for (int d = 0; d < D; ++d) acc += double(V[j * D + d]) * c[d];
        p[j] = acc;
      }
      for (int d = 0; d < D; ++d) {
        double acc = 0.0;
        for (int j = 0; j < C; ++j) acc += double(V[j * D + d]) * p[j];
        e[d] = c[d] - acc;
      }
      for (int d = 0; d < D; d += 2) {
        const double n = std::sqrt(e[d] * e[d] + e[d + 1] * e[d + 1]);
        frame_total += n - eps > 0.0 ? n - eps : 0.0;
        rectified_norm_grad(e[d], e[d + 1], n, eps, weight, ge[d], ge[d + 1]);
      }
      // d/dx of the residual is the projector I - V^T V (symmetric).
      for (int j = 0; j < C; ++j) {
        double acc = 0.0;
        for (int d = 0; d < D; ++d) acc += double(V[j * D + d]) * ge[d];
        p[j] = acc;
      }
      for (int d = 0; d < D; ++d) {
        double acc = 0.0;
        for (int j = 0; j < C; ++j) acc += double(V[j * D + d]) * p[j];
        gx[r * D + d] = ge[d] - acc;
      }
      if (centering != PcaCentering::none) {  // through the centre (pca_centering.hpp)
        double sum[2] = {0.0, 0.0};
        for (int d = 0; d < D; ++d) sum[d & 1] += gx[r * D + d];
        for (int d = 0; d < D; ++d) gx[r * D + d] -= w[d] * sum[d & 1];
      }
    }
    total += frame_total;
    if (!dkeypoints) continue;
    // Every coordinate collects its table entries in (row, column) order, as the
    // kernel's thread per coordinate does.
    float* dk = dkeypoints + std::size_t(f) * K2;
    for (int i = 0; i < K2; ++i) {
      double acc = 0.0;
      bool used = false;
      for (int j = 0; j < RD; ++j)
        if (gather[j] == i) {
          acc += gx[j];
          used = true;
        }
      if (used) dk[i] += float(double(grad_scale) * ((i & 1) ? scale_y : scale_x) * acc);
    }
  }
  loss[0] = float(total * weight);
}

}  // namespace trainer::compute::cpu
