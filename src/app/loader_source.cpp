// LoaderSource (see loader_source.hpp).
#include "app/loader_source.hpp"

namespace trainer::app {

data::HostAllocator batch_allocator(compute::Backend& backend) {
  data::HostAllocator a;
  a.allocate = [&backend](std::size_t bytes) { return backend.allocate_host(bytes); };
  a.release = [&backend](void* pointer) { backend.release_host(pointer); };
  return a;
}

LoaderSource::LoaderSource(data::Loader& loader, std::vector<std::int64_t> frames, data::SamplerOptions sampler)
    : loader_(loader), frames_(std::move(frames)), sampler_(sampler) {}

void LoaderSource::start_epoch(int epoch) {
  epoch_ = epoch;
  pass_ = 0;
  served_ = 0;
  start_pass();
}

void LoaderSource::start_pass() {
  data::SamplerOptions sampler = sampler_;
  sampler.seed = data::pass_seed(sampler_.seed, pass_);
  loader_.start_epoch(epoch_, data::distributed_rows(frames_, sampler, epoch_), pass_);
}

const data::Batch* LoaderSource::next() {
  if (steps_ == 0) return loader_.next();  // one pass: the loader's own end
  if (served_ >= steps_) return nullptr;
  const data::Batch* batch = loader_.next();
  if (batch == nullptr) {
    ++pass_;
    start_pass();
    batch = loader_.next();
  }
  if (batch != nullptr) ++served_;
  return batch;
}

long LoaderSource::batches_per_pass() const {
  const auto rows = data::samples_per_rank(std::int64_t(frames_.size()), sampler_.num_replicas, sampler_.drop_last);
  const int b = loader_.options().batch_size;
  if (loader_.options().drop_last) return long(rows / b);
  return long((rows + b - 1) / b);
}

}  // namespace trainer::app
