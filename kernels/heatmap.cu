// Heatmap kernels; see heatmap.cuh. Each plane (n, k) is one block: planes are
// small (64x64 for 256x256 frames) and every op needs a per-plane reduction.
#include "heatmap.cuh"

#include <cfloat>  // FLT_MAX

#include "compute/keypoint_rule.hpp"  // keypoint_counts, wants_uniform_target
#include "launch.cuh"                  // blocks_for, kThreads, block_sum, block_max

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::block_max;
using detail::block_sum;
using detail::kThreads;

using compute::keypoint_counts;  // lightning-pose's rule, shared with the host

// Values in double as the CPU twin computes them, stored as float.
__global__ void targets_kernel(const float* keypoints, int h, int w, float sigma, float* targets,
                               float* mask) {
  __shared__ double shared[32];
  const int plane = blockIdx.x;
  const int size = h * w;
  float* out = targets + std::size_t(plane) * size;
  const float kx = keypoints[2 * plane], ky = keypoints[2 * plane + 1];
  const bool valid = keypoint_counts(kx, ky, h, w);
  const bool uniform = compute::wants_uniform_target(kx, ky);
  if (mask && threadIdx.x == 0) mask[plane] = (valid || uniform) ? 1.f : 0.f;
  if (uniform) {  // the same value as the CPU twin: 1/(h*w) computed in double
    const float u = static_cast<float>(1.0 / double(size));
    for (int i = threadIdx.x; i < size; i += blockDim.x) out[i] = u;
    return;
  }
  if (!valid) {
    for (int i = threadIdx.x; i < size; i += blockDim.x) out[i] = 0.f;
    return;
  }
  const double inv2s2 = 1.0 / (2.0 * double(sigma) * double(sigma));
  double sum = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) {
    const double dx = double(i % w) - double(kx), dy = double(i / w) - double(ky);
    const double v = exp(-(dx * dx + dy * dy) * inv2s2);
    out[i] = static_cast<float>(v);
    sum += v;
  }
  sum = block_sum(sum, shared);
  const float inv = static_cast<float>(1.0 / sum);
  for (int i = threadIdx.x; i < size; i += blockDim.x) out[i] *= inv;
}

__global__ void softmax_forward_kernel(const float* x, int size, float scale, float* y) {
  __shared__ float fshared[32];
  __shared__ double dshared[32];
  const float* in = x + std::size_t(blockIdx.x) * size;
  float* out = y + std::size_t(blockIdx.x) * size;
  float m = -FLT_MAX;
  for (int i = threadIdx.x; i < size; i += blockDim.x) m = fmaxf(m, in[i] * scale);
  m = block_max(m, fshared, -FLT_MAX);
  double sum = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) {
    const float e = expf(in[i] * scale - m);
    out[i] = e;
    sum += e;
  }
  sum = block_sum(sum, dshared);
  const float inv = static_cast<float>(1.0 / sum);
  for (int i = threadIdx.x; i < size; i += blockDim.x) out[i] *= inv;
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, int size, float scale,
                                        float* dx) {
  __shared__ double shared[32];
  const std::size_t base = std::size_t(blockIdx.x) * size;
  double dot = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) dot += double(y[base + i]) * dy[base + i];
  const float d = static_cast<float>(block_sum(dot, shared));
  for (int i = threadIdx.x; i < size; i += blockDim.x)
    dx[base + i] = scale * y[base + i] * (dy[base + i] - d);
}

// ---- soft-argmax ---------------------------------------------------------------

// PyTorch's bicubic convolution coefficients (A = -0.75).
__device__ inline void cubic_coefficients(double t, double c[4]) {
  const double A = -0.75;
  auto near = [A](double x) { return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0; };
  auto far = [A](double x) { return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A; };
  c[0] = far(t + 1.0);
  c[1] = near(t);
  c[2] = near(1.0 - t);
  c[3] = far(2.0 - t);
}

