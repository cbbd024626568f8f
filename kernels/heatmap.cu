// Heatmap kernels; see heatmap.cuh. Each plane (n, k) is one block: planes are
// small (64x64 for 256x256 frames) and every op needs a per-plane reduction.
#include "heatmap.cuh"

#include <cfloat>  // FLT_MAX

#include "launch.cuh"  // blocks_for, kThreads, block_sum, block_max

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::block_max;
using detail::block_sum;
using detail::kThreads;

// A keypoint counts when both coordinates are finite and inside the heatmap.
__device__ inline bool keypoint_in_range(float x, float y, int h, int w) {
  return isfinite(x) && isfinite(y) && x >= 0.f && y >= 0.f && x < float(w) && y < float(h);
}

__global__ void targets_kernel(const float* keypoints, int h, int w, float sigma, float* targets,
                               float* mask) {
  __shared__ double shared[32];
  const int plane = blockIdx.x;
  const int size = h * w;
  float* out = targets + std::size_t(plane) * size;
  const float kx = keypoints[2 * plane], ky = keypoints[2 * plane + 1];
  const bool valid = keypoint_in_range(kx, ky, h, w);
  if (threadIdx.x == 0) mask[plane] = valid ? 1.f : 0.f;
  if (!valid) {
    for (int i = threadIdx.x; i < size; i += blockDim.x) out[i] = 0.f;
    return;
  }
  const float denom = 2.f * sigma * sigma;
  double sum = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) {
    const float dx = float(i % w) - kx, dy = float(i / w) - ky;
    const float v = expf(-(dx * dx + dy * dy) / denom);
    out[i] = v;
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

// lightning-pose adds 1e-10 to both heatmaps before the KL / JS divergences.
constexpr float kDivergenceEps = 1e-10f;

// Number of planes with mask != 0 (every block recounts: planes are few).
__device__ inline int count_valid(const float* mask, int planes, double* shared) {
  double c = 0.0;
  for (int i = threadIdx.x; i < planes; i += blockDim.x) c += mask[i] != 0.f ? 1.0 : 0.0;
  return static_cast<int>(block_sum(c, shared) + 0.5);
}

// Per plane: scratch[plane] = the plane's loss (MSE: sum of squared errors, i.e.
// mean * H*W as lightning-pose scales it; KL(target || pred); JS), and dpred.
__global__ void loss_planes_kernel(const float* pred, const float* target, const float* mask,
                                   int planes, int size, LossKind kind, float* dpred,
                                   float loss_scale, double* scratch) {
  __shared__ double shared[32];
  const int plane = blockIdx.x;
  const int valid = count_valid(mask, planes, shared);
  const std::size_t base = std::size_t(plane) * size;
  const bool use = mask[plane] != 0.f;
  if (!use) {
    if (dpred)
      for (int i = threadIdx.x; i < size; i += blockDim.x) dpred[base + i] = 0.f;
    if (threadIdx.x == 0) scratch[plane] = 0.0;
    return;
  }
  const float g = valid > 0 ? loss_scale / float(valid) : 0.f;
  double acc = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) {
    const float p = pred[base + i], t = target[base + i];
    float grad = 0.f;
    switch (kind) {
      case LossKind::mse: {
        const float d = p - t;
        acc += double(d) * d;
        grad = 2.f * d;
        break;
      }
      case LossKind::kl: {
        const float pe = p + kDivergenceEps, te = t + kDivergenceEps;
        acc += double(te) * (double(logf(te)) - double(logf(pe)));
        grad = -te / pe;
        break;
      }
      case LossKind::js: {
        const float pe = p + kDivergenceEps, te = t + kDivergenceEps;
        const float m = 0.5f * (pe + te);
        const float lm = logf(m), lp = logf(pe);
        acc += 0.5 * double(te) * (double(logf(te)) - lm) + 0.5 * double(pe) * (double(lp) - lm);
        grad = 0.5f * (lp - lm);
        break;
      }
    }
    if (dpred) dpred[base + i] = grad * g;
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) scratch[plane] = acc;
}

