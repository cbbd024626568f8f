// Max pooling (PyTorch semantics: padding never wins, the first maximum in
// row-major window order wins, NaN propagates), ReLU, the residual add+ReLU,
// accumulation and pixel shuffle. Plain loops, parallel over planes or elements.
#include <algorithm>
#include <cmath>
#include <limits>

#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/cpu_storage16.hpp"  // any_16bit, Float32Input, Float32Output
#include "util/error.hpp"

namespace trainer::compute::cpu {

namespace {
constexpr long kParallelMin = 32768;  // below this, a thread team costs more than it saves

void check_pool(const Shape4& x, const Shape4& y, const PoolGeometry& g) {
  TRAINER_ASSERT(x.n == y.n && x.c == y.c && y.h == g.out(x.h) && y.w == g.out(x.w),
                 "maxpool: x " << x.str() << " y " << y.str() << " do not match the geometry");
}

// Window bounds clipped to the plane (padding never wins, so it is skipped).
struct Window {
  int ylo, yhi, xlo, xhi;
};
inline Window window(int h, int w, int oy, int ox, const PoolGeometry& g) {
  const int y0 = oy * g.stride - g.pad, x0 = ox * g.stride - g.pad;
  return {std::max(y0, 0), std::min(y0 + g.kernel, h), std::max(x0, 0), std::min(x0 + g.kernel, w)};
}

// Index (within the plane) of the window's first maximum in row-major order; with
// `nan_aware`, the first NaN wins instead (PyTorch). -1 for an empty window (not
// possible for PyTorch-valid geometries). Selects rather than branches: the
// comparisons are data dependent and would mispredict half the time.
template <bool nan_aware>
inline long window_argmax(const float* in, int w, const Window& win) {
  if (win.ylo >= win.yhi || win.xlo >= win.xhi) return -1;
  long best = long(win.ylo) * w + win.xlo;
  float bestv = in[best];
  for (int iy = win.ylo; iy < win.yhi; ++iy) {
    const float* row = in + long(iy) * w;
    for (int ix = win.xlo; ix < win.xhi; ++ix) {
      const float v = row[ix];
      const bool take = nan_aware ? (v > bestv) | ((v != v) & (bestv == bestv)) : v > bestv;
      best = take ? long(iy) * w + ix : best;
      bestv = take ? v : bestv;
    }
  }
  return best;
}

inline bool has_nan(const float* p, long n) {
  bool any = false;
#pragma omp simd reduction(| : any)
  for (long i = 0; i < n; ++i) any |= p[i] != p[i];
  return any;
}
}  // namespace

void CpuBackend::maxpool2d_forward(ConstTensorView x, TensorView y, const PoolGeometry& g,
                                   Stream& s) {
  if (any_16bit({x.storage, y.storage})) {
    Float32Output y32(y);
    maxpool2d_forward(Float32Input(x).view(), y32.view(), g, s);
    y32.store();
    return;
  }

  check_pool(x.shape, y.shape, g);
  enter();
  const long planes = long(x.shape.n) * x.shape.c;
  const int h = x.shape.h, w = x.shape.w, oh = y.shape.h, ow = y.shape.w;
#pragma omp parallel for schedule(static)
  for (long pl = 0; pl < planes; ++pl) {
    const float* in = x.data + pl * h * w;
    float* out = y.data + pl * oh * ow;
    const bool nan = has_nan(in, long(h) * w);
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        const Window win = window(h, w, oy, ox, g);
        float m = -std::numeric_limits<float>::infinity();
        if (nan) {
          const long a = window_argmax<true>(in, w, win);
          if (a >= 0) m = in[a];
        } else {
          for (int iy = win.ylo; iy < win.yhi; ++iy)
            for (int ix = win.xlo; ix < win.xhi; ++ix) m = std::max(m, in[long(iy) * w + ix]);
        }
        out[oy * ow + ox] = m;
      }
  }
}

void CpuBackend::maxpool2d_backward(ConstTensorView x, ConstTensorView dy, TensorView dx,
                                    const PoolGeometry& g, Stream& s) {
  if (any_16bit({x.storage, dy.storage, dx.storage})) {
    Float32Output dx32(dx);
    maxpool2d_backward(Float32Input(x).view(), Float32Input(dy).view(), dx32.view(), g, s);
    dx32.store();
    return;
  }

  check_pool(x.shape, dy.shape, g);
  TRAINER_ASSERT(dx.shape == x.shape, "maxpool2d_backward dx shape");
  enter();
  const long planes = long(x.shape.n) * x.shape.c;
  const int h = x.shape.h, w = x.shape.w, oh = dy.shape.h, ow = dy.shape.w;
#pragma omp parallel for schedule(static)
  for (long pl = 0; pl < planes; ++pl) {
    const float* in = x.data + pl * h * w;
    const float* d = dy.data + pl * oh * ow;
    float* o = dx.data + pl * h * w;
    for (long i = 0; i < long(h) * w; ++i) o[i] = 0.f;
    const bool nan = has_nan(in, long(h) * w);
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        const Window win = window(h, w, oy, ox, g);
        const long a = nan ? window_argmax<true>(in, w, win) : window_argmax<false>(in, w, win);
        if (a >= 0) o[a] += d[oy * ow + ox];
      }
  }
}

