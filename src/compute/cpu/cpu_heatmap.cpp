// Input normalization and the heatmap ops (targets, spatial softmax, the masked
// heatmap losses, soft-argmax). These are the CPU twins of the CUDA kernels in
// kernels/; semantics follow lightning-pose and are written out in docs/COMPUTE.md.
#include <algorithm>
#include <cmath>
#include <limits>  // std::numeric_limits (NaN keypoints)
#include <vector>

#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/cpu_subpixel.hpp"     // subpixel_upsample, subpixel_upsample_adjoint
#include "compute/keypoint_rule.hpp"        // keypoint_counts, wants_uniform_target
#include "compute/losses/heatmap_loss.hpp"  // HeatmapLoss, kHeatmapLossWeight
#include "compute/subpixel_maxima.hpp"      // the soft-argmax's per-element formulas
#include "util/error.hpp"

namespace trainer::compute::cpu {

void CpuBackend::normalize_images(const std::uint8_t* src, int in_channels, TensorView dst,
                                  const float mean[3], const float std[3], Stream&) {
  TRAINER_ASSERT((in_channels == 1 || in_channels == 3) && dst.shape.c == 3,
                 "normalize_images: " << in_channels << " input channels into " << dst.shape.str());
  enter();
  const int n = dst.shape.n, h = dst.shape.h, w = dst.shape.w;
  const long hw = long(h) * w;
#pragma omp parallel for schedule(static) collapse(2)
  for (int b = 0; b < n; ++b)
    for (int c = 0; c < 3; ++c) {
      const int sc = in_channels == 1 ? 0 : c;
      const std::uint8_t* in = src + long(b) * hw * in_channels + sc;
      float* out = dst.data + (long(b) * 3 + c) * hw;
      const float m = mean[c], inv = 1.f / std[c];
      for (long i = 0; i < hw; ++i) out[i] = (float(in[i * in_channels]) / 255.f - m) * inv;
    }
}

// lightning-pose generate_heatmaps: a keypoint counts unless NaN or outside
// [-1, W+1] x [-1, H+1] (heatmap pixels); its target is exp(-d^2 / (2 sigma^2))
// over the pixel grid (pixel i at coordinate i), normalized to sum 1.
void CpuBackend::heatmap_targets(const float* keypoints, TensorView targets, float sigma,
                                 float* mask, Stream&) {
  enter();
  const int nk = targets.shape.n * targets.shape.c;
  const int h = targets.shape.h, w = targets.shape.w;
  const long hw = long(h) * w;
  const double inv2s2 = 1.0 / (2.0 * double(sigma) * double(sigma));
#pragma omp parallel for schedule(static)
  for (int i = 0; i < nk; ++i) {
    const float x = keypoints[2 * i], y = keypoints[2 * i + 1];
    float* out = targets.data + long(i) * hw;
    const bool valid = keypoint_counts(x, y, h, w);
    const bool uniform = wants_uniform_target(x, y);
    if (mask) mask[i] = (valid || uniform) ? 1.f : 0.f;
    if (uniform) {
      std::fill(out, out + hw, float(1.0 / double(hw)));
      continue;
    }
    if (!valid) {
      std::fill(out, out + hw, 0.f);
      continue;
    }
    double total = 0;
    for (int r = 0; r < h; ++r)
      for (int c = 0; c < w; ++c) {
        const double dx = c - double(x), dy = r - double(y);
        const double v = std::exp(-(dx * dx + dy * dy) * inv2s2);
        out[long(r) * w + c] = float(v);
        total += v;
      }
    const float inv = float(1.0 / total);
    for (long j = 0; j < hw; ++j) out[j] *= inv;
  }
}

namespace {
// softmax(t * x) over one plane (kornia spatial_softmax2d: the temperature multiplies).
// The exponent and exp (with its -104 cutoff) are subpixel_maxima.hpp's, shared
// with the kernels.
void softmax_plane(const float* x, float t, float* y, long hw) {
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (long i = 0; i < hw; ++i) mx = std::max(mx, subpixel::softmax_logit(t, x[i]));
  for (long i = 0; i < hw; ++i) y[i] = subpixel::softmax_exp_cpu(subpixel::softmax_exponent(t, x[i], mx));
  float total = 0;
#pragma omp simd reduction(+ : total)
  for (long i = 0; i < hw; ++i) total += y[i];
  const float inv = 1.f / total;
#pragma omp simd
  for (long i = 0; i < hw; ++i) y[i] *= inv;
}
}  // namespace

void CpuBackend::spatial_softmax_forward(ConstTensorView x, float temperature, TensorView y,
                                         Stream&) {
  TRAINER_ASSERT(x.shape == y.shape, "spatial_softmax_forward shapes");
  enter();
  const long planes = long(x.shape.n) * x.shape.c, hw = long(x.shape.plane());
#pragma omp parallel for schedule(static)
  for (long p = 0; p < planes; ++p) softmax_plane(x.data + p * hw, temperature, y.data + p * hw, hw);
}

// dx = t * y * (dy - sum(y * dy)) per plane.
void CpuBackend::spatial_softmax_backward(ConstTensorView y, ConstTensorView dy, float temperature,
                                          TensorView dx, Stream&) {
  TRAINER_ASSERT(y.shape == dy.shape && y.shape == dx.shape, "spatial_softmax_backward shapes");
  enter();
  const long planes = long(y.shape.n) * y.shape.c, hw = long(y.shape.plane());
#pragma omp parallel for schedule(static)
  for (long p = 0; p < planes; ++p) {
    const float* yp = y.data + p * hw;
    const float* dp = dy.data + p * hw;
    float* o = dx.data + p * hw;
    double dot = 0;
    for (long i = 0; i < hw; ++i) dot += double(yp[i]) * dp[i];
    const float d = float(dot);
    for (long i = 0; i < hw; ++i) o[i] = temperature * yp[i] * (dp[i] - d);
  }
}

// lightning-pose's heatmap losses (HeatmapMSELoss, HeatmapKLLoss, ...) with weight
// 0.5 (1 / (2 exp(log_weight)), log_weight 0): the mean over the counted keypoints
// of the loss's per-plane value (compute/losses/). No counted keypoint: loss 0,
// gradient 0.
void CpuBackend::heatmap_loss(ConstTensorView pred, ConstTensorView target, const float* mask,
                              const HeatmapLoss& type, float* loss, float* dpred, float loss_scale,
                              Stream&) {
  TRAINER_ASSERT(pred.shape == target.shape, "heatmap_loss shapes " << pred.shape.str() << " "
                                                                    << target.shape.str());
  enter();
  const int nk = pred.shape.n * pred.shape.c;
  const long hw = long(pred.shape.plane());
  std::vector<char> counted(nk);
  int nvalid = 0;
  for (int i = 0; i < nk; ++i) {
    bool c;
    if (mask) {
      c = mask[i] != 0.f;
    } else {  // lightning-pose's own rule: an all-zero target is excluded
      const float* t = target.data + long(i) * hw;
      c = std::any_of(t, t + hw, [](float v) { return v != 0.f; });
    }
    counted[i] = c;
    nvalid += c;
  }
  const double per_kp = nvalid ? kHeatmapLossWeight / nvalid : 0.0;
  // Per-keypoint sums, added up serially afterwards: an OpenMP reduction would add
  // the threads' partial sums in arrival order, and --resume must be bit-exact.
  std::vector<double> per(nk, 0.0);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < nk; ++i) {
    float* g = dpred ? dpred + long(i) * hw : nullptr;
    if (!counted[i]) {
      if (g) std::fill(g, g + hw, 0.f);
      continue;
    }
    per[i] = type.plane_cpu(pred.data + long(i) * hw, target.data + long(i) * hw, hw,
                            per_kp * loss_scale, g);
  }
  double total = 0;
  for (double v : per) total += v;
  loss[0] = float(total * per_kp);
}

