// CUDA backend memory and stream semantics: zeroed allocation, pinned host memory,
// copies, events ordering work between two streams, error reporting.
#include <catch2/catch.hpp>

#include "compute/cuda/cuda_backend.hpp"  // CudaBackendOptions
#include "gpu_test_util.hpp"
#include "util/error.hpp"  // SystemError

using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

TEST_CASE("cuda backend describes itself and allocates zeroed memory", "[gpu]") {
  Twins t;
  CHECK(t.gpu->kind() == DeviceKind::cuda);
  CHECK(t.gpu->description().find("cuda (device 0") == 0);
  auto b = t.zeros(12345);
  CHECK(t.host(b) == std::vector<float>(12345, 0.f));
}

TEST_CASE("cuda pinned upload/download round trip on a second stream", "[gpu]") {
  Twins t;
  const std::size_t n = 1 << 20;
  auto* pinned = static_cast<float*>(t.gpu->allocate_host(n * sizeof(float)));
  auto src = random_vector(n, 5);
  std::copy(src.begin(), src.end(), pinned);
  auto copy_stream = t.gpu->create_stream();
  auto buf = t.zeros(n), out = t.zeros(n);
  t.gpu->upload(buf.data(), pinned, n, *copy_stream);
  auto uploaded = copy_stream->record();
  // Compute waits for the copy through the event, then scales.
  t.gs().wait(*uploaded);
  t.gpu->copy(out.data(), buf.data(), n, t.gs());
  t.gpu->scale(out.data(), 2.f, n, t.gs());
  auto r = t.host(out);
  for (std::size_t i = 0; i < n; i += 9973) CHECK(r[i] == 2.f * src[i]);
  t.gpu->release_host(pinned);
}

TEST_CASE("cuda stream from another backend kind is rejected", "[gpu]") {
  Twins t;
  auto b = t.zeros(4);
  CHECK_THROWS_AS(t.gpu->fill(b.data(), 1.f, 4, t.cpu->default_stream()), trainer::SystemError);
}

TEST_CASE("cuda backend with TF32 and heuristic algorithm choice still runs convolutions", "[gpu]") {
  CudaBackendOptions o;
  o.allow_tf32 = true;
  o.conv_algorithms = trainer::compute::ConvAlgorithms::heuristics;
  auto gpu = make_cuda_backend(0, o);
  auto cpu = make_cpu_backend(2);
  ConvGeometry g;
  g.in_channels = 4;
  g.out_channels = 6;
  g.kernel = 3;
  g.pad = 1;
  const Shape4 xs{2, 4, 10, 10}, ys{2, 6, 10, 10};
  auto x = random_vector(xs.numel(), 1), w = random_vector(6 * 4 * 9, 2);
  DeviceBuffer gx(*gpu, x.size()), gw(*gpu, w.size()), gy(*gpu, ys.numel());
  gpu->upload(gx.data(), x.data(), x.size(), gpu->default_stream());
  gpu->upload(gw.data(), w.data(), w.size(), gpu->default_stream());
  gpu->conv2d_forward({gx.data(), xs}, gw.data(), {gy.data(), ys}, g, gpu->default_stream());
  std::vector<float> y(ys.numel()), ref(ys.numel());
  gpu->download(y.data(), gy.data(), y.size(), gpu->default_stream());
  gpu->default_stream().synchronize();
  cpu->conv2d_forward({x.data(), xs}, w.data(), {ref.data(), ys}, g, cpu->default_stream());
  CHECK(rel_error(y, ref) < 1e-2);  // TF32 keeps 10 mantissa bits
}
