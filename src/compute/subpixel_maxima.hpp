#pragma once
// lightning-pose's run_subpixelmaxima (the soft-argmax that turns heatmaps into
// keypoints), element by element, written once for the CPU twin
// (cpu/cpu_heatmap.cpp), the CUDA kernels (kernels/heatmap.cu) and the unit test
// that runs the kernels' loop order on the host
// (tests/unit/compute/test_soft_argmax_emulation.cpp).
//
// The op: upsample the heatmap 2^d times, each step torch's bicubic x2
// (align_corners=False, A = -0.75) done separably (the x pass, then the y pass, each
// rounded to float) followed by kornia's 5x5 pyramid blur with a zero border (the
// vertical pass, then the horizontal one); softmax(temperature * x) over the plane;
// the expectation of (column, row) minus the grid offset (2^d - 1) / 2; the
// confidence, the softmax mass in the 5x5 window around the truncated expectation.
// The backward recomputes that forward and applies the adjoints.
//
// Why every multiply and add below is a named op: nvcc contracts a * b + c into one
// FMA (one rounding instead of two) wherever it can, and the CPU build (x86-64
// baseline, no FMA) never does, so the same expression rounds differently on the
// two. __fmul_rn / __fadd_rn are never contracted: with them the kernels reproduce
// the CPU twin's float results bit for bit through the upsampling and its adjoint.
// What remains between the two is the order of the plane-wide sums, all in double
// (the CPU's loops against the GPU's block reductions; see expectation_at), and
// exp's last bit (softmax_exp_gpu).
#include <cmath>    // std::exp, exp(double)
#include <cstddef>  // std::size_t, std::ptrdiff_t

#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute::subpixel {

// ---- rounding-exact arithmetic (never contracted into an FMA) -------------------
TRAINER_HOST_DEVICE inline float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
TRAINER_HOST_DEVICE inline float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
TRAINER_HOST_DEVICE inline float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
TRAINER_HOST_DEVICE inline double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TRAINER_HOST_DEVICE inline double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TRAINER_HOST_DEVICE inline double dsub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

// ---- bicubic x2 (torch interpolate, align_corners=False, A = -0.75) ----------------
struct CubicWeights {
  float w[4];
};

// PyTorch's cubic convolution weights for the fractional offset t: taps at
// distance t + 1, t, 1 - t, 2 - t. For t = 0.25 and 0.75 every weight is a short
// dyadic fraction, exact in float whatever the order of evaluation.
TRAINER_HOST_DEVICE inline float cubic_near(float x) {  // ((A + 2) x - (A + 3)) x x + 1
  constexpr float A = -0.75f;
  return add(mul(mul(sub(mul(A + 2.f, x), A + 3.f), x), x), 1.f);
}
TRAINER_HOST_DEVICE inline float cubic_far(float x) {  // ((A x - 5 A) x + 8 A) x - 4 A
  constexpr float A = -0.75f;
  return sub(mul(add(mul(sub(mul(A, x), 5.f * A), x), 8.f * A), x), 4.f * A);
}
TRAINER_HOST_DEVICE inline CubicWeights cubic_weights(float t) {
  return {{cubic_far(add(t, 1.f)), cubic_near(t), cubic_near(sub(1.f, t)), cubic_far(sub(2.f, t))}};
}

// Output o (of 2n) reads source coordinate (o + 0.5) / 2 - 0.5: i - 0.25 for
// o = 2i (taps i-2 .. i+1, t = 0.75), i + 0.25 for o = 2i + 1 (taps i-1 .. i+2,
// t = 0.25). first_tap is the index of weight 0's tap; taps clamp to [0, n-1].
TRAINER_HOST_DEVICE inline CubicWeights up2_weights(int o) { return cubic_weights((o & 1) ? 0.25f : 0.75f); }
TRAINER_HOST_DEVICE inline int first_tap(int o) { return o / 2 - 2 + (o & 1); }
TRAINER_HOST_DEVICE inline int clamp_tap(int i, int n) { return i < 0 ? 0 : (i > n - 1 ? n - 1 : i); }

// w0 a0 + w1 a1 + w2 a2 + w3 a3, left to right.
TRAINER_HOST_DEVICE inline float bicubic_sum(const CubicWeights& w, float a0, float a1, float a2, float a3) {
  return add(add(add(mul(w.w[0], a0), mul(w.w[1], a1)), mul(w.w[2], a2)), mul(w.w[3], a3));
}

