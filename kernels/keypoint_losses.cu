// TemporalLoss and PCALoss kernels; see keypoint_losses.cuh. Arithmetic in double,
// in the same order as the CPU twin (cpu_keypoint_losses.cpp) except for the
// block-wide sums of the loss.
#include "keypoint_losses.cuh"

#include "compute/pca_centering.hpp"  // PcaCentering, pca_center_weight
#include "launch.cuh"  // detail::block_sum

namespace trainer::kernels {
namespace {

using detail::block_sum;

constexpr int kLossThreads = 128;  // per block; the work per frame is a few hundred values

// d relu(norm - eps) / d v times `weight` (0 where relu is flat and at norm 0),
// as rectified_norm_grad in the CPU twin.
__device__ inline void rectified_norm_grad(double vx, double vy, double n, double eps,
                                           double weight, double& gx, double& gy) {
  if (n - eps > 0.0 && n > 0.0) {
    gx = weight * vx / n;
    gy = weight * vy / n;
  } else {
    gx = gy = 0.0;
  }
}

struct TemporalArgs {
  const float* kp;
  const float* conf;
  int frames, K;
  const float* eps;
  float threshold, sx, sy;
};

// Move t of keypoint k (frame t to t + 1): its rectified norm in `term` and the
// gradient of weight * term with respect to the move's coordinate c (network pixels).
__device__ inline double temporal_move(const TemporalArgs& a, int t, int k, int c, double weight,
                                       double* term) {
  const std::size_t i0 = (std::size_t(t) * a.K + k) * 2, i1 = i0 + std::size_t(a.K) * 2;
  const double dx = (double(a.kp[i1]) - a.kp[i0]) * a.sx;
  const double dy = (double(a.kp[i1 + 1]) - a.kp[i0 + 1]) * a.sy;
  const bool masked = a.conf && (a.conf[std::size_t(t) * a.K + k] < a.threshold ||
                                 a.conf[std::size_t(t + 1) * a.K + k] < a.threshold);
  const double n = masked ? 0.0 : sqrt(dx * dx + dy * dy);
  const double eps = a.eps[k];
  if (term) *term = n - eps > 0.0 ? n - eps : 0.0;
  if (masked) return 0.0;
  double gx, gy;
  rectified_norm_grad(dx, dy, n, eps, weight, gx, gy);
  return c == 0 ? gx * a.sx : gy * a.sy;
}

__global__ void temporal_loss_kernel(TemporalArgs a, float* loss, float* dkp, float grad_scale) {
  __shared__ double shared[32];
  const int moves = a.frames - 1;
  const double weight = moves > 0 ? 1.0 / (double(moves) * a.K) : 0.0;
  double acc = 0.0;
  for (int i = threadIdx.x; i < moves * a.K; i += blockDim.x) {
    double term;
    temporal_move(a, i / a.K, i % a.K, 0, weight, &term);
    acc += term;
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) loss[0] = static_cast<float>(acc * weight);
  if (!dkp) return;
  const int per_frame = 2 * a.K;
  for (int i = threadIdx.x; i < a.frames * per_frame; i += blockDim.x) {
    const int t = i / per_frame, k = (i % per_frame) / 2, c = i % 2;
    const double in = t > 0 ? temporal_move(a, t - 1, k, c, weight, nullptr) : 0.0;
    const double out = t < moves ? temporal_move(a, t, k, c, weight, nullptr) : 0.0;
    dkp[i] += static_cast<float>(double(grad_scale) * (in - out));
  }
}

// Per-frame scratch: centred rows (later the rows' gradient), residuals, the
// residuals' gradient, the C-dimensional projections, the centring weights and
// each row's two centres (later the sums of the rows' gradient by parity).
struct PcaFrameScratch {
  double *c, *e, *ge, *p, *w, *centre;
};
__host__ __device__ inline std::size_t pca_frame_doubles(int R, int D, int C) {
  return 4 * std::size_t(R) * D + std::size_t(R) * (C > 0 ? C : 1) + 2 * std::size_t(R);
}

// s.centre[2r + parity] = the sum of weight * value over row r's columns of that
// parity (weight 1 when null).
__device__ void pca_row_parity_sums(const PcaFrameScratch& s, int R, int D, const double* weight,
                                    const double* value) {
  for (int q = threadIdx.x; q < 2 * R; q += blockDim.x) {
    const int r = q / 2, parity = q % 2;
    double acc = 0.0;
    for (int d = parity; d < D; d += 2) acc += (weight ? weight[r * D + d] : 1.0) * value[r * D + d];
    s.centre[q] = acc;
  }
}

__global__ void pca_frame_kernel(const float* keypoints, int K, compute::PcaLossTables t, float sx,
                                 float sy, double weight, float* dkp, float grad_scale,
                                 double* scratch, double* frame_sums) {
  __shared__ double shared[32];
  const int f = blockIdx.x, R = t.rows_per_frame, D = t.dims, C = t.num_components;
  const int RD = R * D, K2 = 2 * K;
  double* base = scratch + std::size_t(f) * pca_frame_doubles(R, D, C);
  const int P = R * (C > 0 ? C : 1);
  const PcaFrameScratch s{base, base + RD, base + 2 * RD, base + 3 * RD, base + 3 * RD + P,
                          base + 4 * RD + P};
  const float* kp = keypoints + std::size_t(f) * K2;
  const float* V = t.components;
  const bool centred = t.centering != compute::PcaCentering::none;
  for (int i = threadIdx.x; i < RD; i += blockDim.x) {
    const int g = int(t.gather[i]);
    s.c[i] = double(kp[g]) * ((g & 1) ? sy : sx);
  }
  __syncthreads();
  if (centred) {
    for (int i = threadIdx.x; i < RD; i += blockDim.x) {
      const int r = i / D, d = i % D;
      s.w[i] = compute::pca_center_weight(s.c + r * D + (d & 1), 2, D / 2, d / 2, t.centering);
    }
    __syncthreads();
    pca_row_parity_sums(s, R, D, s.w, s.c);
    __syncthreads();
  }
  for (int i = threadIdx.x; i < RD; i += blockDim.x)
    s.c[i] -= (centred ? s.centre[2 * (i / D) + (i & 1)] : 0.0) + t.mean[i % D];
  __syncthreads();
  for (int i = threadIdx.x; i < R * C; i += blockDim.x) {
    const int r = i / C, j = i % C;
    double acc = 0.0;
    for (int d = 0; d < D; ++d) acc += double(V[j * D + d]) * s.c[r * D + d];
    s.p[i] = acc;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < RD; i += blockDim.x) {
    const int r = i / D, d = i % D;
    double acc = 0.0;
    for (int j = 0; j < C; ++j) acc += double(V[j * D + d]) * s.p[r * C + j];
    s.e[i] = s.c[i] - acc;
  }
  __syncthreads();
  double total = 0.0;
  for (int i = 2 * threadIdx.x; i < RD; i += 2 * blockDim.x) {
    const double n = sqrt(s.e[i] * s.e[i] + s.e[i + 1] * s.e[i + 1]);
    total += n - t.epsilon > 0.0 ? n - double(t.epsilon) : 0.0;
    rectified_norm_grad(s.e[i], s.e[i + 1], n, t.epsilon, weight, s.ge[i], s.ge[i + 1]);
  }
  total = block_sum(total, shared);  // also orders the writes above before the reads below
  if (threadIdx.x == 0) frame_sums[f] = total;
  if (!dkp) return;
  for (int i = threadIdx.x; i < R * C; i += blockDim.x) {
    const int r = i / C, j = i % C;
    double acc = 0.0;
    for (int d = 0; d < D; ++d) acc += double(V[j * D + d]) * s.ge[r * D + d];
    s.p[i] = acc;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < RD; i += blockDim.x) {
    const int r = i / D, d = i % D;
    double acc = 0.0;
    for (int j = 0; j < C; ++j) acc += double(V[j * D + d]) * s.p[r * C + j];
    s.c[i] = s.ge[i] - acc;  // the row's gradient, in place of the centred row
  }
  __syncthreads();
  if (centred) {  // through the centres (compute/pca_centering.hpp)
    pca_row_parity_sums(s, R, D, nullptr, s.c);
    __syncthreads();
    for (int i = threadIdx.x; i < RD; i += blockDim.x) s.c[i] -= s.w[i] * s.centre[2 * (i / D) + (i & 1)];
    __syncthreads();
  }
  // One thread per coordinate gathers its table entries in (row, column) order.
  for (int i = threadIdx.x; i < K2; i += blockDim.x) {
    double acc = 0.0;
    bool used = false;
    for (int j = 0; j < RD; ++j)
      if (int(t.gather[j]) == i) {
        acc += s.c[j];
        used = true;
      }
    if (used) dkp[std::size_t(f) * K2 + i] += static_cast<float>(double(grad_scale) * ((i & 1) ? sy : sx) * acc);
  }
}

__global__ void pca_total_kernel(const double* frame_sums, int frames, double weight, float* loss) {
  __shared__ double shared[32];
  double acc = 0.0;
  for (int i = threadIdx.x; i < frames; i += blockDim.x) acc += frame_sums[i];
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) loss[0] = static_cast<float>(acc * weight);
}

}  // namespace