__global__ void loss_total_kernel(const double* scratch, const float* mask, int planes, float* loss) {
  __shared__ double shared[32];
  double sum = 0.0, valid = 0.0;
  for (int i = threadIdx.x; i < planes; i += blockDim.x) {
    sum += scratch[i];
    valid += mask[i] != 0.f ? 1.0 : 0.0;
  }
  sum = block_sum(sum, shared);
  valid = block_sum(valid, shared);
  if (threadIdx.x == 0) loss[0] = valid > 0.0 ? static_cast<float>(sum / valid) : 0.f;
}

// ---- soft-argmax ---------------------------------------------------------------

// PyTorch's bicubic convolution coefficients (A = -0.75).
__device__ inline void cubic_coefficients(float t, float c[4]) {
  const float A = -0.75f;
  auto near = [A](float x) { return ((A + 2.f) * x - (A + 3.f)) * x * x + 1.f; };
  auto far = [A](float x) { return ((A * x - 5.f * A) * x + 8.f * A) * x - 4.f * A; };
  c[0] = far(t + 1.f);
  c[1] = near(t);
  c[2] = near(1.f - t);
  c[3] = far(2.f - t);
}

// F.interpolate(scale 2, mode="bicubic", align_corners=False): source index
// 0.5 * (dst + 0.5) - 0.5, neighbours clamped to the border.
__global__ void bicubic_up2_kernel(const float* in, int h, int w, float* out, std::size_t total) {
  const int H = 2 * h, W = 2 * w;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int X = static_cast<int>(i % W);
    const int Y = static_cast<int>((i / W) % H);
    const std::size_t plane = i / (std::size_t(W) * H);
    const float* src = in + plane * h * w;
    const float ry = 0.5f * (Y + 0.5f) - 0.5f, rx = 0.5f * (X + 0.5f) - 0.5f;
    const int iy = static_cast<int>(floorf(ry)), ix = static_cast<int>(floorf(rx));
    float cy[4], cx[4];
    cubic_coefficients(ry - iy, cy);
    cubic_coefficients(rx - ix, cx);
    float acc = 0.f;
    for (int a = 0; a < 4; ++a) {
      const int yy = min(max(iy - 1 + a, 0), h - 1);
      float row = 0.f;
      for (int b = 0; b < 4; ++b) {
        const int xx = min(max(ix - 1 + b, 0), w - 1);
        row += src[yy * w + xx] * cx[b];
      }
      acc += row * cy[a];
    }
    out[i] = acc;
  }
}

// kornia filter2d with the 5x5 pyramid Gaussian ([1 4 6 4 1]^T [1 4 6 4 1] / 256),
// zero ("constant") border, same size.
__global__ void pyramid_blur_kernel(const float* in, int h, int w, float* out, std::size_t total) {
  const float k1[5] = {1.f, 4.f, 6.f, 4.f, 1.f};
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int x = static_cast<int>(i % w);
    const int y = static_cast<int>((i / w) % h);
    const float* src = in + (i / (std::size_t(w) * h)) * h * w;
    float acc = 0.f;
    for (int a = 0; a < 5; ++a) {
      const int yy = y + a - 2;
      if (yy < 0 || yy >= h) continue;
      for (int b = 0; b < 5; ++b) {
        const int xx = x + b - 2;
        if (xx < 0 || xx >= w) continue;
        acc += src[yy * w + xx] * (k1[a] * k1[b] / 256.f);
      }
    }
    out[i] = acc;
  }
}

// Grid offset of the upsampled expectation (lightning-pose run_subpixelmaxima).
__host__ __device__ inline float upsampling_offset(int upsamplings) {
  switch (upsamplings) {
    case 1: return 0.5f;
    case 2: return 1.5f;
    case 3: return 2.5f;
    default: return 0.f;
  }
}