void CpuBackend::relu_forward(const float* x, float* y, std::size_t count, Stream&) {
  enter();
  const long n = long(count);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : (std::isnan(x[i]) ? x[i] : 0.f);
}

void CpuBackend::relu_backward(const float* y, const float* dy, float* dx, std::size_t count,
                               Stream&) {
  enter();
  const long n = long(count);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (long i = 0; i < n; ++i) {
    const float g = dy[i];  // loaded unconditionally: a select, not a branch
    dx[i] = y[i] > 0.f ? g : 0.f;
  }
}

void CpuBackend::add_relu_forward(const float* a, const float* b, float* y, std::size_t count,
                                  Stream&) {
  enter();
  const long n = long(count);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (long i = 0; i < n; ++i) {
    const float v = a[i] + b[i];
    y[i] = v > 0.f ? v : (std::isnan(v) ? v : 0.f);
  }
}

void CpuBackend::accumulate(const float* x, float* out, std::size_t count, Stream&) {
  enter();
  const long n = long(count);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (long i = 0; i < n; ++i) out[i] += x[i];
}

void CpuBackend::affine_points(float* xy, std::size_t points, const float* map, Stream&) {
  enter();
  AffineMap2D a;
  std::copy(map, map + 6, a.m);
  for (std::size_t i = 0; i < points; ++i) apply_affine(a, xy + 2 * i);
}

// PyTorch PixelShuffle(r): y[n, c, h*r + i, w*r + j] = x[n, c*r*r + i*r + j, h, w].
void CpuBackend::pixel_shuffle_forward(ConstTensorView x, TensorView y, int r, Stream&) {
  TRAINER_ASSERT(x.shape.c == y.shape.c * r * r && y.shape.h == x.shape.h * r &&
                     y.shape.w == x.shape.w * r && x.shape.n == y.shape.n,
                 "pixel_shuffle_forward x " << x.shape.str() << " y " << y.shape.str());
  enter();
  const long planes = long(y.shape.n) * y.shape.c;
  const int h = x.shape.h, w = x.shape.w, oh = y.shape.h, ow = y.shape.w;
#pragma omp parallel for schedule(static)
  for (long pl = 0; pl < planes; ++pl) {
    float* out = y.data + pl * oh * ow;
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < r; ++j) {
        const float* in = x.data + (pl * r * r + i * r + j) * long(h) * w;
        for (int yy = 0; yy < h; ++yy)
          for (int xx = 0; xx < w; ++xx) out[(yy * r + i) * ow + xx * r + j] = in[yy * w + xx];
      }
  }
}

void CpuBackend::pixel_shuffle_backward(ConstTensorView dy, TensorView dx, int r, Stream&) {
  TRAINER_ASSERT(dx.shape.c == dy.shape.c * r * r && dy.shape.h == dx.shape.h * r &&
                     dy.shape.w == dx.shape.w * r && dx.shape.n == dy.shape.n,
                 "pixel_shuffle_backward dy " << dy.shape.str() << " dx " << dx.shape.str());
  enter();
  const long planes = long(dy.shape.n) * dy.shape.c;
  const int h = dx.shape.h, w = dx.shape.w, oh = dy.shape.h, ow = dy.shape.w;
#pragma omp parallel for schedule(static)
  for (long pl = 0; pl < planes; ++pl) {
    const float* in = dy.data + pl * oh * ow;
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < r; ++j) {
        float* out = dx.data + (pl * r * r + i * r + j) * long(h) * w;
        for (int yy = 0; yy < h; ++yy)
          for (int xx = 0; xx < w; ++xx) out[yy * w + xx] = in[(yy * r + i) * ow + xx * r + j];
      }
  }
}

}  // namespace trainer::compute::cpu

namespace trainer::compute::cpu {

void CpuBackend::convert_storage(ConstTensorView src, TensorView dst, Stream&) {
  enter();
  convert_on_host(src, dst);
}

void CpuBackend::accumulate_tensor(ConstTensorView x, TensorView out, Stream& s) {
  TRAINER_ASSERT(x.shape == out.shape && x.storage == out.storage, "accumulate_tensor views");
  Float32Output out32(out);
  if (is_16bit(out.storage)) convert_on_host(out, out32.view());
  accumulate(Float32Input(x).data(), out32.view().data, x.shape.numel(), s);
  out32.store();
}

void CpuBackend::relu_backward_tensor(ConstTensorView y, ConstTensorView dy, TensorView dx, Stream& s) {
  TRAINER_ASSERT(y.shape == dy.shape && y.shape == dx.shape && y.storage == dy.storage && y.storage == dx.storage,
                 "relu_backward_tensor views");
  Float32Output dx32(dx);
  relu_backward(Float32Input(y).data(), Float32Input(dy).data(), dx32.view().data, dy.shape.numel(), s);
  dx32.store();
}

}  // namespace trainer::compute::cpu
