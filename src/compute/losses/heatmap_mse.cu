// The CUDA kernel of the mse heatmap loss: the shared per-plane kernel with MsePixel.
#include "compute/losses/heatmap_mse.hpp"  // MsePixel
#include "pixel_loss_kernel.cuh"           // kernels::pixel_loss_planes

template void trainer::kernels::pixel_loss_planes<trainer::compute::MsePixel>(
    const trainer::compute::LossPlanes&, cudaStream_t);