namespace {

namespace sp = subpixel;  // the per-element formulas shared with the kernels

// torch interpolate(scale 2, bicubic, align_corners=False) in one direction
// (subpixel_maxima.hpp: weights, taps, the 4-tap sum, borders clamped).
// Upsamples `rows` rows of length n to length 2n into `out`: the horizontal pass.
void bicubic_up2_x(const float* in, int rows, int n, float* out) {
  const sp::CubicWeights we = sp::up2_weights(0), wo = sp::up2_weights(1);
  for (int r = 0; r < rows; ++r) {
    const float* a = in + std::size_t(r) * n;
    float* b = out + std::size_t(r) * 2 * n;
    for (int o = 0; o < 2 * n; ++o) {
      const int i0 = sp::first_tap(o);
      if (i0 >= 0 && i0 + 3 < n)  // interior: no clamping (what up2_at computes there)
        b[o] = sp::bicubic_sum((o & 1) ? wo : we, a[i0], a[i0 + 1], a[i0 + 2], a[i0 + 3]);
      else
        b[o] = sp::up2_at(a, 1, n, o);
    }
  }
}

// The vertical pass: [n, width] -> [2n, width], whole rows at a time (vectorizable).
void bicubic_up2_y(const float* in, int n, int width, float* out) {
  const sp::CubicWeights we = sp::up2_weights(0), wo = sp::up2_weights(1);
  for (int o = 0; o < 2 * n; ++o) {
    const sp::CubicWeights& w = (o & 1) ? wo : we;
    const int i0 = sp::first_tap(o);
    const float* r[4];
    for (int k = 0; k < 4; ++k) r[k] = in + std::size_t(sp::clamp_tap(i0 + k, n)) * width;
    float* b = out + std::size_t(o) * width;
#pragma omp simd
    for (int c = 0; c < width; ++c) b[c] = sp::bicubic_sum(w, r[0][c], r[1][c], r[2][c], r[3][c]);
  }
}

// kornia filter2d with the 5x5 pyramid kernel [1 4 6 4 1]^T [1 4 6 4 1] / 256 and
// zero ("constant") borders, separably: `tmp` receives the vertical pass. Each
// output sums its taps inside the plane left to right, the first product starting
// the sum (sp::pyramid_at), as the kernels do.
void pyramid_blur(float* plane, int h, int w, float* tmp) {
  for (int r = 0; r < h; ++r) {
    float* t = tmp + std::size_t(r) * w;
    int j0, j1;
    sp::pyramid_taps(r, h, j0, j1);
    const float* first = plane + std::size_t(r + j0 - 2) * w;
    const float k0 = sp::pyramid_tap(j0);
#pragma omp simd
    for (int c = 0; c < w; ++c) t[c] = sp::mul(k0, first[c]);
    for (int j = j0 + 1; j <= j1; ++j) {
      const float* src = plane + std::size_t(r + j - 2) * w;
      const float kj = sp::pyramid_tap(j);
#pragma omp simd
      for (int c = 0; c < w; ++c) t[c] = sp::add(t[c], sp::mul(kj, src[c]));
    }
  }
  const int lo = std::min(2, w), hi = std::max(lo, w - 2);  // columns [lo, hi) have all five taps
  for (int r = 0; r < h; ++r) {
    const float* t = tmp + std::size_t(r) * w;
    float* o = plane + std::size_t(r) * w;
    for (int c = 0; c < lo; ++c) o[c] = sp::pyramid_at(t, 1, w, c);
#pragma omp simd
    for (int c = lo; c < hi; ++c) o[c] = sp::pyramid_sum5(t[c - 2], t[c - 1], t[c], t[c + 1], t[c + 2]);
    for (int c = hi; c < w; ++c) o[c] = sp::pyramid_at(t, 1, w, c);
  }
}

// lightning-pose upsample(): bicubic x2 then the pyramid blur. `plane` holds h x w
// on entry and 2h x 2w on return; `tmp` is scratch of at least 4 h w floats.
void upsample_plane(std::vector<float>& plane, int& h, int& w, std::vector<float>& tmp) {
  tmp.resize(std::size_t(4) * h * w);
  bicubic_up2_x(plane.data(), h, w, tmp.data());  // [h, 2w]
  plane.resize(std::size_t(4) * h * w);
  bicubic_up2_y(tmp.data(), h, 2 * w, plane.data());  // [2h, 2w]
  h *= 2;
  w *= 2;
  pyramid_blur(plane.data(), h, w, tmp.data());
}

// Adjoints of the upsampling passes, for the soft-argmax's backward: each input
// tap receives weight x output gradient, clamped taps included. The kernels gather
// the same products in the same order (sp::up2_adjoint_at).
void bicubic_up2_x_adjoint(const float* dout, int rows, int n, float* din) {
  const sp::CubicWeights we = sp::up2_weights(0), wo = sp::up2_weights(1);
  for (int r = 0; r < rows; ++r) {
    const float* b = dout + std::size_t(r) * 2 * n;
    float* a = din + std::size_t(r) * n;
    for (int i = 0; i < n; ++i) a[i] = 0.f;
    for (int o = 0; o < 2 * n; ++o) {
      const sp::CubicWeights& w = (o & 1) ? wo : we;
      const int i0 = sp::first_tap(o);
      for (int k = 0; k < 4; ++k) {
        float& at = a[sp::clamp_tap(i0 + k, n)];
        at = sp::add(at, sp::mul(w.w[k], b[o]));
      }
    }
  }
}

void bicubic_up2_y_adjoint(const float* dout, int n, int width, float* din) {
  const sp::CubicWeights we = sp::up2_weights(0), wo = sp::up2_weights(1);
  std::fill(din, din + std::size_t(n) * width, 0.f);
  for (int o = 0; o < 2 * n; ++o) {
    const sp::CubicWeights& w = (o & 1) ? wo : we;
    const int i0 = sp::first_tap(o);
    const float* b = dout + std::size_t(o) * width;
    for (int k = 0; k < 4; ++k) {
      float* r = din + std::size_t(sp::clamp_tap(i0 + k, n)) * width;
      const float wk = w.w[k];
#pragma omp simd
      for (int c = 0; c < width; ++c) r[c] = sp::add(r[c], sp::mul(wk, b[c]));
    }
  }
}

// The adjoint of upsample_plane: `grad` holds 2h x 2w (h, w the sizes after the
// forward step) on entry and h/2 x w/2 on return. The pyramid blur with zero
// borders and a symmetric kernel is its own adjoint.
void upsample_plane_adjoint(std::vector<float>& grad, int& h, int& w, std::vector<float>& tmp) {
  tmp.resize(std::size_t(h) * w);
  pyramid_blur(grad.data(), h, w, tmp.data());
  h /= 2;
  w /= 2;
  bicubic_up2_y_adjoint(grad.data(), h, 2 * w, tmp.data());  // [h, 2w]
  grad.resize(std::size_t(h) * w);
  bicubic_up2_x_adjoint(tmp.data(), h, w, grad.data());
}

// The forward both soft-argmax ops share, per plane: upsample `upsamplings` times
// into `plane` (h x w on return), softmax of temperature x plane into `sm`, and its
// expectation of (column, row) relative to the first maximum (c0, r0). Every sum is
// in double (subpixel_maxima.hpp, expectation_at: the kernels then agree with it to
// the last bits of p).
struct UpsampledSoftmax {
  int h = 0, w = 0;
  int c0 = 0, r0 = 0;            // the first pixel where temperature * x is largest
  double ex_rel = 0, ey_rel = 0;  // sum p (c - c0), sum p (r - r0)
  double ex() const { return subpixel::expectation_at(c0, ex_rel); }
  double ey() const { return subpixel::expectation_at(r0, ey_rel); }
};
UpsampledSoftmax upsampled_softmax(const float* heatmap, int h, int w, int upsamplings, float temperature,
                                   std::vector<float>& plane, std::vector<float>& tmp, std::vector<float>& sm) {
  namespace sp = subpixel;
  UpsampledSoftmax out;
  plane.assign(heatmap, heatmap + std::size_t(h) * w);
  for (int d = 0; d < upsamplings; ++d) upsample_plane(plane, h, w, tmp);
  const long n = long(plane.size());
  sm.resize(plane.size());
  const float* x = plane.data();
  float* y = sm.data();
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (long i = 0; i < n; ++i) mx = std::max(mx, sp::softmax_logit(temperature, x[i]));
  // At temperature 1000 only a few rows hold a non-zero e: the sums skip the rest
  // (adding zeros would change no bit) and so stay cheap in double.
  long peak = -1, first = -1, last = -1;
  double total = 0;
  for (long i = 0; i < n; ++i) {
    const float z = sp::softmax_exponent(temperature, x[i], mx);
    if (z == 0.f && peak < 0) peak = i;
    const float e = sp::softmax_exp_cpu(z);
    y[i] = e;
    if (e != 0.f) {
      total += e;
      if (first < 0) first = i;
      last = i;
    }
  }
  if (peak < 0) peak = 0;  // NaN maps: any reference will do
  out.c0 = int(peak % w);
  out.r0 = int(peak / w);
  out.h = h;
  out.w = w;
  if (first < 0) return out;  // nothing but NaN
  const float inv = 1.f / float(total);
  const int row_first = int(first / w), row_last = int(last / w);
#pragma omp simd
  for (long i = long(row_first) * w; i < long(row_last + 1) * w; ++i) y[i] = sp::mul(y[i], inv);
  for (int r = row_first; r <= row_last; ++r) {
    const float* row = y + std::size_t(r) * w;
    double rs = 0, rx = 0;
#pragma omp simd reduction(+ : rs, rx)
    for (int c = 0; c < w; ++c) {
      rs += row[c];
      rx += double(row[c]) * double(c - out.c0);  // exact products
    }
    out.ex_rel += rx;
    out.ey_rel += rs * double(r - out.r0);
  }
  return out;
}

}  // namespace