// F.interpolate(scale 2, mode="bicubic", align_corners=False): source index
// 0.5 * (dst + 0.5) - 0.5, neighbours clamped to the border.
template <typename In>
__global__ void bicubic_up2_kernel(const In* in, int h, int w, double* out, std::size_t total) {
  const int H = 2 * h, W = 2 * w;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int X = static_cast<int>(i % W);
    const int Y = static_cast<int>((i / W) % H);
    const std::size_t plane = i / (std::size_t(W) * H);
    const In* src = in + plane * h * w;
    const double ry = 0.5 * (Y + 0.5) - 0.5, rx = 0.5 * (X + 0.5) - 0.5;
    const int iy = static_cast<int>(floor(ry)), ix = static_cast<int>(floor(rx));
    double cy[4], cx[4];
    cubic_coefficients(ry - iy, cy);
    cubic_coefficients(rx - ix, cx);
    double acc = 0.0;
    for (int a = 0; a < 4; ++a) {
      const int yy = min(max(iy - 1 + a, 0), h - 1);
      double row = 0.0;
      for (int b = 0; b < 4; ++b) {
        const int xx = min(max(ix - 1 + b, 0), w - 1);
        row += double(src[yy * w + xx]) * cx[b];
      }
      acc += row * cy[a];
    }
    out[i] = acc;
  }
}

// kornia filter2d with the 5x5 pyramid Gaussian ([1 4 6 4 1]^T [1 4 6 4 1] / 256),
// zero ("constant") border, same size.
__global__ void pyramid_blur_kernel(const double* in, int h, int w, double* out, std::size_t total) {
  const double k1[5] = {1.0 / 16, 4.0 / 16, 6.0 / 16, 4.0 / 16, 1.0 / 16};
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int x = static_cast<int>(i % w);
    const int y = static_cast<int>((i / w) % h);
    const double* src = in + (i / (std::size_t(w) * h)) * h * w;
    double acc = 0.0;
    for (int a = 0; a < 5; ++a) {
      const int yy = y + a - 2;
      if (yy < 0 || yy >= h) continue;
      for (int b = 0; b < 5; ++b) {
        const int xx = x + b - 2;
        if (xx < 0 || xx >= w) continue;
        acc += src[yy * w + xx] * (k1[a] * k1[b]);
      }
    }
    out[i] = acc;
  }
}

// The expectation in upsampled pixels is shifted by the grid offset (2^d - 1) / 2
// so that a one-hot at heatmap pixel p maps to image pixel p * 2^d (lightning-pose
// uses 2.5 instead of 3.5 for d = 3, a slip the CPU twin fixes too).
inline double upsampling_offset(int upsamplings) { return ((1 << upsamplings) - 1) / 2.0; }

// The softmax of (temperature * value) over one plane in float, as the reference
// computes it, and its expectation of (column, row); one block per plane, every
// thread gets the result.
struct PlaneSoftmax {
  float max = 0, inv = 0;
  double ex = 0, ey = 0;
  __device__ double p(float value, float temperature) const { return expf(temperature * value - max) * inv; }
};

template <typename In>
__device__ PlaneSoftmax plane_softmax(const In* in, int size, int w, float temperature) {
  __shared__ float fshared[32];
  __shared__ double dshared[32];
  PlaneSoftmax out;
  float m = -FLT_MAX;
  for (int i = threadIdx.x; i < size; i += blockDim.x) m = fmaxf(m, temperature * float(in[i]));
  out.max = block_max(m, fshared, -FLT_MAX);
  double sum = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) sum += expf(temperature * float(in[i]) - out.max);
  out.inv = static_cast<float>(1.0 / block_sum(sum, dshared));
  double sx = 0.0, sy = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) {
    const double p = out.p(float(in[i]), temperature);
    sx += p * (i % w);
    sy += p * (i / w);
  }
  out.ex = block_sum(sx, dshared);
  out.ey = block_sum(sy, dshared);
  return out;
}

// The expectation and the 5x5 confidence, one block per plane.
template <typename In>
__global__ void expectation_kernel(const In* maps, int h, int w, float temperature, double offset,
                                   float* coords, float* confidence) {
  const int size = h * w;
  const In* in = maps + std::size_t(blockIdx.x) * size;
  const PlaneSoftmax sm = plane_softmax(in, size, w, temperature);
  if (threadIdx.x != 0) return;
  // Confidence: softmax mass within 2 pixels (2 sigma of 1.25, floored) of the
  // expectation truncated to integers, zero outside the map.
  const int cx = static_cast<int>(sm.ex), cy = static_cast<int>(sm.ey);
  double conf = 0.0;
  for (int r = cy - 2; r <= cy + 2; ++r)
    for (int c = cx - 2; c <= cx + 2; ++c)
      if (r >= 0 && r < h && c >= 0 && c < w) conf += sm.p(float(in[r * w + c]), temperature);
  coords[2 * blockIdx.x] = static_cast<float>(sm.ex - offset);
  coords[2 * blockIdx.x + 1] = static_cast<float>(sm.ey - offset);
  if (confidence) confidence[blockIdx.x] = static_cast<float>(conf);
}

