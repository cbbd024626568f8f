#include "compute/cuda/filter_cache.hpp"

#include <cuda_runtime_api.h>  // cudaMemcpyAsync

#include "compute/cuda/cuda_check.hpp"  // CUDA_CHECK, CUDA_CHECK_LAUNCH
#include "util/error.hpp"               // SystemError

namespace trainer::compute::cuda {

namespace {

bool same_filters(const std::vector<Backend::Filter>& a, const Backend::Filter* b, std::size_t count) {
  if (a.size() != count) return false;
  for (std::size_t i = 0; i < count; ++i)
    if (a[i].weight != b[i].weight || a[i].out_channels != b[i].out_channels ||
        a[i].in_channels != b[i].in_channels || a[i].kernel != b[i].kernel)
      return false;
  return true;
}

std::size_t values_of(const Backend::Filter& f) {
  return std::size_t(f.out_channels) * f.in_channels * f.kernel * f.kernel;
}

}  // namespace

void FilterCache::rebuild(const Backend::Filter* filters, std::size_t count, CudaStream& s) {
  if (s.recording())
    throw SystemError("16-bit filter copies: the list of filters changed while recording a step");
  // Built aside and committed at the end: a failed allocation or upload leaves an
  // empty cache (every convolution casts for itself), never a half-updated one.
  valid_ = false;
  filters_.clear();
  index_.clear();
  table_host_.clear();
  std::unordered_map<const float*, std::size_t> index;
  std::vector<std::size_t> offsets;
  std::size_t total = 0, max_values = 0;
  for (std::size_t i = 0; i < count; ++i) {
    index[filters[i].weight] = i;
    offsets.push_back(total);
    const std::size_t n = values_of(filters[i]);
    total += (n + 127) / 128 * 128;  // each copy 256-byte aligned, as cuDNN prefers
    if (n > max_values) max_values = n;
  }
  DeviceBuffer copies(backend_, (total + 1) / 2);
  auto* base = reinterpret_cast<std::uint16_t*>(copies.data());
  std::vector<kernels::FilterCast> table_host;
  for (std::size_t i = 0; i < count; ++i) {
    const Backend::Filter& f = filters[i];
    table_host.push_back({f.weight, base + offsets[i], f.out_channels, f.in_channels, f.kernel * f.kernel});
  }
  const std::size_t table_bytes = table_host.size() * sizeof(kernels::FilterCast);
  DeviceBuffer table(backend_, (table_bytes + sizeof(float) - 1) / sizeof(float));
  // Pageable host memory: the copy is complete when the synchronization returns.
  CUDA_CHECK(cudaMemcpyAsync(table.data(), table_host.data(), table_bytes, cudaMemcpyHostToDevice, s.get()));
  CUDA_CHECK(cudaStreamSynchronize(s.get()));
  copies_ = std::move(copies);
  table_ = std::move(table);
  table_host_ = std::move(table_host);
  index_ = std::move(index);
  max_values_ = max_values;
  filters_.assign(filters, filters + count);
}

void FilterCache::cast(const Backend::Filter* filters, std::size_t count, kernels::Format16 format, CudaStream& s) {
  if (count == 0) return;
  if (!same_filters(filters_, filters, count)) rebuild(filters, count, s);
  kernels::cast_filters_to_16(reinterpret_cast<const kernels::FilterCast*>(table_.data()), int(count), max_values_,
                              format, s.get());
  CUDA_CHECK_LAUNCH();
  valid_ = true;
  generation_ = backend_.released_blocks();
}

const std::uint16_t* FilterCache::find(const float* w, int k, int c, int kernel) const {
  if (!valid_ || backend_.released_blocks() != generation_) return nullptr;
  const auto it = index_.find(w);
  if (it == index_.end()) return nullptr;
  const Backend::Filter& f = filters_[it->second];
  if (f.out_channels != k || f.in_channels != c || f.kernel != kernel) return nullptr;
  return table_host_[it->second].dst;
}

}  // namespace trainer::compute::cuda
