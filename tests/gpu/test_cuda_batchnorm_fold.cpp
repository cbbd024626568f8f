// TRAINER_BN_FOLD: the batch norm's per-channel steps folded into the kernels beside
// them (the default since 2026-11-28, kernels/batchnorm.cuh) against their own
// kernels, as an H200 ran them, on the same GPU. The folded kernels compute each
// channel with the same expressions, so every value must be the same bits: the
// statistics and running statistics, the backward sums and parameter gradients, and
// the 16-bit element passes that compute their own coefficients. Every kernel set
// (TRAINER_BN_KERNELS, TRAINER_BN_WIDE_SUMS) is checked, over fp32 NCHW and 16-bit
// NHWC activations; then whole ResNet steps.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>  // stream capture: the kernels an op launches

#include <cstdint>  // std::uint32_t
#include <cstring>  // std::memcpy
#include <vector>

#include "gpu_test_util.hpp"
#include "model/heatmap_model.hpp"  // HeatmapModel

using namespace trainer;
using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

namespace {

// Exact comparison, whatever the floats hold (16-bit pairs, negative zeros).
std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<std::uint32_t> out(v.size());
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

struct Outputs {
  std::vector<std::vector<float>> values;  // each op's outputs in order, `names` alike
  std::vector<const char*> names;
  void add(const char* name, std::vector<float> v) {
    names.push_back(name);
    values.push_back(std::move(v));
  }
};

// Every batch-norm op whose kernels the fold changes, once, on `be` (fp32 NCHW, or the
// backend's 16-bit NHWC storage with `storage16`), from the same fp32 inputs.
Outputs run_ops(Backend& be, Shape4 d, bool storage16) {
  Stream& s = be.default_stream();
  const int c = d.c;
  const std::size_t numel = d.numel();
  const Storage storage = storage16 ? be.activation_storage() : Storage::f32_nchw;
  const std::size_t floats = storage_floats(numel, storage);
  const auto upload = [&](const std::vector<float>& host) {
    DeviceBuffer b(be, host.size());
    be.upload(b.data(), host.data(), host.size(), s);
    return b;
  };
  const auto download = [&](const float* p, std::size_t n) {
    std::vector<float> h(n);
    be.download(h.data(), p, n, s);
    s.synchronize();
    return h;
  };
  // An activation in the storage under test, from fp32 values.
  const auto activation = [&](unsigned seed, float lo, float hi) {
    DeviceBuffer x32 = upload(random_vector(numel, seed, lo, hi));
    if (!storage16) return x32;
    DeviceBuffer x(be, floats);
    be.convert_storage({x32.data(), d}, {x.data(), d, storage}, s);
    return x;
  };
  DeviceBuffer x = activation(701, -2.f, 3.f), dy = activation(702, -1.f, 1.f), residual = activation(703, -1.f, 1.f),
               out(be, floats);
  const auto view = [&](DeviceBuffer& b) { return TensorView{b.data(), d, storage}; };
  const auto cview = [&](DeviceBuffer& b) { return ConstTensorView{b.data(), d, storage}; };
  DeviceBuffer gamma = upload(random_vector(c, 704, -1.5f, 1.5f)), beta = upload(random_vector(c, 705, -0.5f, 0.5f)),
               running_mean = upload(random_vector(c, 706, -0.5f, 0.5f)),
               running_var = upload(random_vector(c, 707, 0.5f, 2.f)), mean(be, c), invstd(be, c),
               moments(be, batchnorm_moments_size(c)), reduce(be, 2 * std::size_t(c)), dgamma(be, c), dbeta(be, c);
  Outputs o;
  be.batchnorm_local_statistics(cview(x), moments.data(), 1e-5f, 0.1f, mean.data(), invstd.data(),
                                running_mean.data(), running_var.data(), s);
  o.add("moments", download(moments.data(), moments.size()));
  o.add("mean", download(mean.data(), c));
  o.add("invstd", download(invstd.data(), c));
  o.add("running_mean", download(running_mean.data(), c));
  o.add("running_var", download(running_var.data(), c));
  // Without running statistics (as prediction's train-mode batch norms never are,
  // but the op allows).
  be.batchnorm_local_statistics(cview(x), moments.data(), 1e-3f, 0.1f, mean.data(), invstd.data(), nullptr, nullptr,
                                s);
  o.add("invstd without running statistics", download(invstd.data(), c));
  for (bool relu : {false, true}) {
    be.batchnorm_backward_reduce_grads(cview(dy), cview(x), mean.data(), invstd.data(), gamma.data(), beta.data(),
                                       relu, reduce.data(), dgamma.data(), dbeta.data(), s);
    o.add(relu ? "reduce through the ReLU" : "reduce", download(reduce.data(), reduce.size()));
    o.add(relu ? "dgamma through the ReLU" : "dgamma", download(dgamma.data(), c));
    o.add(relu ? "dbeta through the ReLU" : "dbeta", download(dbeta.data(), c));
  }
  // dgamma alone (a frozen bias): dbeta keeps the last values.
  be.batchnorm_backward_reduce_grads(cview(dy), cview(x), mean.data(), invstd.data(), gamma.data(), beta.data(), false,
                                     reduce.data(), dgamma.data(), nullptr, s);
  o.add("dgamma alone", download(dgamma.data(), c));
  o.add("dbeta untouched", download(dbeta.data(), c));
  const double count = double(d.n) * d.h * d.w;
  be.batchnorm_apply(cview(x), mean.data(), invstd.data(), gamma.data(), beta.data(), view(out), s);
  o.add("apply", download(out.data(), floats));
  be.batchnorm_apply_relu(cview(x), mean.data(), invstd.data(), gamma.data(), beta.data(), nullptr, view(out), s);
  o.add("apply + ReLU", download(out.data(), floats));
  be.batchnorm_apply_relu(cview(x), mean.data(), invstd.data(), gamma.data(), beta.data(), residual.data(), view(out),
                          s);
  o.add("apply + residual + ReLU", download(out.data(), floats));
  be.batchnorm_backward_apply(cview(dy), cview(x), mean.data(), invstd.data(), gamma.data(), reduce.data(), count,
                              view(out), s);
  o.add("backward apply", download(out.data(), floats));
  be.batchnorm_relu_backward_apply(cview(dy), cview(x), mean.data(), invstd.data(), gamma.data(), beta.data(),
                                   reduce.data(), count, view(out), s);
  o.add("backward apply through the ReLU", download(out.data(), floats));
  return o;
}

void check_same_bits(const Outputs& folded, const Outputs& separate) {
  REQUIRE(folded.values.size() == separate.values.size());
  for (std::size_t i = 0; i < folded.values.size(); ++i) {
    INFO(folded.names[i]);
    CHECK(bits_of(folded.values[i]) == bits_of(separate.values[i]));
  }
}

enum class KernelSet { tiled, lane_rows, flat };
const char* kernel_set_name(KernelSet k) {
  return k == KernelSet::tiled ? "tiled" : k == KernelSet::lane_rows ? "tiled, lane rows" : "flat";
}
void select(Backend& be, KernelSet k) {
  be.set_tiled_batchnorm(k != KernelSet::flat);
  be.set_wide_sum_blocks16(k == KernelSet::tiled);
}

}  // namespace

