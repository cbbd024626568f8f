// Mixed precision on the GPU against its CPU twins: the cast kernels against the
// host rounding rules (compute/float16.hpp), the bf16 / fp16 cuDNN convolutions
// against the CPU backend's emulation (same rounding points; only the fp32
// summation order differs, so one 16-bit ulp at most: bf16 tolerance 1e-2, fp16
// 1e-3 relative to the output's scale), and the loss-scale unscale kernel.
#include <catch2/catch.hpp>

#include <cmath>    // std::isnan, std::ldexp
#include <algorithm>  // std::copy
#include <cstdint>  // std::uint16_t
#include <limits>   // std::numeric_limits
#include <vector>   // std::vector

#include "compute/adam_factors.hpp"         // AdamFactors (count_adam_step)
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "cast.cuh"                          // kernels::cast_to_16, cast_from_16, Dims4
#include "compute/cuda/cuda_check.hpp"       // CUDA_CHECK
#include "compute/cuda/cuda_stream.hpp"      // cuda::as_cuda
#include "compute/cuda/cudnn_raii.hpp"       // cuda::CudnnHandle, TensorDesc
#include "compute/cuda/device_memory.hpp"    // cuda::DeviceMemory
#include "compute/float16.hpp"               // f16::*
#include "gpu_test_util.hpp"
#include "data/batch.hpp"                    // data::Batch
#include "model/heatmap_model.hpp"           // model::HeatmapModel
#include "train/loss_scaler.hpp"             // train::LossScaler
#include "train/optimizer.hpp"               // train::Optimizer
#include "train/step.hpp"                    // train::StepRunner, LocalGradientSync

using namespace trainer;
using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

