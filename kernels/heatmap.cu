// Heatmap kernels; see heatmap.cuh. Each plane (n, k) is one block where an op
// needs a per-plane reduction (planes are small: 64x64 for 256x256 frames); the
// soft-argmax's upsampling passes take one thread per output pixel.
#include "heatmap.cuh"

#include <cfloat>   // FLT_MAX
#include <climits>  // INT_MAX

#include <math_constants.h>  // CUDART_NAN_F

#include "compute/keypoint_rule.hpp"    // keypoint_counts, wants_uniform_target
#include "compute/subpixel_maxima.hpp"  // the soft-argmax's per-element formulas (shared with the CPU)
#include "launch.cuh"                   // blocks_for, kThreads, block_sum, block_max

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::block_max;
using detail::block_sum;
using detail::kThreads;

using compute::keypoint_counts;  // lightning-pose's rule, shared with the host
namespace sp = compute::subpixel;

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
  // The CPU twin's formulas (compute/subpixel_maxima.hpp): scale * x - max as two
  // roundings, not one FMA; exp with the -104 cutoff; p = e * (1 / float(sum)).
  float m = -FLT_MAX;
  for (int i = threadIdx.x; i < size; i += blockDim.x) m = fmaxf(m, sp::softmax_logit(scale, in[i]));
  m = block_max(m, fshared, -FLT_MAX);
  double sum = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) {
    const float e = sp::softmax_exp_gpu(sp::softmax_exponent(scale, in[i], m));
    out[i] = e;
    sum += e;
  }
  sum = block_sum(sum, dshared);
  const float inv = __fdiv_rn(1.f, static_cast<float>(sum));
  for (int i = threadIdx.x; i < size; i += blockDim.x) out[i] = sp::mul(out[i], inv);
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
// lightning-pose's run_subpixelmaxima in float, with the CPU twin's arithmetic
// element for element: compute/subpixel_maxima.hpp holds the formulas both use,
// with every multiply and add rounded on its own (no FMA), so the upsampling and
// its adjoint give the CPU's bits. Each upsampling pass and each adjoint pass is one
// grid-stride kernel over a chunk of planes, one thread per output element, reading
// its taps in the CPU's order; the softmax and expectation take one block per plane.

// The x pass of bicubic x2: rows of n -> rows of 2n.
__global__ void up2_x_kernel(const float* in, int n, float* out, std::size_t total) {
  const int wide = 2 * n;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x)
    out[i] = sp::up2_at(in + (i / wide) * n, 1, n, static_cast<int>(i % wide));
}

// The y pass: [planes, n, width] -> [planes, 2n, width].
__global__ void up2_y_kernel(const float* in, int n, int width, float* out, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int c = static_cast<int>(i % width);
    const std::size_t line = i / width;  // plane * 2n + o
    const int o = static_cast<int>(line % (2 * n));
    out[i] = sp::up2_at(in + (line / (2 * n)) * n * width + c, width, n, o);
  }
}

// One pass of the pyramid blur over [planes, h, w]: the vertical one (along the
// columns) or the horizontal one; the CPU twin runs vertical, then horizontal.
template <bool kVertical>
__global__ void pyramid_pass_kernel(const float* in, int h, int w, float* out, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int c = static_cast<int>(i % w);
    const std::size_t line = i / w;  // plane * h + r
    const int r = static_cast<int>(line % h);
    const float* plane = in + (line / h) * h * w;
    out[i] = kVertical ? sp::pyramid_at(plane + c, w, h, r) : sp::pyramid_at(plane + std::size_t(r) * w, 1, w, c);
  }
}

// The adjoint of the x pass as a gather (deterministic, no atomics): rows of 2n -> n.
__global__ void up2_x_adjoint_kernel(const float* grad, int n, float* out, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x)
    out[i] = sp::up2_adjoint_at(grad + (i / n) * 2 * n, 1, n, static_cast<int>(i % n));
}

// The adjoint of the y pass: [planes, 2n, width] -> [planes, n, width].
__global__ void up2_y_adjoint_kernel(const float* grad, int n, int width, float* out, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int c = static_cast<int>(i % width);
    const std::size_t line = i / width;  // plane * n + row
    const int y = static_cast<int>(line % n);
    out[i] = sp::up2_adjoint_at(grad + (line / n) * 2 * n * width + c, width, n, y);
  }
}

// The softmax of (temperature * value) over one plane and its expectation of
// (column, row) relative to the first maximum (c0, r0) (compute/subpixel_maxima.hpp,
// expectation_at); one block of sp::kPlaneThreads threads per plane, every thread
// gets the result. e receives each pixel's e^(T v - max) and may be `in` itself
// (each thread reads a pixel before it writes it). The sums run in double over
// thread-strided pixels, then block_sum's tree (the host emulation in
// tests/unit/compute/test_soft_argmax_emulation.cpp follows the same order); the
// CPU twin adds in another order, also in double.
struct PlaneSoftmax {
  float inv = 0;  // 1 / float(sum of e): p = e * inv, as on the CPU
  int c0 = 0, r0 = 0;
  double ex_rel = 0, ey_rel = 0;  // sum p (c - c0), sum p (r - r0)
};