void temporal_loss(const float* keypoints, const float* confidence, int frames, int num_keypoints,
                   const float* epsilon, float prob_threshold, float scale_x, float scale_y,
                   float* loss, float* dkeypoints, float grad_scale, cudaStream_t stream) {
  const TemporalArgs a{keypoints, confidence, frames, num_keypoints, epsilon, prob_threshold, scale_x, scale_y};
  temporal_loss_kernel<<<1, kLossThreads, 0, stream>>>(a, loss, dkeypoints, grad_scale);
}

std::size_t pca_loss_scratch_doubles(int frames, const compute::PcaLossTables& t) {
  return std::size_t(frames) * (pca_frame_doubles(t.rows_per_frame, t.dims, t.num_components) + 1);
}

void pca_loss(const float* keypoints, int frames, int num_keypoints,
              const compute::PcaLossTables& tables, float scale_x, float scale_y, float* loss,
              float* dkeypoints, float grad_scale, double* scratch, cudaStream_t stream) {
  const double weight = 1.0 / (double(frames) * tables.rows_per_frame * (tables.dims / 2));
  double* frame_sums = scratch + std::size_t(frames) * pca_frame_doubles(tables.rows_per_frame, tables.dims,
                                                                         tables.num_components);
  pca_frame_kernel<<<frames, kLossThreads, 0, stream>>>(keypoints, num_keypoints, tables, scale_x,
                                                        scale_y, weight, dkeypoints, grad_scale,
                                                        scratch, frame_sums);
  pca_total_kernel<<<1, kLossThreads, 0, stream>>>(frame_sums, frames, weight, loss);
}

}  // namespace trainer::kernels