TEST_CASE("cuda batch norm with its per-channel steps folded gives their own kernels' bits (TRAINER_BN_FOLD=0)",
          "[gpu][bn_fold]") {
  // fp32: ResNet-50's last stage (2048 channels of 8 x 8), 64 x 64 planes, 14 x 14
  // planes, and 13 x 11 planes, which the tiled kernels decline (flat either way).
  // 16-bit: 64 and 2048 channels (eight a thread; 2048 in the wide sums' blocks), 300
  // and 6 (one a thread).
  struct Case {
    Shape4 d;
    Precision precision;
  };
  for (const Case k : {Case{Shape4{4, 2048, 8, 8}, Precision::fp32}, Case{Shape4{4, 64, 64, 64}, Precision::fp32},
                       Case{Shape4{3, 300, 14, 14}, Precision::fp32}, Case{Shape4{3, 17, 13, 11}, Precision::fp32},
                       Case{Shape4{4, 64, 32, 32}, Precision::bf16}, Case{Shape4{2, 2048, 8, 8}, Precision::bf16},
                       Case{Shape4{2, 300, 9, 9}, Precision::bf16}, Case{Shape4{2, 6, 33, 31}, Precision::fp16},
                       Case{Shape4{4, 64, 32, 32}, Precision::fp16}}) {
    const bool storage16 = k.precision != Precision::fp32;
    auto be = make_cuda_backend(0, k.precision);
    if (storage16) be->set_activation_storage(storage_16bit_of(k.precision));
    for (KernelSet set : {KernelSet::tiled, KernelSet::lane_rows, KernelSet::flat}) {
      INFO(precision_name(k.precision) << " " << k.d.str() << ", " << kernel_set_name(set) << " kernels");
      select(*be, set);
      be->set_folds_batchnorm_steps(true);
      const Outputs folded = run_ops(*be, k.d, storage16);
      be->set_folds_batchnorm_steps(false);
      const Outputs separate = run_ops(*be, k.d, storage16);
      check_same_bits(folded, separate);
    }
  }
}

