// ResNet backbone (see resnet.hpp).
#include "model/resnet.hpp"

#include "util/error.hpp"  // UserError

namespace trainer::model {

ResNetSpec resnet_spec(const std::string& name) {
  ResNetSpec s;
  s.name = name;
  if (name == "resnet18") {
    s.bottleneck = false;
    s.blocks[0] = 2, s.blocks[1] = 2, s.blocks[2] = 2, s.blocks[3] = 2;
  } else if (name == "resnet34") {
    s.bottleneck = false;
    s.blocks[0] = 3, s.blocks[1] = 4, s.blocks[2] = 6, s.blocks[3] = 3;
  } else if (name == "resnet50" || name.rfind("resnet50_", 0) == 0) {
    // lightning-pose's resnet50_animal_ap10k, _human_jhmdb, ...: ResNet-50 with
    // weights pretrained on pose data (backbone_registry.cpp names the files).
    s.bottleneck = true;
    s.blocks[0] = 3, s.blocks[1] = 4, s.blocks[2] = 6, s.blocks[3] = 3;
  } else if (name == "resnet101") {  // torchvision's block counts
    s.bottleneck = true;
    s.blocks[0] = 3, s.blocks[1] = 4, s.blocks[2] = 23, s.blocks[3] = 3;
  } else if (name == "resnet152") {
    s.bottleneck = true;
    s.blocks[0] = 3, s.blocks[1] = 8, s.blocks[2] = 36, s.blocks[3] = 3;
  } else {
    throw UserError("unknown backbone '" + name + "'",
                    "model.backbone is one of: resnet18, resnet34, resnet50, resnet101, resnet152");
  }
  return s;
}

ResNet::ResNet(ParameterStore& store, const ResNetSpec& spec, const std::string& prefix)
    : spec_(spec),
      conv1_(store, prefix + "conv1", 3, 64, 7, 2, 3, ParamGroup::backbone),
      bn1_(store, prefix + "bn1", 64, ParamGroup::backbone) {
  pool_.kernel = 3;
  pool_.stride = 2;
  pool_.pad = 1;
  const int expansion = spec.bottleneck ? 4 : 1;
  int inplanes = 64;
  for (int layer = 0; layer < 4; ++layer) {
    const int planes = 64 << layer;
    for (int b = 0; b < spec.blocks[layer]; ++b) {
      const int stride = (layer > 0 && b == 0) ? 2 : 1;
      const std::string name = prefix + "layer" + std::to_string(layer + 1) + "." + std::to_string(b);
      if (spec.bottleneck)
        blocks_.push_back(std::make_unique<Bottleneck>(store, name, inplanes, planes, stride, ParamGroup::backbone));
      else
        blocks_.push_back(std::make_unique<BasicBlock>(store, name, inplanes, planes, stride, ParamGroup::backbone));
      inplanes = planes * expansion;
    }
  }
  store_ = &store;
  first_param_ = conv1_.weight_index();  // conv1 registers the network's first parameter
  end_param_ = store.parameters().size();
}

compute::TensorView ResNet::forward(const Context& ctx, compute::ConstTensorView x) {
  check_network_input(x, kStride, "the ResNet's stride");
  // In 16-bit storage the images are converted once here and every layer after
  // keeps its input's storage; the features go back to fp32 NCHW for the head.
  if (ctx.backend.precision() != compute::Precision::fp32) {
    // The 16-bit copies of every filter in one pass, read by this forward and its backward.
    const auto& filters = convolution_filters();
    ctx.backend.cache_filters16(filters.data(), filters.size(), ctx.stream);
  }
  const compute::Storage storage = ctx.backend.activation_storage();
  compute::ConstTensorView input = x;
  if (compute::is_16bit(storage)) {
    auto staged = input16_.ensure(ctx.backend, x.shape, storage);
    ctx.backend.convert_storage(x, staged, ctx.stream);
    input = staged;
  }
  stem_ = bn1_.forward_relu(ctx, conv1_.forward(ctx, input));
  const auto s = stem_.shape;
  auto pooled = pooled_.ensure(ctx.backend, {s.n, s.c, pool_.out(s.h), pool_.out(s.w)}, stem_.storage);
  ctx.backend.maxpool2d_forward(stem_, pooled, pool_, ctx.stream);
  compute::TensorView h = pooled;
  for (auto& block : blocks_) h = block->forward(ctx, h);
  if (!compute::is_16bit(h.storage)) return h;
  auto features = features32_.ensure(ctx.backend, h.shape);
  ctx.backend.convert_storage(h, features, ctx.stream);
  return features;
}

const std::vector<compute::Backend::Filter>& ResNet::convolution_filters() {
  filters_.clear();
  for (std::size_t i = first_param_; i < end_param_; ++i) {
    const TensorEntry& e = store_->parameters()[i];
    if (e.shape.size() == 4) filters_.push_back({store_->param(i), e.shape[0], e.shape[1], e.shape[2]});
  }
  return filters_;
}

void ResNet::backward(const Context& ctx, compute::TensorView dy) {
  compute::TensorView d = dy;
  if (compute::is_16bit(stem_.storage)) {
    d = dfeatures16_.ensure(ctx.backend, dy.shape, stem_.storage);
    ctx.backend.convert_storage(dy, d, ctx.stream);
  }
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) d = (*it)->backward(ctx, d, true);
  auto dstem = dpool_.ensure(ctx.backend, stem_.shape, stem_.storage);
  ctx.backend.maxpool2d_backward(stem_, d, dstem, pool_, ctx.stream);
  auto dconv = bn1_.backward_relu(ctx, dstem);
  conv1_.backward(ctx, dconv, false);
}

std::unique_ptr<Backbone> make_resnet(ParameterStore& store, const std::string& name, const std::string& prefix,
                                      ImageSize) {
  return std::make_unique<ResNet>(store, resnet_spec(name), prefix);
}

}  // namespace trainer::model