namespace {

double tolerance(Precision p) { return p == Precision::bf16 ? 1e-2 : 1e-3; }

// Random values over many binades plus every special case of the rounding rules.
std::vector<float> cast_inputs(std::size_t n) {
  auto v = random_vector(n, 77, -1.f, 1.f);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::ldexp(v[i], int(i % 60) - 30);
  const float specials[] = {0.f, -0.f, 1.f, 65504.f, 65519.f, 65520.f, 1e5f, -1e30f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max(),
                            std::ldexp(1.f, -24), std::ldexp(1.f, -25), std::ldexp(3.f, -25),
                            std::ldexp(1.f, -14) - std::ldexp(1.f, -25), 1.f + std::ldexp(1.f, -11),
                            1.f + std::ldexp(1.f, -8), 1.f + 3 * std::ldexp(1.f, -8), 1e-40f};
  for (std::size_t i = 0; i < sizeof specials / sizeof specials[0] && i < n; ++i) v[i * 7 % n] = specials[i];
  return v;
}

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST_CASE("cuda cast kernels round exactly like the host rules, NCHW and NHWC", "[gpu][precision]") {
  Twins t;
  // One transpose tile, and several with partial tiles on both axes (the NHWC casts
  // move 32 x 32 tiles of [channels, pixels]).
  const auto d = GENERATE(kernels::Dims4{2, 3, 5, 7}, kernels::Dims4{3, 70, 9, 11});
  INFO("dims " << d.n << " x " << d.c << " x " << d.h << " x " << d.w);
  const std::size_t n = d.numel();
  const auto x = cast_inputs(n);
  auto gx = t.device(x);
  cuda::DeviceMemory g16(n * sizeof(std::uint16_t));
  auto gback = t.zeros(n);
  cudaStream_t s = cuda::as_cuda(t.gs()).get();
  for (kernels::Format16 f : {kernels::Format16::bf16, kernels::Format16::fp16}) {
    for (bool nhwc : {false, true}) {
      INFO((f == kernels::Format16::bf16 ? "bf16" : "fp16") << (nhwc ? " NHWC" : " NCHW"));
      auto* bits = static_cast<std::uint16_t*>(g16.get());
      kernels::cast_to_16(gx.data(), bits, d, f, nhwc, s);
      CUDA_CHECK(cudaGetLastError());
      std::vector<std::uint16_t> got(n);
      CUDA_CHECK(cudaMemcpyAsync(got.data(), bits, n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
      for (int in = 0; in < d.n; ++in)
        for (int c = 0; c < d.c; ++c)
          for (int h = 0; h < d.h; ++h)
            for (int w = 0; w < d.w; ++w) {
              const std::size_t src = ((std::size_t(in) * d.c + c) * d.h + h) * d.w + w;
              const std::size_t dst = nhwc ? ((std::size_t(in) * d.h + h) * d.w + w) * d.c + c : src;
              const std::uint16_t want =
                  f == kernels::Format16::fp16 ? f16::float_to_half(x[src]) : f16::float_to_bf16(x[src]);
              REQUIRE(got[dst] == want);
            }
      // And back to fp32 NCHW: the round trip of every value.
      kernels::cast_from_16(bits, gback.data(), d, f, nhwc, s);
      CUDA_CHECK(cudaGetLastError());
      const auto back = t.host(gback);
      for (std::size_t i = 0; i < n; ++i) {
        const float want = f == kernels::Format16::fp16 ? f16::round_half(x[i]) : f16::round_bf16(x[i]);
        REQUIRE(same_value(back[i], want));
      }
    }
  }
}

TEST_CASE("cuda NHWC casts lay tensors out as cuDNN reads NHWC", "[gpu][precision]") {
  // cuDNN's own NCHW float -> NHWC 16-bit transform of values that are exact in
  // 16 bits must give the same bits as our cast: an independent check of the
  // layout the convolution descriptors declare.
  Twins t;
  const kernels::Dims4 d{3, 5, 4, 6};
  const std::size_t n = d.numel();
  cuda::CudnnHandle handle;
  cudaStream_t s = cuda::as_cuda(t.gs()).get();
  CUDNN_CHECK(cudnnSetStream(handle, s));
  for (kernels::Format16 f : {kernels::Format16::bf16, kernels::Format16::fp16}) {
    const bool half = f == kernels::Format16::fp16;
    INFO((half ? "fp16" : "bf16"));
    auto x = random_vector(n, 5, -8.f, 8.f);
    for (auto& v : x) v = half ? f16::round_half(v) : f16::round_bf16(v);
    auto gx = t.device(x);
    cuda::DeviceMemory ours(n * 2), theirs(n * 2);
    kernels::cast_to_16(gx.data(), static_cast<std::uint16_t*>(ours.get()), d, f, true, s);
    CUDA_CHECK(cudaGetLastError());
    cuda::TensorDesc src, dst;
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(src, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d.n, d.c, d.h, d.w));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(dst, CUDNN_TENSOR_NHWC, half ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16,
                                           d.n, d.c, d.h, d.w));
    const float one = 1.f, zero = 0.f;
    const cudnnStatus_t rc = cudnnTransformTensor(handle, &one, src, gx.data(), &zero, dst, theirs.get());
    if (rc == CUDNN_STATUS_NOT_SUPPORTED) {
      WARN("cudnnTransformTensor does not support this type; layout cross-check skipped");
      continue;
    }
    CUDNN_CHECK(rc);
    std::vector<std::uint16_t> a(n), b(n);
    CUDA_CHECK(cudaMemcpyAsync(a.data(), ours.get(), n * 2, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(b.data(), theirs.get(), n * 2, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CHECK(a == b);
  }
}

TEST_CASE("cuda bf16 / fp16 convolutions match the CPU emulation", "[gpu][precision]") {
  struct Case { int n, cin, cout, h, w, k, stride, pad; };
  const Case cases[] = {{2, 3, 8, 33, 30, 7, 2, 3}, {2, 8, 8, 16, 17, 3, 1, 1},
                        {3, 8, 16, 15, 15, 1, 2, 0}, {2, 16, 8, 14, 13, 3, 2, 1},
                        {4, 64, 64, 16, 16, 3, 1, 1}};
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    auto cpu = make_cpu_backend(2, p);
    auto gpu = make_cuda_backend(0, p);
    CHECK(gpu->precision() == p);
    CHECK(gpu->description().find(precision_name(p)) != std::string::npos);
    Stream& gs = gpu->default_stream();
    Stream& cs = cpu->default_stream();
    auto up = [&](const std::vector<float>& v) {
      DeviceBuffer b(*gpu, v.size());
      gpu->upload(b.data(), v.data(), v.size(), gs);
      return b;
    };
    auto down = [&](const DeviceBuffer& b) {
      std::vector<float> v(b.size());
      gpu->download(v.data(), b.data(), v.size(), gs);
      gs.synchronize();
      return v;
    };
    unsigned seed = 100;
    for (const Case& c : cases) {
      ConvGeometry g;
      g.in_channels = c.cin;
      g.out_channels = c.cout;
      g.kernel = c.k;
      g.stride = c.stride;
      g.pad = c.pad;
      const Shape4 xs{c.n, c.cin, c.h, c.w}, ys{c.n, c.cout, g.conv_out(c.h), g.conv_out(c.w)};
      const auto x = random_vector(xs.numel(), seed++, -2.f, 2.f);
      const auto w = random_vector(std::size_t(c.cout) * c.cin * c.k * c.k, seed++);
      const auto dy = random_vector(ys.numel(), seed++);
      auto gx = up(x), gw = up(w), gdy = up(dy);
      DeviceBuffer gy(*gpu, ys.numel()), gdx(*gpu, xs.numel()), gdw(*gpu, w.size());
      gpu->conv2d_forward({gx.data(), xs}, gw.data(), {gy.data(), ys}, g, gs);
      gpu->conv2d_backward_data({gdy.data(), ys}, gw.data(), {gdx.data(), xs}, g, gs);
      gpu->conv2d_backward_weights({gx.data(), xs}, {gdy.data(), ys}, gdw.data(), g, gs);
      std::vector<float> y(ys.numel()), dx(xs.numel()), dw(w.size());
      cpu->conv2d_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, cs);
      cpu->conv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, cs);
      cpu->conv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, cs);
      INFO(precision_name(p) << " conv k" << c.k << " s" << c.stride << " p" << c.pad << " x " << xs.str());
      CHECK(rel_error(down(gy), y) < tolerance(p));
      CHECK(rel_error(down(gdx), dx) < tolerance(p));
      CHECK(rel_error(down(gdw), dw) < tolerance(p));
      // conv2d_backward (dy cast once for both gradients) gives the two calls' bits.
      DeviceBuffer gdx2(*gpu, xs.numel()), gdw2(*gpu, w.size());
      gpu->conv2d_backward({gx.data(), xs}, {gdy.data(), ys}, gw.data(), gdw2.data(), {gdx2.data(), xs}, g, gs);
      CHECK(down(gdx2) == down(gdx));
      CHECK(down(gdw2) == down(gdw));
    }

    // Transposed convolution with bias (the head's ConvTranspose2d).
    ConvGeometry g;
    g.in_channels = 12;
    g.out_channels = 5;
    g.kernel = 3;
    g.stride = 2;
    g.pad = 1;
    g.output_padding = 1;
    const Shape4 xs{2, 12, 9, 11}, ys{2, 5, g.deconv_out(9), g.deconv_out(11)};
    const auto x = random_vector(xs.numel(), 31), w = random_vector(std::size_t(12) * 5 * 9, 32);
    const auto bias = random_vector(5, 33), dy = random_vector(ys.numel(), 34);
    auto gx = up(x), gw = up(w), gb = up(bias), gdy = up(dy);
    DeviceBuffer gy(*gpu, ys.numel()), gdx(*gpu, xs.numel()), gdw(*gpu, w.size()), gdb(*gpu, 5);
    gpu->deconv2d_forward({gx.data(), xs}, gw.data(), gb.data(), {gy.data(), ys}, g, gs);
    gpu->deconv2d_backward_data({gdy.data(), ys}, gw.data(), {gdx.data(), xs}, g, gs);
    gpu->deconv2d_backward_weights({gx.data(), xs}, {gdy.data(), ys}, gdw.data(), gdb.data(), g, gs);
    std::vector<float> y(ys.numel()), dx(xs.numel()), dw(w.size()), db(5);
    cpu->deconv2d_forward({x.data(), xs}, w.data(), bias.data(), {y.data(), ys}, g, cs);
    cpu->deconv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, cs);
    cpu->deconv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), db.data(), g, cs);
    INFO(precision_name(p) << " deconv");
    CHECK(rel_error(down(gy), y) < tolerance(p));
    CHECK(rel_error(down(gdx), dx) < tolerance(p));
    CHECK(rel_error(down(gdw), dw) < tolerance(p));
    CHECK(rel_error(down(gdb), db) < kTolerance);  // the bias gradient stays fp32
  }
}