__global__ void expectation_kernel(const float* maps, int h, int w, float scale, int upsamplings,
                                   float* coords, float* confidence) {
  __shared__ float fshared[32];
  __shared__ double dshared[32];
  const int size = h * w;
  const float* in = maps + std::size_t(blockIdx.x) * size;
  float m = -FLT_MAX;
  for (int i = threadIdx.x; i < size; i += blockDim.x) m = fmaxf(m, in[i] * scale);
  m = block_max(m, fshared, -FLT_MAX);
  double sum = 0.0, sx = 0.0, sy = 0.0;
  for (int i = threadIdx.x; i < size; i += blockDim.x) {
    const double e = expf(in[i] * scale - m);
    sum += e;
    sx += e * (i % w);
    sy += e * (i / w);
  }
  sum = block_sum(sum, dshared);
  sx = block_sum(sx, dshared);
  sy = block_sum(sy, dshared);
  if (threadIdx.x != 0) return;
  const float inv = static_cast<float>(1.0 / sum);
  const float ex = static_cast<float>(sx / sum), ey = static_cast<float>(sy / sum);
  // Confidence: softmax mass within 2 pixels (2 sigma of 1.25, floored) of the
  // expectation truncated to integers, zero outside the map.
  const int cx = static_cast<int>(ex), cy = static_cast<int>(ey);
  float conf = 0.f;
  for (int dy = -2; dy <= 2; ++dy)
    for (int dx = -2; dx <= 2; ++dx) {
      const int yy = cy + dy, xx = cx + dx;
      if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
      conf += expf(in[yy * w + xx] * scale - m) * inv;
    }
  const float off = upsampling_offset(upsamplings);
  coords[2 * blockIdx.x] = ex - off;
  coords[2 * blockIdx.x + 1] = ey - off;
  confidence[blockIdx.x] = conf;
}

}  // namespace

void heatmap_targets(const float* keypoints, int planes, int h, int w, float sigma, float* targets,
                     float* mask, cudaStream_t s) {
  if (planes > 0) targets_kernel<<<planes, kThreads, 0, s>>>(keypoints, h, w, sigma, targets, mask);
}

void spatial_softmax_forward(const float* x, int planes, int plane_size, float logit_scale,
                             float* y, cudaStream_t s) {
  if (planes > 0) softmax_forward_kernel<<<planes, kThreads, 0, s>>>(x, plane_size, logit_scale, y);
}

void spatial_softmax_backward(const float* y, const float* dy, int planes, int plane_size,
                              float logit_scale, float* dx, cudaStream_t s) {
  if (planes > 0)
    softmax_backward_kernel<<<planes, kThreads, 0, s>>>(y, dy, plane_size, logit_scale, dx);
}

std::size_t heatmap_loss_scratch_doubles(int planes) { return std::size_t(planes > 0 ? planes : 1); }

void heatmap_loss(const float* pred, const float* target, const float* mask, int planes,
                  int plane_size, LossKind kind, float* loss, float* dpred, float loss_scale,
                  double* scratch, cudaStream_t s) {
  if (planes > 0)
    loss_planes_kernel<<<planes, kThreads, 0, s>>>(pred, target, mask, planes, plane_size, kind,
                                                   dpred, loss_scale, scratch);
  loss_total_kernel<<<1, kThreads, 0, s>>>(scratch, mask, planes, loss);
}

std::size_t soft_argmax_scratch_floats(int planes, int h, int w, int upsamplings) {
  if (upsamplings <= 0) return 0;
  const std::size_t final_size = std::size_t(planes) * (std::size_t(h) << upsamplings) *
                                 (std::size_t(w) << upsamplings);
  return 2 * final_size;  // ping-pong: bicubic output and blur output
}

void soft_argmax(const float* heatmaps, int planes, int h, int w, int upsamplings,
                 float logit_scale, float* coords, float* confidence, float* scratch,
                 cudaStream_t s) {
  if (planes <= 0) return;
  const std::size_t half = soft_argmax_scratch_floats(planes, h, w, upsamplings) / 2;
  float* up = scratch;
  float* blurred = scratch + half;
  const float* current = heatmaps;
  int ch = h, cw = w;
  for (int step = 0; step < upsamplings; ++step) {
    const std::size_t total = std::size_t(planes) * (2 * ch) * (2 * cw);
    bicubic_up2_kernel<<<blocks_for(total), kThreads, 0, s>>>(current, ch, cw, up, total);
    ch *= 2;
    cw *= 2;
    pyramid_blur_kernel<<<blocks_for(total), kThreads, 0, s>>>(up, ch, cw, blurred, total);
    current = blurred;
  }
  expectation_kernel<<<planes, kThreads, 0, s>>>(current, ch, cw, logit_scale, upsamplings, coords,
                                                 confidence);
}

}  // namespace trainer::kernels