// The soft-argmax's gradient at the final resolution, one block per plane:
// dz = T p (dcoords . (c, r) - dcoords . (ex, ey)) with p the softmax of T z.
template <typename In>
__global__ void expectation_backward_kernel(const In* maps, int h, int w, float temperature,
                                            const float* dcoords, double* dmaps) {
  const int size = h * w;
  const In* in = maps + std::size_t(blockIdx.x) * size;
  double* out = dmaps + std::size_t(blockIdx.x) * size;
  const PlaneSoftmax sm = plane_softmax(in, size, w, temperature);
  const double gx = dcoords[2 * blockIdx.x], gy = dcoords[2 * blockIdx.x + 1];
  const double dot = gx * sm.ex + gy * sm.ey;
  for (int i = threadIdx.x; i < size; i += blockDim.x)
    out[i] = temperature * sm.p(float(in[i]), temperature) * (gx * (i % w) + gy * (i / w) - dot);
}

__global__ void copy_from_double_kernel(const double* in, float* out, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x)
    out[i] = static_cast<float>(in[i]);
}

// Weight with which bicubic output o (of 2n) reads input i, clamped taps summed.
__device__ inline double bicubic_adjoint_weight(int o, int i, int n) {
  const double r = 0.5 * (o + 0.5) - 0.5;
  const int io = static_cast<int>(floor(r));
  double c[4];
  cubic_coefficients(r - io, c);
  double wsum = 0.0;
  for (int k = 0; k < 4; ++k)
    if (min(max(io - 1 + k, 0), n - 1) == i) wsum += c[k];
  return wsum;
}

// The adjoint of bicubic_up2_kernel as a gather (deterministic, no atomics): input
// pixel (y, x) of h x w sums the output gradients [2h, 2w] that read it. Outputs
// 2i-4 .. 2i+5 cover every tap of i, the border clamps included.
template <typename Out>
__global__ void bicubic_up2_adjoint_kernel(const double* dout, int h, int w, Out* din,
                                           std::size_t total) {
  const int H = 2 * h, W = 2 * w;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int x = static_cast<int>(i % w);
    const int y = static_cast<int>((i / w) % h);
    const double* src = dout + (i / (std::size_t(w) * h)) * std::size_t(H) * W;
    double wx[10];
    const int ox0 = max(2 * x - 4, 0), ox1 = min(2 * x + 5, W - 1);
    for (int ox = ox0; ox <= ox1; ++ox) wx[ox - ox0] = bicubic_adjoint_weight(ox, x, w);
    double acc = 0.0;
    for (int oy = max(2 * y - 4, 0); oy <= min(2 * y + 5, H - 1); ++oy) {
      const double wy = bicubic_adjoint_weight(oy, y, h);
      if (wy == 0.0) continue;
      double row = 0.0;
      for (int ox = ox0; ox <= ox1; ++ox) row += wx[ox - ox0] * src[std::size_t(oy) * W + ox];
      acc += wy * row;
    }
    din[i] = static_cast<Out>(acc);
  }
}

// lightning-pose's upsample() `upsamplings` times, in double: `blurred` receives the
// result (ch x cw on return, from h x w), `up` is the bicubic stage's scratch.
void upsample_maps(const float* heatmaps, int planes, int upsamplings, double* up, double* blurred, int& ch,
                   int& cw, cudaStream_t s) {
  for (int step = 0; step < upsamplings; ++step) {
    const std::size_t total = std::size_t(planes) * (2 * ch) * (2 * cw);
    if (step == 0)
      bicubic_up2_kernel<<<blocks_for(total), kThreads, 0, s>>>(heatmaps, ch, cw, up, total);
    else
      bicubic_up2_kernel<<<blocks_for(total), kThreads, 0, s>>>(static_cast<const double*>(blurred), ch, cw, up,
                                                                total);
    ch *= 2;
    cw *= 2;
    pyramid_blur_kernel<<<blocks_for(total), kThreads, 0, s>>>(up, ch, cw, blurred, total);
  }
}

}  // namespace