TEST_CASE("cuda fp16 convolution overflows to inf like the CPU emulation", "[gpu][precision]") {
  auto gpu = make_cuda_backend(0, Precision::fp16);
  ConvGeometry g;
  g.in_channels = 4;
  g.out_channels = 2;
  const Shape4 xs{1, 4, 2, 2}, ys{1, 2, 2, 2};
  const std::vector<float> x(xs.numel(), 256.f), w(8, 128.f);  // 131072 > 65504
  DeviceBuffer gx(*gpu, x.size()), gw(*gpu, w.size()), gy(*gpu, ys.numel());
  Stream& s = gpu->default_stream();
  gpu->upload(gx.data(), x.data(), x.size(), s);
  gpu->upload(gw.data(), w.data(), w.size(), s);
  gpu->conv2d_forward({gx.data(), xs}, gw.data(), {gy.data(), ys}, g, s);
  std::vector<float> y(ys.numel());
  gpu->download(y.data(), gy.data(), y.size(), s);
  s.synchronize();
  for (float v : y) CHECK(std::isinf(v));
}

TEST_CASE("cuda unscale_and_check matches its CPU twin", "[gpu][precision]") {
  Twins t;
  const std::size_t n = 3000017;
  auto g = random_vector(n, 9, -1e4f, 1e4f);
  auto gg = t.device(g);
  auto flag = t.zeros(1);
  const float inv = 1.f / 65536;
  auto ginv = t.device(std::vector<float>{inv});  // read from device memory when the kernel runs
  t.gpu->unscale_and_check(gg.data(), n, ginv.data(), flag.data(), t.gs());
  std::vector<float> ref = g;
  float ref_flag = 0.f;
  t.cpu->unscale_and_check(ref.data(), n, &inv, &ref_flag, t.cs());
  CHECK(t.host(gg) == ref);  // a power-of-two scale is exact on both
  CHECK(t.host(flag)[0] == 0.f);
  CHECK(ref_flag == 0.f);
  // One NaN near the end sets the flag; a later clean range keeps it.
  g[n - 3] = std::numeric_limits<float>::quiet_NaN();
  auto gg2 = t.device(g);
  auto ghalf = t.device(std::vector<float>{0.5f});
  t.gpu->unscale_and_check(gg2.data(), n, ghalf.data(), flag.data(), t.gs());
  CHECK(t.host(flag)[0] == 1.f);
  auto clean = t.device(std::vector<float>{2.f, 4.f});
  t.gpu->unscale_and_check(clean.data(), 2, ghalf.data(), flag.data(), t.gs());
  CHECK(t.host(flag)[0] == 1.f);
  CHECK(t.host(clean) == std::vector<float>{1.f, 2.f});
}