namespace {
// The kernels `ops` launches on the backend's stream, counted as the kernel nodes of a
// CUDA graph captured from it; a first run outside the capture sizes any scratch.
template <typename Ops>
std::size_t kernels_launched(Backend& be, Ops ops) {
  Stream& s = be.default_stream();
  ops();
  s.synchronize();
  const auto stream = static_cast<cudaStream_t>(s.native());
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  ops();
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  std::size_t count = 0;
  REQUIRE(cudaGraphGetNodes(graph, nullptr, &count) == cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) REQUIRE(cudaGraphGetNodes(graph, nodes.data(), &count) == cudaSuccess);
  std::size_t kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    REQUIRE(cudaGraphNodeGetType(node, &type) == cudaSuccess);
    kernels += type == cudaGraphNodeTypeKernel ? 1 : 0;
  }
  cudaGraphDestroy(graph);
  return kernels;
}
}  // namespace

// The bit comparisons above would pass trivially if the switch stopped switching:
// the folded ops must launch fewer kernels (the statistics' finalize, the parameter
// gradients, the 16-bit tiled passes' coefficients) than their separate kernels.
TEST_CASE("cuda batch norm fold: the folded ops launch fewer kernels than the separate ones", "[gpu][bn_fold]") {
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    INFO(precision_name(p));
    const bool storage16 = p != Precision::fp32;
    auto be = make_cuda_backend(0, p);
    if (storage16) be->set_activation_storage(storage_16bit_of(p));
    select(*be, KernelSet::tiled);
    Stream& s = be->default_stream();
    const Shape4 d{4, 64, 32, 32};
    const int c = d.c;
    const Storage storage = storage16 ? be->activation_storage() : Storage::f32_nchw;
    const std::size_t floats = storage_floats(d.numel(), storage);
    const auto filled = [&](std::size_t n, unsigned seed, float lo, float hi) {
      DeviceBuffer b(*be, n);
      const auto host = random_vector(n, seed, lo, hi);
      be->upload(b.data(), host.data(), n, s);
      return b;
    };
    // 16-bit storage from fp32 values (random bits could be NaN).
    const auto activation = [&](unsigned seed) {
      DeviceBuffer x32 = filled(d.numel(), seed, -1.f, 1.f);
      if (!storage16) return x32;
      DeviceBuffer x(*be, floats);
      be->convert_storage({x32.data(), d}, {x.data(), d, storage}, s);
      return x;
    };
    DeviceBuffer x = activation(801), dy = activation(802), out(*be, floats);
    DeviceBuffer gamma = filled(c, 803, 0.5f, 1.5f), beta = filled(c, 804, -0.5f, 0.5f),
                 running_mean = filled(c, 805, -0.5f, 0.5f), running_var = filled(c, 806, 0.5f, 2.f),
                 mean(*be, c), invstd(*be, c), moments(*be, batchnorm_moments_size(c)), reduce(*be, 2 * std::size_t(c)),
                 dgamma(*be, c), dbeta(*be, c);
    const ConstTensorView xv{x.data(), d, storage}, dyv{dy.data(), d, storage};
    const TensorView outv{out.data(), d, storage};
    const auto statistics = [&] {
      be->batchnorm_local_statistics(xv, moments.data(), 1e-5f, 0.1f, mean.data(), invstd.data(), running_mean.data(),
                                     running_var.data(), s);
    };
    const auto reduce_grads = [&] {
      be->batchnorm_backward_reduce_grads(dyv, xv, mean.data(), invstd.data(), gamma.data(), beta.data(), true,
                                          reduce.data(), dgamma.data(), dbeta.data(), s);
    };
    const auto apply = [&] {
      be->batchnorm_apply_relu(xv, mean.data(), invstd.data(), gamma.data(), beta.data(), nullptr, outv, s);
    };
    const auto backward_apply = [&] {
      be->batchnorm_relu_backward_apply(dyv, xv, mean.data(), invstd.data(), gamma.data(), beta.data(), reduce.data(),
                                        double(d.n) * d.h * d.w, outv, s);
    };
    std::size_t folded[4], separate[4];
    be->set_folds_batchnorm_steps(true);
    folded[0] = kernels_launched(*be, statistics), folded[1] = kernels_launched(*be, reduce_grads);
    folded[2] = kernels_launched(*be, apply), folded[3] = kernels_launched(*be, backward_apply);
    be->set_folds_batchnorm_steps(false);
    separate[0] = kernels_launched(*be, statistics), separate[1] = kernels_launched(*be, reduce_grads);
    separate[2] = kernels_launched(*be, apply), separate[3] = kernels_launched(*be, backward_apply);
    CHECK(folded[0] < separate[0]);  // the finalize kernel
    CHECK(folded[1] < separate[1]);  // the parameter-gradient kernel
    if (storage16) {                 // the coefficient kernels of the tiled 16-bit passes
      CHECK(folded[2] < separate[2]);
      CHECK(folded[3] < separate[3]);
    } else {                         // fp32's element passes are not folded
      CHECK(folded[2] == separate[2]);
      CHECK(folded[3] == separate[3]);
    }
  }
}

