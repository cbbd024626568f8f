#pragma once
// Max pooling with PyTorch semantics (padding is -inf, the first maximum in
// row-major window order wins, NaN propagates). The backward pass recomputes the
// argmax from x (one int per output, in caller-provided scratch) and gathers, so
// the forward keeps no index buffer and nothing needs atomics.
// CPU twin: maxpool2d_* in src/compute/cpu/.
#include <cuda_runtime_api.h>  // cudaStream_t

namespace trainer::kernels {

struct PoolShape {
  int n, c, h, w;      // input
  int oh, ow;          // output
  int kernel, stride, pad;
};

void maxpool2d_forward(const float* x, float* y, const PoolShape& p, cudaStream_t stream);
// argmax_scratch: n * c * oh * ow ints, overwritten.
void maxpool2d_backward(const float* x, const float* dy, float* dx, int* argmax_scratch, const PoolShape& p,
                        cudaStream_t stream);

}  // namespace trainer::kernels
