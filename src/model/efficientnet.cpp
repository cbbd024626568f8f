// EfficientNet backbone (see efficientnet.hpp).
#include "model/efficientnet.hpp"

#include <algorithm>  // std::max
#include <cmath>      // std::ceil
#include <cstdint>    // std::uint32_t, std::uint64_t

#include "compute/mbconv_rule.hpp"  // stochastic_depth_factor (the host's copy of the draws)
#include "util/error.hpp"           // UserError, SystemError

namespace trainer::model {
namespace {

// torchvision's _make_divisible(v, 8): the nearest multiple of 8, never below 90% of v.
int make_divisible(double v) {
  int rounded = std::max(8, int(v + 4) / 8 * 8);
  if (rounded < 0.9 * v) rounded += 8;
  return rounded;
}

// torchvision's B0 table (expand ratio, kernel, stride, in, out, layers), before the
// multipliers.
struct StageRow {
  int expand_ratio, kernel, stride, in_channels, out_channels, layers;
};
constexpr StageRow kB0Stages[] = {{1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},  {6, 5, 2, 24, 40, 2},
                                  {6, 3, 2, 40, 80, 3},  {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4},
                                  {6, 3, 1, 192, 320, 1}};
constexpr double kStochasticDepth = 0.2;  // torchvision's stochastic_depth_prob

// The step key's two 24-bit words (exact floats) from (seed, epoch, batch, rank).
void key_words(const StepKey& key, float words[2]) {
  std::uint64_t h = key.seed ^ 0x45666E4E6574ull;  // "EfNet"
  for (std::uint64_t v : {std::uint64_t(key.epoch), std::uint64_t(key.batch), std::uint64_t(key.rank)}) {
    h += v + 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  words[0] = float(h & 0xFFFFFFu);
  words[1] = float((h >> 24) & 0xFFFFFFu);
}

// The salt of block `block`'s draws in the step's forward `forward`.
std::uint32_t draw_salt(int forward, int block) { return std::uint32_t(forward) * 4096u + std::uint32_t(block); }

}  // namespace

EfficientNetSpec efficientnet_spec(const std::string& name) {
  double width = 1.0, depth = 1.0;
  if (name == "efficientnet_b0") {
  } else if (name == "efficientnet_b1") {
    depth = 1.1;
  } else if (name == "efficientnet_b2") {
    width = 1.1, depth = 1.2;
  } else {
    throw UserError("unknown backbone '" + name + "'",
                    "model.backbone is one of: efficientnet_b0, efficientnet_b1, efficientnet_b2");
  }
  EfficientNetSpec s;
  s.name = name;
  int total = 0;
  for (const StageRow& row : kB0Stages) total += int(std::ceil(row.layers * depth));
  int block_id = 0;
  for (const StageRow& row : kB0Stages) {
    std::vector<MbConvConfig> stage;
    const int layers = int(std::ceil(row.layers * depth));
    for (int b = 0; b < layers; ++b) {
      MbConvConfig c;
      c.expand_ratio = row.expand_ratio;
      c.kernel = row.kernel;
      c.out_channels = make_divisible(row.out_channels * width);
      c.in_channels = b == 0 ? make_divisible(row.in_channels * width) : c.out_channels;
      c.stride = b == 0 ? row.stride : 1;
      c.drop_probability = kStochasticDepth * double(block_id) / total;
      stage.push_back(c);
      ++block_id;
    }
    s.stages.push_back(stage);
  }
  s.stem_channels = s.stages.front().front().in_channels;
  s.out_channels = 4 * s.stages.back().back().out_channels;
  return s;
}

MbConvBlock::MbConvBlock(ParameterStore& store, const std::string& name, const MbConvConfig& c)
    : config_(c),
      residual_(c.stride == 1 && c.in_channels == c.out_channels),
      expand_(c.expand_ratio == 1 ? nullptr
                                  : std::make_unique<ConvNormActivation<Conv2d>>(
                                        store, name + ".block.0", c.in_channels * c.expand_ratio, true, c.in_channels,
                                        c.in_channels * c.expand_ratio, 1, 1, 0, ParamGroup::backbone)),
      depthwise_(store, name + ".block." + std::to_string(expand_ ? 1 : 0), c.in_channels * c.expand_ratio, true,
                 c.in_channels * c.expand_ratio, c.kernel, c.stride),
      squeeze_(store, name + ".block." + std::to_string(expand_ ? 2 : 1), c.in_channels * c.expand_ratio,
               std::max(1, c.in_channels / 4)),
      project_(store, name + ".block." + std::to_string(expand_ ? 3 : 2), c.out_channels, false,
               c.in_channels * c.expand_ratio, c.out_channels, 1, 1, 0, ParamGroup::backbone) {}

compute::TensorView MbConvBlock::forward(const Context& ctx, compute::ConstTensorView x, const float* drop_factors) {
  compute::ConstTensorView h = x;
  if (expand_) h = expand_->forward(ctx, h);
  h = depthwise_.forward(ctx, h);
  h = squeeze_.forward(ctx, h);
  compute::TensorView out = project_.forward(ctx, h);  // the batch norm's own buffer, which its backward does not read
  drop_factors_ = residual_ ? drop_factors : nullptr;
  if (!residual_) return out;
  const int rows = out.shape.n, width = int(out.shape.numel() / std::size_t(rows));
  if (drop_factors_) ctx.backend.mbconv_ops().scale_rows(out.data, drop_factors_, out.data, rows, width, ctx.stream);
  ctx.backend.accumulate(x.data, out.data, out.shape.numel(), ctx.stream);
  return out;
}

compute::TensorView MbConvBlock::backward(const Context& ctx, compute::TensorView dy, bool need_dx) {
  compute::TensorView d = dy;
  if (residual_) {
    // The branch's layers overwrite their gradient; dy itself also feeds the identity.
    d = dbranch_.ensure(ctx.backend, dy.shape);
    const int rows = dy.shape.n, width = int(dy.shape.numel() / std::size_t(rows));
    if (drop_factors_) ctx.backend.mbconv_ops().scale_rows(dy.data, drop_factors_, d.data, rows, width, ctx.stream);
    else ctx.backend.copy(d.data, dy.data, dy.shape.numel(), ctx.stream);
  }
  d = project_.backward(ctx, d, true);
  d = squeeze_.backward(ctx, d);
  d = depthwise_.backward(ctx, d, need_dx || expand_ != nullptr);
  if (expand_) d = expand_->backward(ctx, d, need_dx);
  if (!need_dx) return {};
  if (residual_) ctx.backend.accumulate(dy.data, d.data, d.shape.numel(), ctx.stream);
  return d;
}

std::vector<std::string> EfficientNet::block_names(const EfficientNetSpec& spec, const std::string& prefix) {
  std::vector<std::string> names;
  for (std::size_t stage = 0; stage < spec.stages.size(); ++stage)
    for (std::size_t b = 0; b < spec.stages[stage].size(); ++b)
      names.push_back(prefix + "features." + std::to_string(stage + 1) + "." + std::to_string(b));
  return names;
}

std::vector<std::unique_ptr<MbConvBlock>> EfficientNet::make_blocks(ParameterStore& store, const EfficientNetSpec& spec,
                                                                    const std::vector<std::string>& names) {
  std::vector<std::unique_ptr<MbConvBlock>> blocks;
  std::size_t i = 0;
  for (const auto& stage : spec.stages)
    for (const MbConvConfig& c : stage) blocks.push_back(std::make_unique<MbConvBlock>(store, names[i++], c));
  return blocks;
}

// Members in registration order: the stem, the blocks, the last convolution.
EfficientNet::EfficientNet(ParameterStore& store, const EfficientNetSpec& spec, const std::string& prefix)
    : spec_(spec),
      stem_(store, prefix + "features.0", spec.stem_channels, true, 3, spec.stem_channels, 3, 2, 1,
            ParamGroup::backbone),
      block_names_(block_names(spec, prefix)),
      blocks_(make_blocks(store, spec, block_names_)),
      head_(store, prefix + "features." + std::to_string(spec.stages.size() + 1), spec.out_channels, true,
            spec.stages.back().back().out_channels, spec.out_channels, 1, 1, 0, ParamGroup::backbone) {}

compute::TensorView EfficientNet::forward(const Context& ctx, compute::ConstTensorView x) {
  check_network_input(x, kStride, "the EfficientNet's stride");
  // Train mode with the step's key: this forward's stochastic depth factors, drawn on
  // the device (a replayed recording draws with each step's key).
  const bool dropping = ctx.training && forward_in_step_ < forwards_prepared_;
  const int n = x.shape.n;
  if (dropping) {
    compute::ensure_capacity(ctx.backend, factors_, blocks_.size() * std::size_t(n));
    for (std::size_t i = 0; i < blocks_.size(); ++i)
      if (blocks_[i]->residual() && blocks_[i]->drop_probability() > 0)
        ctx.backend.mbconv_ops().stochastic_depth_factors(key_.data(), draw_salt(forward_in_step_, int(i)),
                                                          float(blocks_[i]->drop_probability()),
                                                          factors_.data() + i * std::size_t(n), n, ctx.stream);
    if (std::size_t(forward_in_step_) < forward_batches_.size()) forward_batches_[std::size_t(forward_in_step_)] = n;
    else forward_batches_.push_back(n);
    ++forward_in_step_;
  }
  compute::ConstTensorView h = stem_.forward(ctx, x);
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    const bool drops = dropping && blocks_[i]->residual() && blocks_[i]->drop_probability() > 0;
    h = blocks_[i]->forward(ctx, h, drops ? factors_.data() + i * std::size_t(n) : nullptr);
  }
  return head_.forward(ctx, h);
}

void EfficientNet::backward(const Context& ctx, compute::TensorView dy) {
  compute::TensorView d = head_.backward(ctx, dy, true);
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) d = (*it)->backward(ctx, d, true);
  stem_.backward(ctx, d, false);
}

