// The CUDA kernel of the kl heatmap loss: the shared per-plane kernel with KlPixel.
#include "compute/losses/heatmap_kl.hpp"  // KlPixel
#include "pixel_loss_kernel.cuh"          // kernels::pixel_loss_planes

template void trainer::kernels::pixel_loss_planes<trainer::compute::KlPixel>(
    const trainer::compute::LossPlanes&, cudaStream_t);