TEST_CASE("cuda loss-scale update, scale_by and the device Adam count match their CPU twins", "[gpu][precision]") {
  Twins t;
  // The scale's state machine over a sequence of found-inf flags.
  LossScaleRule rule;
  rule.growth_interval = 2;
  std::vector<float> ref(kLossScaleSlots, 0.f);
  ref[kLossScale] = 1024.f;
  auto state = t.device(ref);
  for (bool inf : {false, false, true, false, false, false, true}) {
    ref[kLossScaleFoundInf] = inf ? 1.f : 0.f;
    const float flag = ref[kLossScaleFoundInf];
    t.gpu->set_values(state.data() + kLossScaleFoundInf, &flag, 1, t.gs());
    t.gpu->update_loss_scale(state.data(), rule, t.gs());
    t.cpu->update_loss_scale(ref.data(), rule, t.cs());
    CHECK(t.host(state) == ref);
  }
  CHECK(ref[kLossScaleSkipped] == 2.f);
  // The loss gradient times the scale, read from device memory.
  auto x = random_vector(100003, 4);
  auto gx = t.device(x);
  t.gpu->scale_by(gx.data(), x.size(), state.data() + kLossScale, t.gs());
  t.cpu->scale_by(x.data(), x.size(), ref.data() + kLossScale, t.cs());
  CHECK(t.host(gx) == x);
  // Adam's step count and factors on one thread, skipped or not.
  for (bool decoupled : {false, true}) {
    AdamParams p;
    p.weight_decay = 0.01f;
    p.decoupled_weight_decay = decoupled;
    std::vector<float> counts{0.f, 2e-3f}, factors(AdamFactors::kCount, 0.f);  // step, lr
    auto gcounts = t.device(counts);
    auto gfactors = t.device(factors);
    auto gflag = t.zeros(1);
    float flag = 0.f;
    for (int attempt = 0; attempt < 6; ++attempt) {
      flag = attempt == 2 ? 1.f : 0.f;
      t.gpu->set_values(gflag.data(), &flag, 1, t.gs());
      p.skip = gflag.data();
      t.gpu->count_adam_step(gcounts.data(), gfactors.data(), gcounts.data() + 1, p, t.gs());
      p.skip = &flag;
      t.cpu->count_adam_step(counts.data(), factors.data(), counts.data() + 1, p, t.cs());
      CHECK(t.host(gcounts) == counts);
      // CUDA's double pow is within 2 ulp of the C library's: after the rounding to
      // float the factors agree, but for a rare one-ulp tie.
      const auto got = t.host(gfactors);
      for (int i = 0; i < AdamFactors::kCount; ++i) CHECK(got[std::size_t(i)] == Approx(factors[std::size_t(i)]).epsilon(2e-7));
    }
    CHECK(counts[0] == 5.f);
  }
}

