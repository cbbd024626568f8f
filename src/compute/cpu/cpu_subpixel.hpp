#pragma once
// The CPU twin's soft-argmax upsampling on its own (cpu_heatmap.cpp), so that a
// unit test can hold the CUDA kernels' arithmetic, run on the host, to it bit for
// bit (tests/unit/compute/test_soft_argmax_emulation.cpp). Training calls
// Backend::soft_argmax / soft_argmax_backward, never these.
#include <vector>  // std::vector

namespace trainer::compute::cpu {

// lightning-pose's upsample() `upsamplings` times on one h x w plane: out receives
// (h << upsamplings) x (w << upsamplings) floats.
void subpixel_upsample(const float* plane, int h, int w, int upsamplings, std::vector<float>& out);
// Its adjoint: grad holds (h << upsamplings) x (w << upsamplings) floats; out
// receives h x w.
void subpixel_upsample_adjoint(const float* grad, int h, int w, int upsamplings, std::vector<float>& out);

}  // namespace trainer::compute::cpu
