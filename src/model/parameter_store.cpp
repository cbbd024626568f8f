// Flat parameter/gradient/buffer storage with named entries (see parameter_store.hpp).
#include "model/parameter_store.hpp"

#include <algorithm>  // std::sort, std::unique
#include <cmath>      // std::sqrt

#include "model/init.hpp"  // InitRng
#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::model {

void announce_gradient(const Context& ctx, const ParameterStore& store, std::size_t i) {
  if (ctx.gradients == nullptr) return;
  const auto& e = store.parameters()[i];
  ctx.gradients->on_ready(e.offset, e.count, ctx.stream);
}

void announce_gradients(const Context& ctx, const ParameterStore& store, std::vector<std::size_t> params) {
  if (ctx.gradients == nullptr) return;
  const auto& entries = store.parameters();
  std::sort(params.begin(), params.end(),
            [&](std::size_t a, std::size_t b) { return entries[a].offset > entries[b].offset; });
  params.erase(std::unique(params.begin(), params.end()), params.end());
  for (std::size_t p : params) announce_gradient(ctx, store, p);
}

const char* group_name(ParamGroup g) { return g == ParamGroup::backbone ? "backbone" : "head"; }

namespace {
std::size_t numel(const std::vector<int>& shape) {
  std::size_t n = 1;
  for (int d : shape) n *= std::size_t(d);
  return n;
}
}  // namespace

void ParameterStore::check_open(const std::string& name) const {
  TRAINER_ASSERT(!allocated_, "registering " << name << " after allocate()");
  TRAINER_ASSERT(find_parameter(name) < 0 && find_buffer(name) < 0 && find_counter(name) < 0,
                 "duplicate tensor name " << name);
}

std::size_t ParameterStore::add_parameter(const std::string& name, std::vector<int> shape,
                                          ParamGroup group, InitRule init) {
  check_open(name);
  // Groups must stay contiguous so each is one optimizer call: backbone, then head.
  TRAINER_ASSERT(parameters_.empty() || !(parameters_.back().group == ParamGroup::head &&
                                          group == ParamGroup::backbone),
                 "backbone parameter " << name << " registered after the head");
  TensorEntry e{name, std::move(shape), param_total_, 0, group, init};
  e.count = numel(e.shape);
  param_total_ += e.count;
  parameters_.push_back(std::move(e));
  order_.push_back({Kind::parameter, parameters_.size() - 1});
  return parameters_.size() - 1;
}

std::size_t ParameterStore::add_buffer(const std::string& name, std::vector<int> shape,
                                       ParamGroup group, InitRule init) {
  check_open(name);
  TensorEntry e{name, std::move(shape), buffer_total_, 0, group, init};
  e.count = numel(e.shape);
  buffer_total_ += e.count;
  buffers_list_.push_back(std::move(e));
  order_.push_back({Kind::buffer, buffers_list_.size() - 1});
  return buffers_list_.size() - 1;
}

std::size_t ParameterStore::add_counter(const std::string& name) {
  check_open(name);
  counters_.push_back({name, 0});
  order_.push_back({Kind::counter, counters_.size() - 1});
  return counters_.size() - 1;
}

void ParameterStore::allocate() {
  TRAINER_ASSERT(!allocated_, "allocate() called twice");
  params_ = compute::DeviceBuffer(*backend_, param_total_);
  grads_ = compute::DeviceBuffer(*backend_, param_total_);
  buffers_ = compute::DeviceBuffer(*backend_, buffer_total_);
  allocated_ = true;
}

namespace {
void fill_from_rule(const InitRule& rule, float* out, std::size_t count, InitRng& rng) {
  switch (rule.kind) {
    case InitRule::zeros:
      for (std::size_t i = 0; i < count; ++i) out[i] = 0.f;
      break;
    case InitRule::ones:
      for (std::size_t i = 0; i < count; ++i) out[i] = 1.f;
      break;
    case InitRule::kaiming_normal_fan_out: {
      // torch.nn.init.kaiming_normal_(mode="fan_out", nonlinearity="relu")
      const double std = rule.gain / std::sqrt(rule.fan_out);
      for (std::size_t i = 0; i < count; ++i) out[i] = float(std * rng.normal());
      break;
    }
    case InitRule::xavier_uniform: {
      // torch.nn.init.xavier_uniform_(gain)
      const double bound = rule.gain * std::sqrt(6.0 / (rule.fan_in + rule.fan_out));
      for (std::size_t i = 0; i < count; ++i) out[i] = float(rng.uniform(-bound, bound));
      break;
    }
  }
}
}  // namespace