void subpixel_upsample(const float* plane, int h, int w, int upsamplings, std::vector<float>& out) {
  std::vector<float> tmp;
  out.assign(plane, plane + std::size_t(h) * w);
  for (int d = 0; d < upsamplings; ++d) upsample_plane(out, h, w, tmp);
}

void subpixel_upsample_adjoint(const float* grad, int h, int w, int upsamplings, std::vector<float>& out) {
  int gh = h << upsamplings, gw = w << upsamplings;
  std::vector<float> tmp;
  out.assign(grad, grad + std::size_t(gh) * gw);
  for (int d = 0; d < upsamplings; ++d) upsample_plane_adjoint(out, gh, gw, tmp);
}

// lightning-pose run_subpixelmaxima: upsample 2^d, softmax(temperature * x),
// expectation of (x, y), confidence = softmax mass in the 5x5 window around the
// truncated expectation, then the grid offset (2^d - 1) / 2 is subtracted.
void CpuBackend::soft_argmax(ConstTensorView heatmaps, int downsample_factor, float temperature,
                             float* coords, float* confidence, Stream&) {
  TRAINER_ASSERT(downsample_factor >= 0 && downsample_factor <= 5,
                 "soft_argmax: downsample_factor " << downsample_factor);
  enter();
  const int nk = heatmaps.shape.n * heatmaps.shape.c;
  const long hw = long(heatmaps.shape.plane());
  const double offset = subpixel::upsampling_offset(downsample_factor);
#pragma omp parallel
  {
    std::vector<float> plane, tmp, sm;  // per thread, reused across planes
#pragma omp for schedule(dynamic)
    for (int i = 0; i < nk; ++i) {
      const UpsampledSoftmax u = upsampled_softmax(heatmaps.data + long(i) * hw, heatmaps.shape.h, heatmaps.shape.w,
                                                   downsample_factor, temperature, plane, tmp, sm);
      const int h = u.h, w = u.w;
      const double ex = u.ex(), ey = u.ey();
      if (!std::isfinite(ex) || !std::isfinite(ey)) {
        // A diverged network's NaN heatmap: NaN keypoints and confidence (casting
        // NaN to int, as below, is undefined; the kernel follows the same rule).
        coords[2 * i] = coords[2 * i + 1] = std::numeric_limits<float>::quiet_NaN();
        if (confidence) confidence[i] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      const int cx = int(ex), cy = int(ey);  // truncation, as .type(torch.int64)
      double conf = 0;
      for (int r = cy - 2; r <= cy + 2; ++r)
        for (int c = cx - 2; c <= cx + 2; ++c)
          if (r >= 0 && r < h && c >= 0 && c < w) conf += sm[std::size_t(r) * w + c];
      coords[2 * i] = float(ex - offset);
      coords[2 * i + 1] = float(ey - offset);
      if (confidence) confidence[i] = float(conf);
    }
  }
}

// The soft-argmax's backward (the coordinates only; the confidence is not
// differentiated, as lightning-pose uses it only to mask losses). It recomputes the
// forward per plane rather than keeping the upsampled maps (4^d times the heatmap).
// coords = sum p * (c, r) - offset with p = softmax(T z), so
// dz = T p (gx (c - ex) + gy (r - ey)), and dheatmaps = upsample^T dz.
void CpuBackend::soft_argmax_backward(ConstTensorView heatmaps, int downsample_factor,
                                      float temperature, const float* dcoords,
                                      TensorView dheatmaps, Stream&) {
  TRAINER_ASSERT(downsample_factor >= 0 && downsample_factor <= 5,
                 "soft_argmax_backward: downsample_factor " << downsample_factor);
  TRAINER_ASSERT(heatmaps.shape == dheatmaps.shape, "soft_argmax_backward shapes");
  enter();
  const int nk = heatmaps.shape.n * heatmaps.shape.c;
  const long hw = long(heatmaps.shape.plane());
#pragma omp parallel
  {
    std::vector<float> plane, tmp, sm;
#pragma omp for schedule(dynamic)
    for (int i = 0; i < nk; ++i) {
      const UpsampledSoftmax u = upsampled_softmax(heatmaps.data + long(i) * hw, heatmaps.shape.h, heatmaps.shape.w,
                                                   downsample_factor, temperature, plane, tmp, sm);
      int h = u.h, w = u.w;
      const double gx = dcoords[2 * i], gy = dcoords[2 * i + 1];
      for (int r = 0; r < h; ++r)
        for (int c = 0; c < w; ++c) {
          const std::size_t at = std::size_t(r) * w + c;
          plane[at] = subpixel::expectation_grad(temperature, sm[at], gx, gy, c - u.c0, r - u.r0, u.ex_rel, u.ey_rel);
        }
      for (int d = 0; d < downsample_factor; ++d) upsample_plane_adjoint(plane, h, w, tmp);
      std::copy(plane.begin(), plane.end(), dheatmaps.data + long(i) * hw);
    }
  }
}

}  // namespace trainer::compute::cpu
