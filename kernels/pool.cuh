#pragma once
// Max pooling with PyTorch semantics (padding is -inf, the first maximum in
// row-major window order wins, NaN propagates). The backward pass recomputes the
// argmax from x and gathers, so it needs no index buffer and no atomics.
// CPU twin: maxpool2d_* in src/compute/cpu/.
#include <cuda_runtime_api.h>  // cudaStream_t

namespace trainer::kernels {

struct PoolShape {
  int n, c, h, w;      // input
  int oh, ow;          // output
  int kernel, stride, pad;
};

void maxpool2d_forward(const float* x, float* y, const PoolShape& p, cudaStream_t stream);
void maxpool2d_backward(const float* x, const float* dy, float* dx, const PoolShape& p,
                        cudaStream_t stream);

}  // namespace trainer::kernels