void EfficientNet::prepare_training_step(const Context& ctx, const StepKey& key, int forwards) {
  if (forwards < 1) throw SystemError("internal error: " + std::to_string(forwards) + " training forwards in a step");
  key_words(key, key_words_);
  compute::ensure_capacity(ctx.backend, key_, 2);
  ctx.backend.set_values(key_.data(), key_words_, 2, ctx.stream);
  forwards_prepared_ = forwards;
  forward_in_step_ = 0;
  // The images of each forward: those of the last step that ran its forwards on the
  // host until this step's do (a replayed recording has the recorded shapes).
  if (forward_batches_.size() > std::size_t(forwards)) forward_batches_.resize(std::size_t(forwards));
}

std::vector<std::pair<std::string, std::vector<float>>> EfficientNet::training_draws() const {
  std::vector<std::pair<std::string, std::vector<float>>> draws;
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    const MbConvBlock& b = *blocks_[i];
    if (!b.residual() || !(b.drop_probability() > 0) || forward_batches_.empty()) continue;
    std::vector<float> factors;
    for (std::size_t f = 0; f < forward_batches_.size(); ++f)
      for (int row = 0; row < forward_batches_[f]; ++row)
        factors.push_back(compute::stochastic_depth_factor(key_words_[0], key_words_[1], draw_salt(int(f), int(i)),
                                                           std::uint32_t(row), float(b.drop_probability())));
    draws.emplace_back("stochastic_depth/" + block_names_[i], factors);
  }
  return draws;
}

std::unique_ptr<Backbone> make_efficientnet(ParameterStore& store, const std::string& name, const std::string& prefix,
                                            ImageSize) {
  return std::make_unique<EfficientNet>(store, efficientnet_spec(name), prefix);
}

}  // namespace trainer::model