// Output o (of 2n) of one line of n values `stride` apart (a row: stride 1, the x
// pass; a column: stride = the row width, the y pass), border taps clamped.
TRAINER_HOST_DEVICE inline float up2_at(const float* line, std::ptrdiff_t stride, int n, int o) {
  const CubicWeights w = up2_weights(o);
  const int i0 = first_tap(o);
  return bicubic_sum(w, line[clamp_tap(i0, n) * stride], line[clamp_tap(i0 + 1, n) * stride],
                     line[clamp_tap(i0 + 2, n) * stride], line[clamp_tap(i0 + 3, n) * stride]);
}

// The adjoint of up2_at as a gather: input i (of n) collects weight x gradient from
// every output o (of 2n) that reads it, o ascending and, within one o, its taps
// ascending (clamped taps included, each separately), starting from 0: the order in
// which the CPU twin's scatter (a[tap] += w[k] * g[o], o outer, k inner) adds them.
// Outputs 2i-3 .. 2i+4 are the only ones whose (clamped) taps reach i.
TRAINER_HOST_DEVICE inline float up2_adjoint_at(const float* grad_line, std::ptrdiff_t stride, int n, int i) {
  const int o0 = 2 * i - 3 > 0 ? 2 * i - 3 : 0;
  const int o1 = 2 * i + 4 < 2 * n - 1 ? 2 * i + 4 : 2 * n - 1;
  float acc = 0.f;
  for (int o = o0; o <= o1; ++o) {
    const CubicWeights w = up2_weights(o);
    const int i0 = first_tap(o);
    const float g = grad_line[o * stride];
    for (int k = 0; k < 4; ++k)
      if (clamp_tap(i0 + k, n) == i) acc = add(acc, mul(w.w[k], g));
  }
  return acc;
}

// ---- kornia's pyramid blur: [1 4 6 4 1] / 16 per direction, zero border ---------
TRAINER_HOST_DEVICE inline float pyramid_tap(int j) {  // j = 0 .. 4; exact in float
  return j == 2 ? 0.375f : (j == 1 || j == 3) ? 0.25f : 0.0625f;
}
// The taps j0 .. j1 of position pos (of n) that fall inside the line.
TRAINER_HOST_DEVICE inline void pyramid_taps(int pos, int n, int& j0, int& j1) {
  j0 = pos >= 2 ? 0 : 2 - pos;
  j1 = pos + 2 <= n - 1 ? 4 : n + 1 - pos;
}
// All five taps, left to right (an interior position).
TRAINER_HOST_DEVICE inline float pyramid_sum5(float a0, float a1, float a2, float a3, float a4) {
  return add(add(add(add(mul(pyramid_tap(0), a0), mul(pyramid_tap(1), a1)), mul(pyramid_tap(2), a2)),
                 mul(pyramid_tap(3), a3)),
             mul(pyramid_tap(4), a4));
}
// Position pos (of n) of one line (`stride` apart): the taps inside the line, left
// to right, the first product starting the sum (no leading 0; at an interior
// position this is pyramid_sum5).
TRAINER_HOST_DEVICE inline float pyramid_at(const float* line, std::ptrdiff_t stride, int n, int pos) {
  int j0, j1;
  pyramid_taps(pos, n, j0, j1);
  float acc = mul(pyramid_tap(j0), line[(pos + j0 - 2) * stride]);
  for (int j = j0 + 1; j <= j1; ++j) acc = add(acc, mul(pyramid_tap(j), line[(pos + j - 2) * stride]));
  return acc;
}

// ---- softmax(temperature * x), expectation, gradient ------------------------------
// Below -104, float exp is exactly 0: skipping it matters at temperature 1000,
// where almost every pixel is that far below the maximum.
inline constexpr float kSoftmaxCutoff = -104.f;

