// The CUDA kernel of the js heatmap loss: the shared per-plane kernel with JsPixel.
#include "compute/losses/heatmap_js.hpp"  // JsPixel
#include "pixel_loss_kernel.cuh"          // kernels::pixel_loss_planes

template void trainer::kernels::pixel_loss_planes<trainer::compute::JsPixel>(
    const trainer::compute::LossPlanes&, cudaStream_t);