namespace {
// Heatmaps, gradients and running statistics after one ResNet forward/backward.
std::vector<std::vector<float>> resnet_step(const char* backbone, Precision precision, bool fold) {
  auto b = make_cuda_backend(0, precision);
  if (precision != Precision::fp32) b->set_activation_storage(storage_16bit_of(precision));
  b->set_folds_batchnorm_steps(fold);
  auto& s = b->default_stream();
  model::HeatmapModel m(*b, model::ModelSpec{backbone, 17, 2});
  m.initialize(5, s);
  const Shape4 in{4, 3, 128, 128};
  const auto images = random_vector(in.numel(), 711);
  DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  model::Context ctx{*b, s, true, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), in});
  const auto g = random_vector(y.shape.numel(), 712);
  DeviceBuffer dpred(*b, y.shape.numel());
  b->upload(dpred.data(), g.data(), g.size(), s);
  std::vector<float> heatmaps(y.shape.numel()), grads(m.store().parameter_count()),
      buffers(m.store().buffer_count());
  b->download(heatmaps.data(), y.data, heatmaps.size(), s);
  m.backward(ctx, {dpred.data(), y.shape}, true);
  b->download(grads.data(), m.store().grads_data(), grads.size(), s);
  b->download(buffers.data(), m.store().buffers_data(), buffers.size(), s);
  s.synchronize();
  return {heatmaps, grads, buffers};
}
}  // namespace

// The forward (heatmaps, running statistics) must be the same bits. The gradients pass
// through cuDNN's weight-gradient kernels, whose order of summing is not the same from
// run to run (test_cuda_step_graphs.cpp), and every batch norm's dy with them: a
// tolerance there, as test_cuda_fused_norm.cpp has (the op-level case above is exact).
TEST_CASE("cuda ResNet steps with the batch norm's steps folded give their own kernels' numbers", "[gpu][bn_fold]") {
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    INFO(precision_name(p));
    const auto folded = resnet_step("resnet18", p, true), separate = resnet_step("resnet18", p, false);
    CHECK(bits_of(folded[0]) == bits_of(separate[0]));  // heatmaps
    // gradients: 16-bit activation gradients round a reordered sum to a bf16 ulp (4e-3)
    CHECK(rel_error(folded[1], separate[1]) < (p == Precision::fp32 ? 1e-5 : 1e-2));
    CHECK(bits_of(folded[2]) == bits_of(separate[2]));  // running statistics
  }
}