TRAINER_HOST_DEVICE inline float softmax_logit(float temperature, float x) { return mul(temperature, x); }
// temperature * x - max, as two roundings (never one FMA).
TRAINER_HOST_DEVICE inline float softmax_exponent(float temperature, float x, float max) {
  return sub(mul(temperature, x), max);
}
// The CPU twin's e^z: glibc's expf (within 0.502 ulp of the exact value).
inline float softmax_exp_cpu(float z) { return z < kSoftmaxCutoff ? 0.f : std::exp(z); }
// The kernels' e^z: exp in double rounded once to float, i.e. correctly rounded bar
// double-rounding ties; CUDA's expf is only within 2 ulp. The two can thus differ
// only where the exact value lies within 0.002 ulp of a rounding midpoint.
TRAINER_HOST_DEVICE inline float softmax_exp_gpu(float z) {
  return z < kSoftmaxCutoff ? 0.f : static_cast<float>(exp(static_cast<double>(z)));
}

// The grid offset subtracted from the expectation: a one-hot at heatmap pixel p
// then maps to image pixel p * 2^d (lightning-pose uses 2.5 instead of 3.5 for
// d = 3, a slip not copied here).
TRAINER_HOST_DEVICE inline double upsampling_offset(int upsamplings) { return ((1 << upsamplings) - 1) / 2.0; }

// The expectation is taken relative to the plane's first maximum (c0, r0), the
// first pixel in row-major order whose temperature * x equals the maximum:
//   ex = c0 + sum p (c - c0),   ey = r0 + sum p (r - r0),
// with p = e * (1 / float(sum e)), every sum in double. Why: at temperature 1000 the
// softmax is often nearly one-hot, and the backward's c - ex is then a small
// difference of two coordinates. Taken absolutely, ex carries its rounding (about
// 1e-5 px as a float sum, 1e-14 px in double) into T p (c - ex), and two summation
// orders (the CPU's SIMD lanes, a block's tree) then disagreed by up to 7e-4 of the
// largest gradient (measured, float sums, d = 3). Relative to the peak, each
// product p (c - c0) is exact in double and the sum is accurate to its own size,
// so CPU and GPU agree to the last bits of p.
TRAINER_HOST_DEVICE inline double expectation_at(int peak, double relative) { return dadd(double(peak), relative); }

// The backward: coords = sum p (c, r) - offset with p = softmax(T z), so
// dz = T p (gx (c - ex) + gy (r - ey)), gx, gy the coords' gradient; dc = c - c0,
// dr = r - r0 and ex_rel = ex - c0, ey_rel = ey - r0 as above.
TRAINER_HOST_DEVICE inline float expectation_grad(float temperature, float p, double gx, double gy, int dc, int dr,
                                                  double ex_rel, double ey_rel) {
  return static_cast<float>(dmul(dmul(double(temperature), double(p)),
                                 dadd(dmul(gx, dsub(double(dc), ex_rel)), dmul(gy, dsub(double(dr), ey_rel)))));
}

// ---- the kernels' work split (host side) -----------------------------------------
// The kernels keep two float buffers of the final (upsampled) plane size per plane
// in the stream's scratch and walk the planes in chunks, so the scratch stays at
// most kScratchBound bytes whatever the batch (or one plane's two buffers,
// 8 * 4^d * h * w bytes, if a single plane needs more). 64 x 64 heatmaps at d = 2:
// 512 KiB per plane, 128 planes per chunk.
inline constexpr std::size_t kScratchBound = std::size_t(64) << 20;  // 64 MiB
// Threads of the one block per plane that reduces the softmax (the order of its
// sums, which the host emulation follows, depends on it).
inline constexpr int kPlaneThreads = 1024;

inline std::size_t final_plane_size(int h, int w, int upsamplings) {
  return (std::size_t(h) << upsamplings) * (std::size_t(w) << upsamplings);
}
// Planes per chunk (at least 1, at most `planes`) and the scratch floats it needs.
inline int chunk_planes(int planes, int h, int w, int upsamplings, std::size_t bound_bytes = kScratchBound) {
  const std::size_t per_plane = 2 * final_plane_size(h, w, upsamplings) * sizeof(float);
  std::size_t chunk = per_plane ? bound_bytes / per_plane : std::size_t(planes);
  if (chunk < 1) chunk = 1;
  return chunk < std::size_t(planes) ? int(chunk) : planes;
}
inline std::size_t scratch_floats(int chunk, int h, int w, int upsamplings) {
  return 2 * std::size_t(chunk) * final_plane_size(h, w, upsamplings);
}

}  // namespace trainer::compute::subpixel