__device__ PlaneSoftmax plane_softmax(const float* in, float* e, int h, int w, float temperature) {
  __shared__ float fshared[32];
  __shared__ double dshared[32];
  __shared__ int ishared[32];
  const int size = h * w;
  float m = -FLT_MAX;
  for (int i = threadIdx.x; i < size; i += blockDim.x) m = fmaxf(m, sp::softmax_logit(temperature, in[i]));
  m = block_max(m, fshared, -FLT_MAX);  // exact: the same float as the CPU's maximum
  double total = 0.0;
  int peak = INT_MAX;  // the first pixel at the maximum (this thread's, then the block's)
  for (int i = threadIdx.x; i < size; i += blockDim.x) {
    const float z = sp::softmax_exponent(temperature, in[i], m);
    if (z == 0.f && i < peak) peak = i;
    const float v = sp::softmax_exp_gpu(z);
    e[i] = v;
    total = sp::dadd(total, double(v));
  }
  peak = -block_max(-peak, ishared, -INT_MAX);
  if (peak == INT_MAX) peak = 0;  // NaN maps: any reference will do
  PlaneSoftmax out;
  out.inv = __fdiv_rn(1.f, static_cast<float>(block_sum(total, dshared)));
  out.c0 = peak % w;
  out.r0 = peak / w;
  double sx = 0.0, sy = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) {
    const double p = sp::mul(e[i], out.inv);
    sx = sp::dadd(sx, sp::dmul(p, double(i % w - out.c0)));  // the products are exact in double
    sy = sp::dadd(sy, sp::dmul(p, double(i / w - out.r0)));
  }
  out.ex_rel = block_sum(sx, dshared);
  out.ey_rel = block_sum(sy, dshared);
  return out;
}

// Forward, one block per plane of [planes, h, w] at the final resolution: the
// coordinates, and the confidence (softmax mass within 2 pixels of the expectation
// truncated to integers, zero outside the map) summed as the CPU twin sums it.
__global__ void __launch_bounds__(sp::kPlaneThreads)
    expectation_kernel(const float* maps, float* e, int h, int w, float temperature, double offset, float* coords,
                       float* confidence) {
  const std::size_t size = std::size_t(h) * w;
  float* ep = e + blockIdx.x * size;
  const PlaneSoftmax sm = plane_softmax(maps + blockIdx.x * size, ep, h, w, temperature);
  if (threadIdx.x != 0) return;  // block_sum's barrier made every e visible
  const double ex = sp::expectation_at(sm.c0, sm.ex_rel), ey = sp::expectation_at(sm.r0, sm.ey_rel);
  if (!isfinite(ex) || !isfinite(ey)) {  // a diverged network: NaN keypoints and confidence, as the CPU twin
    coords[2 * blockIdx.x] = coords[2 * blockIdx.x + 1] = CUDART_NAN_F;
    if (confidence) confidence[blockIdx.x] = CUDART_NAN_F;
    return;
  }
  const int cx = static_cast<int>(ex), cy = static_cast<int>(ey);  // truncation, as .type(torch.int64)
  double conf = 0.0;
  for (int r = cy - 2; r <= cy + 2; ++r)
    for (int c = cx - 2; c <= cx + 2; ++c)
      if (r >= 0 && r < h && c >= 0 && c < w) conf = sp::dadd(conf, double(sp::mul(ep[r * w + c], sm.inv)));
  coords[2 * blockIdx.x] = static_cast<float>(ex - offset);
  coords[2 * blockIdx.x + 1] = static_cast<float>(ey - offset);
  if (confidence) confidence[blockIdx.x] = static_cast<float>(conf);
}

// The gradient at the final resolution, one block per plane:
// dz = T p (gx (c - ex) + gy (r - ey)). dz may be e (in place).
__global__ void __launch_bounds__(sp::kPlaneThreads)
    expectation_backward_kernel(const float* maps, float* e, int h, int w, float temperature, const float* dcoords,
                                float* dz) {
  const std::size_t size = std::size_t(h) * w;
  float* ep = e + blockIdx.x * size;
  float* out = dz + blockIdx.x * size;
  const PlaneSoftmax sm = plane_softmax(maps + blockIdx.x * size, ep, h, w, temperature);
  const double gx = dcoords[2 * blockIdx.x], gy = dcoords[2 * blockIdx.x + 1];
  for (int i = threadIdx.x; i < int(size); i += blockDim.x)
    out[i] = sp::expectation_grad(temperature, sp::mul(ep[i], sm.inv), gx, gy, i % w - sm.c0, i / w - sm.r0,
                                  sm.ex_rel, sm.ey_rel);
}

