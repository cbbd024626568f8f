// The input check every backbone's forward starts with (see backbone.hpp).
#include "model/backbone.hpp"

#include "util/error.hpp"  // UserError

namespace trainer::model {

void check_network_input(compute::ConstTensorView x, int multiple, const std::string& why) {
  const auto& s = x.shape;
  if (s.c == 3 && s.h >= multiple && s.w >= multiple && s.h % multiple == 0 && s.w % multiple == 0) return;
  const std::string m = std::to_string(multiple);
  throw UserError("network input " + s.str() + " is not [N,3,H,W] with H and W multiples of " + m + " (" + why + ")",
                  "set data.image_resize_dims.height/width (INI: data.image_resize_height/width) to multiples of " + m);
}

}  // namespace trainer::model
