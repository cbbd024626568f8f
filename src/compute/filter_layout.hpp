#pragma once
// Where the j-th value of a 16-bit filter copy comes from. cuDNN's NHWC convolutions
// read filters as KRSC ([out][kernel row][kernel column][in]); the parameters are
// PyTorch's OIHW ([out][in][row][column]). One rule for the kernel that writes every
// copy in one pass (kernels::cast_filters_to_16) and for its host test.
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

}  // namespace trainer::compute