void ParameterStore::initialize(std::uint64_t seed, compute::Stream& stream) {
  TRAINER_ASSERT(allocated_, "initialize() before allocate()");
  InitRng rng(seed);
  std::vector<float> host(param_total_);
  for (const auto& e : parameters_) fill_from_rule(e.init, host.data() + e.offset, e.count, rng);
  backend_->upload(params_.data(), host.data(), param_total_, stream);
  std::vector<float> hbuf(buffer_total_);
  for (const auto& e : buffers_list_) fill_from_rule(e.init, hbuf.data() + e.offset, e.count, rng);
  backend_->upload(buffers_.data(), hbuf.data(), buffer_total_, stream);
  backend_->fill(grads_.data(), 0.f, param_total_, stream);
  for (auto& c : counters_) c.value = 0;
  stream.synchronize();  // the host vectors die here
}

ParameterStore::Range ParameterStore::group_range(ParamGroup g) const {
  Range r;
  bool found = false;
  for (const auto& e : parameters_) {
    if (e.group != g) continue;
    if (!found) r.offset = e.offset;
    found = true;
    r.count = e.offset + e.count - r.offset;
  }
  return r;
}

std::vector<ParameterStore::Range> ParameterStore::trained_ranges(ParamGroup g) const {
  std::vector<Range> ranges;
  for (const auto& e : parameters_) {
    if (e.group != g || e.unused || e.count == 0) continue;
    if (!ranges.empty() && ranges.back().offset + ranges.back().count == e.offset) {
      ranges.back().count += e.count;
    } else {
      ranges.push_back({e.offset, e.count});
    }
  }
  return ranges;
}

std::vector<float> ParameterStore::download_param(std::size_t i, compute::Stream& s) {
  std::vector<float> out(parameters_.at(i).count);
  backend_->download(out.data(), param(i), out.size(), s);
  s.synchronize();
  return out;
}

std::vector<float> ParameterStore::download_buffer(std::size_t i, compute::Stream& s) {
  std::vector<float> out(buffers_list_.at(i).count);
  backend_->download(out.data(), buffer(i), out.size(), s);
  s.synchronize();
  return out;
}

void ParameterStore::upload_param(std::size_t i, const std::vector<float>& v, compute::Stream& s) {
  TRAINER_ASSERT(v.size() == parameters_.at(i).count, "size mismatch for " << parameters_[i].name);
  backend_->upload(param(i), v.data(), v.size(), s);
  s.synchronize();
}

void ParameterStore::upload_buffer(std::size_t i, const std::vector<float>& v, compute::Stream& s) {
  TRAINER_ASSERT(v.size() == buffers_list_.at(i).count, "size mismatch for " << buffers_list_[i].name);
  backend_->upload(buffer(i), v.data(), v.size(), s);
  s.synchronize();
}

std::vector<std::string> ParameterStore::state_dict_names() const {
  std::vector<std::string> names;
  for (const auto& k : order_) {
    if (k.kind == Kind::parameter) names.push_back(parameters_[k.index].name);
    if (k.kind == Kind::buffer) names.push_back(buffers_list_[k.index].name);
    if (k.kind == Kind::counter) names.push_back(counters_[k.index].name);
  }
  return names;
}

long ParameterStore::find_parameter(const std::string& name) const {
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (parameters_[i].name == name) return long(i);
  return -1;
}
long ParameterStore::find_buffer(const std::string& name) const {
  for (std::size_t i = 0; i < buffers_list_.size(); ++i)
    if (buffers_list_[i].name == name) return long(i);
  return -1;
}
long ParameterStore::find_counter(const std::string& name) const {
  for (std::size_t i = 0; i < counters_.size(); ++i)
    if (counters_[i].name == name) return long(i);
  return -1;
}

}  // namespace trainer::model