// lightning-pose's upsample() `upsamplings` times on `count` planes of h x w from
// `in`: a receives the result (h 2^d x w 2^d), b is the other ping-pong buffer (each
// holds count final-size planes).
void upsample_chunk(const float* in, int count, int h, int w, int upsamplings, float* a, float* b, cudaStream_t s) {
  int ch = h, cw = w;
  for (int step = 0; step < upsamplings; ++step) {
    std::size_t total = std::size_t(count) * ch * 2 * cw;
    up2_x_kernel<<<blocks_for(total), kThreads, 0, s>>>(step == 0 ? in : a, cw, b, total);  // [ch, 2cw]
    cw *= 2;
    total = std::size_t(count) * 2 * ch * cw;
    up2_y_kernel<<<blocks_for(total), kThreads, 0, s>>>(b, ch, cw, a, total);  // [2ch, 2cw]
    ch *= 2;
    pyramid_pass_kernel<true><<<blocks_for(total), kThreads, 0, s>>>(a, ch, cw, b, total);
    pyramid_pass_kernel<false><<<blocks_for(total), kThreads, 0, s>>>(b, ch, cw, a, total);
  }
}

// The adjoint of upsample_chunk, as the CPU twin's upsample_plane_adjoint: a holds
// the gradient at the final resolution (clobbered), `out` receives count planes of
// h x w. The pyramid blur (symmetric kernel, zero border) is its own adjoint.
void upsample_adjoint_chunk(float* a, float* b, int count, int h, int w, int upsamplings, float* out,
                            cudaStream_t s) {
  int ch = h << upsamplings, cw = w << upsamplings;
  for (int step = upsamplings - 1; step >= 0; --step) {
    std::size_t total = std::size_t(count) * ch * cw;
    pyramid_pass_kernel<true><<<blocks_for(total), kThreads, 0, s>>>(a, ch, cw, b, total);
    pyramid_pass_kernel<false><<<blocks_for(total), kThreads, 0, s>>>(b, ch, cw, a, total);
    ch /= 2;
    total = std::size_t(count) * ch * cw;
    up2_y_adjoint_kernel<<<blocks_for(total), kThreads, 0, s>>>(a, ch, cw, b, total);  // [ch, cw]
    cw /= 2;
    total = std::size_t(count) * ch * cw;
    up2_x_adjoint_kernel<<<blocks_for(total), kThreads, 0, s>>>(b, cw, step == 0 ? out : a, total);
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

int soft_argmax_chunk_planes(int planes, int h, int w, int upsamplings) {
  return sp::chunk_planes(planes, h, w, upsamplings);
}

std::size_t soft_argmax_scratch_floats(int chunk_planes, int h, int w, int upsamplings) {
  return sp::scratch_floats(chunk_planes, h, w, upsamplings);
}

// Per chunk: upsample into scratch (unless d = 0), then one block per plane. The
// chunks reuse the same scratch, in stream order.
void soft_argmax(const float* heatmaps, int planes, int h, int w, int upsamplings, float temperature,
                 float* coords, float* confidence, int chunk_planes, float* scratch, cudaStream_t s) {
  if (planes <= 0 || chunk_planes < 1) return;
  const std::size_t in_size = std::size_t(h) * w;
  float* a = scratch;
  float* b = scratch + std::size_t(chunk_planes) * sp::final_plane_size(h, w, upsamplings);
  const double offset = sp::upsampling_offset(upsamplings);
  for (int first = 0; first < planes; first += chunk_planes) {
    const int count = planes - first < chunk_planes ? planes - first : chunk_planes;
    const float* in = heatmaps + std::size_t(first) * in_size;
    if (upsamplings > 0) upsample_chunk(in, count, h, w, upsamplings, a, b, s);
    expectation_kernel<<<count, sp::kPlaneThreads, 0, s>>>(upsamplings > 0 ? a : in, a, h << upsamplings,
                                                           w << upsamplings, temperature, offset,
                                                           coords + 2 * std::size_t(first),
                                                           confidence ? confidence + first : nullptr);
  }
}

// Per chunk: the forward again (the upsampled maps are not kept), the gradient at
// the final resolution in place, then the adjoint of each upsampling step in
// reverse, the last one writing dheatmaps.
void soft_argmax_backward(const float* heatmaps, int planes, int h, int w, int upsamplings, float temperature,
                          const float* dcoords, float* dheatmaps, int chunk_planes, float* scratch, cudaStream_t s) {
  if (planes <= 0 || chunk_planes < 1) return;
  const std::size_t in_size = std::size_t(h) * w;
  float* a = scratch;
  float* b = scratch + std::size_t(chunk_planes) * sp::final_plane_size(h, w, upsamplings);
  for (int first = 0; first < planes; first += chunk_planes) {
    const int count = planes - first < chunk_planes ? planes - first : chunk_planes;
    const float* in = heatmaps + std::size_t(first) * in_size;
    float* out = dheatmaps + std::size_t(first) * in_size;
    const float* dc = dcoords + 2 * std::size_t(first);
    if (upsamplings == 0) {
      expectation_backward_kernel<<<count, sp::kPlaneThreads, 0, s>>>(in, a, h, w, temperature, dc, out);
      continue;
    }
    upsample_chunk(in, count, h, w, upsamplings, a, b, s);
    expectation_backward_kernel<<<count, sp::kPlaneThreads, 0, s>>>(a, a, h << upsamplings, w << upsamplings,
                                                                    temperature, dc, a);
    upsample_adjoint_chunk(a, b, count, h, w, upsamplings, out, s);
  }
}

}  // namespace trainer::kernels