void heatmap_targets(const float* keypoints, int planes, int h, int w, float sigma, float* targets,
                     float* mask, cudaStream_t s) {
  if (planes > 0) targets_kernel<<<planes, kThreads, 0, s>>>(keypoints, h, w, sigma, targets, mask);
}

void spatial_softmax_forward(const float* x, int planes, int plane_size, float temperature,
                             float* y, cudaStream_t s) {
  if (planes > 0) softmax_forward_kernel<<<planes, kThreads, 0, s>>>(x, plane_size, temperature, y);
}

void spatial_softmax_backward(const float* y, const float* dy, int planes, int plane_size,
                              float temperature, float* dx, cudaStream_t s) {
  if (planes > 0)
    softmax_backward_kernel<<<planes, kThreads, 0, s>>>(y, dy, plane_size, temperature, dx);
}

std::size_t soft_argmax_scratch_doubles(int planes, int h, int w, int upsamplings) {
  if (upsamplings <= 0) return 0;
  const std::size_t final_size = std::size_t(planes) * (std::size_t(h) << upsamplings) *
                                 (std::size_t(w) << upsamplings);
  return 2 * final_size;  // ping-pong: bicubic output and blur output
}

std::size_t soft_argmax_backward_scratch_doubles(int planes, int h, int w, int upsamplings) {
  return 2 * std::size_t(planes) * (std::size_t(h) << upsamplings) * (std::size_t(w) << upsamplings);
}

void soft_argmax(const float* heatmaps, int planes, int h, int w, int upsamplings,
                 float temperature, float* coords, float* confidence, double* scratch,
                 cudaStream_t s) {
  if (planes <= 0) return;
  const double offset = upsampling_offset(upsamplings);
  if (upsamplings <= 0) {
    expectation_kernel<<<planes, kThreads, 0, s>>>(heatmaps, h, w, temperature, offset, coords,
                                                   confidence);
    return;
  }
  const std::size_t half = soft_argmax_scratch_doubles(planes, h, w, upsamplings) / 2;
  double* up = scratch;
  double* blurred = scratch + half;
  int ch = h, cw = w;
  upsample_maps(heatmaps, planes, upsamplings, up, blurred, ch, cw, s);
  expectation_kernel<<<planes, kThreads, 0, s>>>(static_cast<const double*>(blurred), ch, cw,
                                                 temperature, offset, coords, confidence);
}

// Forward again (the upsampled maps are not kept), the gradient at the final
// resolution, then the adjoint of each upsampling step in reverse: the pyramid blur
// (symmetric kernel, zero border) is its own adjoint. Reuses soft_argmax's scratch.
void soft_argmax_backward(const float* heatmaps, int planes, int h, int w, int upsamplings,
                          float temperature, const float* dcoords, float* dheatmaps,
                          double* scratch, cudaStream_t s) {
  if (planes <= 0) return;
  if (upsamplings <= 0) {
    // No upsampling: the gradient goes to double scratch, then to the float output.
    const std::size_t total = std::size_t(planes) * h * w;
    expectation_backward_kernel<<<planes, kThreads, 0, s>>>(heatmaps, h, w, temperature, dcoords, scratch);
    copy_from_double_kernel<<<blocks_for(total), kThreads, 0, s>>>(scratch, dheatmaps, total);
    return;
  }
  const std::size_t half = soft_argmax_scratch_doubles(planes, h, w, upsamplings) / 2;
  double* up = scratch;
  double* blurred = scratch + half;
  int ch = h, cw = w;
  upsample_maps(heatmaps, planes, upsamplings, up, blurred, ch, cw, s);
  expectation_backward_kernel<<<planes, kThreads, 0, s>>>(blurred, ch, cw, temperature, dcoords, up);
  for (int step = upsamplings - 1; step >= 0; --step) {
    const std::size_t big = std::size_t(planes) * ch * cw;
    pyramid_blur_kernel<<<blocks_for(big), kThreads, 0, s>>>(up, ch, cw, blurred, big);
    ch /= 2;
    cw /= 2;
    const std::size_t small = std::size_t(planes) * ch * cw;
    if (step == 0)
      bicubic_up2_adjoint_kernel<<<blocks_for(small), kThreads, 0, s>>>(blurred, ch, cw, dheatmaps,
                                                                       small);
    else
      bicubic_up2_adjoint_kernel<<<blocks_for(small), kThreads, 0, s>>>(blurred, ch, cw, up, small);
  }
}

}  // namespace trainer::kernels