TEST_CASE("loss scaler on the CUDA backend: skip, backoff, unscale, all on the device", "[gpu][precision]") {
  auto gpu = make_cuda_backend(0, Precision::fp16);
  Stream& s = gpu->default_stream();
  train::LossScaler scaler(*gpu, s);
  REQUIRE(scaler.enabled());
  DeviceBuffer grads(*gpu, 4);
  const std::vector<float> good{65536.f, 131072.f, -65536.f, 0.f};
  const auto flag = [&] {
    float f = -1.f;
    gpu->download(&f, scaler.skip_flag(), 1, s);
    s.synchronize();
    return f;
  };
  gpu->upload(grads.data(), good.data(), 4, s);
  scaler.unscale_and_update(grads.data(), 4);
  CHECK(flag() == 0.f);
  std::vector<float> out(4);
  gpu->download(out.data(), grads.data(), 4, s);
  s.synchronize();
  CHECK(out == std::vector<float>{1.f, 2.f, -1.f, 0.f});
  const std::vector<float> bad{1.f, std::numeric_limits<float>::infinity(), 0.f, 0.f};
  gpu->upload(grads.data(), bad.data(), 4, s);
  scaler.unscale_and_update(grads.data(), 4);
  CHECK(flag() == 1.f);
  CHECK(scaler.state().scale == 32768.f);
  CHECK(scaler.skipped_steps() == 1);
  // The flag is cleared for the next step.
  gpu->upload(grads.data(), good.data(), 4, s);
  scaler.unscale_and_update(grads.data(), 4);
  CHECK(flag() == 0.f);
}

TEST_CASE("bf16 / fp16 training steps on the GPU follow the CPU emulation", "[gpu][precision][step]") {
  // End to end: the same network, batch and Adam steps with mixed-precision
  // convolutions on both backends. Only fp32 summation order differs before each
  // 16-bit rounding, so the losses agree to about one 16-bit ulp.
  for (compute::Precision p : {compute::Precision::bf16, compute::Precision::fp16})
  for (bool storage16 : {false, true}) {  // fp32 activations (TRAINER_NHWC16=0), then 16-bit NHWC ones
    INFO(compute::precision_name(p) << (storage16 ? ", 16-bit activations" : ", fp32 activations"));
    auto cpu = compute::make_cpu_backend(2, p);
    auto gpu = compute::make_cuda_backend(0, p);
    const compute::Storage storage = storage16 ? compute::storage_16bit_of(p) : compute::Storage::f32_nchw;
    cpu->set_activation_storage(storage);
    gpu->set_activation_storage(storage);
    struct Run {
      compute::Backend& backend;
      model::HeatmapModel net;
      train::Optimizer optimizer;
      train::StepRunner runner;
      explicit Run(compute::Backend& b)
          : backend(b),
            net(b, model::ModelSpec{"resnet18", 3, 2}),
            optimizer(net.store(), train::OptimizerConfig{}),
            runner(b, b.default_stream(), net, compute::heatmap_mse_loss()) {
        net.initialize(7, b.default_stream());
        optimizer.set_group(model::ParamGroup::head, 1e-3, true);
        optimizer.set_group(model::ParamGroup::backbone, 1e-4, true);
      }
    } on_cpu(*cpu), on_gpu(*gpu);
    // One batch in pinned host memory.
    data::Batch batch;
    batch.size = 4;
    batch.height = batch.width = 64;
    batch.num_keypoints = 3;
    auto* images = static_cast<float*>(gpu->allocate_host(batch.image_floats() * sizeof(float)));
    const auto v = random_vector(batch.image_floats(), 1);
    std::copy(v.begin(), v.end(), images);
    batch.images = images;
    const auto kp = random_vector(std::size_t(4) * 3 * 2, 2, 2.f, 61.f);
    batch.keypoints.assign(kp.begin(), kp.end());
    batch.is_real.assign(4, 1);
    batch.scale_x.assign(4, 1.f);
    batch.scale_y.assign(4, 1.f);
    train::LocalGradientSync sync;
    for (int step = 0; step < 3; ++step) {
      on_cpu.runner.train_step(batch, on_cpu.optimizer, sync, true, nullptr);
      on_gpu.runner.train_step(batch, on_gpu.optimizer, sync, true, nullptr);
      on_cpu.runner.request_loss();
      on_gpu.runner.request_loss();
      const double lc = on_cpu.runner.requested_loss(), lg = on_gpu.runner.requested_loss();
      INFO("step " << step << " cpu loss " << lc << " gpu loss " << lg);
      CHECK(std::fabs(lg - lc) <= tolerance(p) * std::fabs(lc));
    }
    gpu->release_host(images);
  }
}
