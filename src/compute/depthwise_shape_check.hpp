#pragma once
// The check of a depthwise convolution's shapes both backends make before they run
// it: x [N, C, H, W] and y [N, C, conv_out(H), conv_out(W)], fp32 NCHW, C the
// geometry's channels (in and out alike).
#include <string>  // std::to_string

#include "compute/backend.hpp"  // ConvGeometry, ConstTensorView
#include "util/error.hpp"       // SystemError

namespace trainer::compute {

inline void check_depthwise_shapes(ConstTensorView x, ConstTensorView y, const ConvGeometry& g) {
  const Shape4 &in = x.shape, &out = y.shape;
  const bool ok = x.storage == Storage::f32_nchw && y.storage == Storage::f32_nchw &&
                  g.in_channels == g.out_channels && in.c == g.in_channels && out.n == in.n && out.c == in.c &&
                  g.kernel > 0 && g.stride > 0 && out.h == g.conv_out(in.h) && out.w == g.conv_out(in.w);
  if (!ok)
    throw SystemError("internal error: depthwise convolution of " + in.str() + " (" + storage_name(x.storage) +
                      ") into " + out.str() + " (" + storage_name(y.storage) + ") with " +
                      std::to_string(g.in_channels) + " channels, kernel " + std::to_string(g.kernel) + ", stride " +
                      std::to_string(g.stride) + " (fp32 NCHW views only)");
}

}  // namespace trainer::compute
