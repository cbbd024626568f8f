#pragma once
// Where the j-th value of a 16-bit filter copy comes from. cuDNN's NHWC convolutions
// read filters as KRSC ([out][kernel row][kernel column][in]); the parameters are
// PyTorch's OIHW ([out][in][row][column]). One rule for the kernel that writes every
// copy in one pass (kernels::cast_filters_to_16), its inverse for the weight
// gradients, and their host test.
#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

// j indexes the KRSC copy of a filter with `in_channels` inputs and kernel_area =
// kernel * kernel; the result indexes its OIHW source. 32-bit: the largest ResNet
// filter has 2.4 million values.
TRAINER_HOST_DEVICE inline int krsc_source_index(int j, int in_channels, int kernel_area) {
  const int c = j % in_channels;
  const int t = j / in_channels;  // k * kernel_area + rs
  const int rs = t % kernel_area;
  const int k = t / kernel_area;
  return (k * in_channels + c) * kernel_area + rs;
}

// The inverse: i indexes an OIHW tensor (a weight gradient) and the result the KRSC
// copy it comes from (cuDNN's 16-bit weight gradient, kernels::cast_filter_from_16).
TRAINER_HOST_DEVICE inline int krsc_index_of(int i, int in_channels, int kernel_area) {
  const int rs = i % kernel_area;
  const int t = i / kernel_area;  // k * in_channels + c
  const int c = t % in_channels;
  const int k = t / in_channels;
  return (k * kernel_area + rs) * in_channels + c;
}

}  // namespace trainer::compute
