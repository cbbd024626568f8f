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
  loader_.start_epoch(epoch, data::distributed_rows(frames_, sampler_, epoch));
}

long LoaderSource::batches_per_epoch() const {
  const auto rows = data::samples_per_rank(std::int64_t(frames_.size()), sampler_.num_replicas, sampler_.drop_last);
  const int b = loader_.options().batch_size;
  if (loader_.options().drop_last) return long(rows / b);
  return long((rows + b - 1) / b);
}

}  // namespace trainer::app
