// The environment switches of the compute backends (app/make_backend.hpp):
// TRAINER_FUSED_NORM, TRAINER_NHWC16, TRAINER_VIT_AUTOCAST, TRAINER_FILTER_CACHE and
// TRAINER_VIT_FUSED_ATTENTION and TRAINER_VIT_16BIT_COPIES, each keeping the previous GPU path
// selectable, TRAINER_VIT_BIAS_EPILOGUE among them; all refuse
// anything but their documented values.
#include <catch2/catch.hpp>

#include "app/make_backend.hpp"
#include "util/error.hpp"  // UserError

using namespace trainer;
using trainer::app::Nhwc16Choice;

TEST_CASE("TRAINER_NHWC16 picks the activation storage of 16-bit training", "[app][storage16]") {
  CHECK(app::nhwc16_from_env({}) == Nhwc16Choice::device_default);
  CHECK(app::nhwc16_from_env({{"TRAINER_NHWC16", ""}}) == Nhwc16Choice::device_default);
  CHECK(app::nhwc16_from_env({{"TRAINER_NHWC16", "1"}}) == Nhwc16Choice::on);
  CHECK(app::nhwc16_from_env({{"TRAINER_NHWC16", "0"}}) == Nhwc16Choice::off);
  CHECK_THROWS_AS(app::nhwc16_from_env({{"TRAINER_NHWC16", "yes"}}), UserError);
  CHECK(app::fused_norm_from_env({}));
  CHECK_FALSE(app::fused_norm_from_env({{"TRAINER_FUSED_NORM", "0"}}));
  CHECK_THROWS_AS(app::fused_norm_from_env({{"TRAINER_FUSED_NORM", "2"}}), UserError);
}

TEST_CASE("bf16-mixed on the CPU keeps fp32 activations unless TRAINER_NHWC16=1", "[app][storage16]") {
  // make_backend reads the process environment; the CPU default is fp32 storage.
  app::BackendRequest request;
  request.precision = "bf16-mixed";
  request.cpu_threads = 1;
  Log log;
  auto backend = app::make_backend(request, log);
  if (app::nhwc16_from_env(capture_environment()) == Nhwc16Choice::on)
    CHECK(backend->activation_storage() == compute::Storage::bf16_nhwc);
  else
    CHECK(backend->activation_storage() == compute::Storage::f32_nchw);
  CHECK(backend->precision() == compute::Precision::bf16);
}

TEST_CASE("TRAINER_VIT_AUTOCAST keeps the fp32 ViT products selectable", "[app][autocast]") {
  CHECK(app::vit_autocast_from_env({}));
  CHECK(app::vit_autocast_from_env({{"TRAINER_VIT_AUTOCAST", ""}}));
  CHECK(app::vit_autocast_from_env({{"TRAINER_VIT_AUTOCAST", "1"}}));
  CHECK_FALSE(app::vit_autocast_from_env({{"TRAINER_VIT_AUTOCAST", "0"}}));
  CHECK_THROWS_AS(app::vit_autocast_from_env({{"TRAINER_VIT_AUTOCAST", "off"}}), UserError);
  // make_backend applies it: the ViT ops of a bf16-mixed backend run bf16 products
  // unless the process environment says 0.
  app::BackendRequest request;
  request.precision = "bf16-mixed";
  request.cpu_threads = 1;
  Log log;
  auto backend = app::make_backend(request, log);
  const bool on = app::vit_autocast_from_env(capture_environment());
  CHECK(backend->transformer_ops().autocast_precision() ==
        (on ? compute::Precision::bf16 : compute::Precision::fp32));
}

TEST_CASE("TRAINER_FILTER_CACHE keeps the per-convolution filter casts selectable", "[app][storage16]") {
  CHECK(app::filter_cache_from_env({}));
  CHECK(app::filter_cache_from_env({{"TRAINER_FILTER_CACHE", "1"}}));
  CHECK_FALSE(app::filter_cache_from_env({{"TRAINER_FILTER_CACHE", "0"}}));
  CHECK_THROWS_AS(app::filter_cache_from_env({{"TRAINER_FILTER_CACHE", "no"}}), UserError);
  app::BackendRequest request;
  request.precision = "bf16-mixed";
  request.cpu_threads = 1;
  Log log;
  auto backend = app::make_backend(request, log);
  CHECK(backend->caches_filters16() == app::filter_cache_from_env(capture_environment()));
}

TEST_CASE("TRAINER_BN_KERNELS keeps the 2026-11-27 batch-norm kernels selectable", "[app][storage16]") {
  CHECK(app::tiled_batchnorm_from_env({}));
  CHECK(app::tiled_batchnorm_from_env({{"TRAINER_BN_KERNELS", "1"}}));
  CHECK_FALSE(app::tiled_batchnorm_from_env({{"TRAINER_BN_KERNELS", "0"}}));
  CHECK_THROWS_AS(app::tiled_batchnorm_from_env({{"TRAINER_BN_KERNELS", "flat"}}), UserError);
  app::BackendRequest request;
  request.precision = "bf16-mixed";
  request.cpu_threads = 1;
  Log log;
  auto backend = app::make_backend(request, log);
  CHECK(backend->tiled_batchnorm() == app::tiled_batchnorm_from_env(capture_environment()));
}

TEST_CASE("TRAINER_BN_WIDE_SUMS keeps the 2026-11-27 layout of the 16-bit channel sums selectable",
          "[app][storage16]") {
  CHECK(app::wide_sum_blocks16_from_env({}));
  CHECK(app::wide_sum_blocks16_from_env({{"TRAINER_BN_WIDE_SUMS", "1"}}));
  CHECK_FALSE(app::wide_sum_blocks16_from_env({{"TRAINER_BN_WIDE_SUMS", "0"}}));
  CHECK_THROWS_AS(app::wide_sum_blocks16_from_env({{"TRAINER_BN_WIDE_SUMS", "lanes"}}), UserError);
  app::BackendRequest request;
  request.precision = "bf16-mixed";
  request.cpu_threads = 1;
  Log log;
  auto backend = app::make_backend(request, log);
  CHECK(backend->wide_sum_blocks16() == app::wide_sum_blocks16_from_env(capture_environment()));
}

TEST_CASE("TRAINER_BN_FOLD keeps the batch norm's per-channel kernels of 2026-11-28 selectable", "[app][storage16]") {
  CHECK(app::batchnorm_folds_from_env({}));
  CHECK(app::batchnorm_folds_from_env({{"TRAINER_BN_FOLD", "1"}}));
  CHECK_FALSE(app::batchnorm_folds_from_env({{"TRAINER_BN_FOLD", "0"}}));
  CHECK_THROWS_AS(app::batchnorm_folds_from_env({{"TRAINER_BN_FOLD", "no"}}), UserError);
  app::BackendRequest request;
  request.precision = "32";
  request.cpu_threads = 1;
  Log log;
  auto backend = app::make_backend(request, log);
  CHECK(backend->folds_batchnorm_steps() == app::batchnorm_folds_from_env(capture_environment()));
}

TEST_CASE("TRAINER_VIT_FUSED_ATTENTION keeps the batched-matmul attention selectable", "[app][autocast]") {
  CHECK(app::vit_fused_attention_from_env({}));
  CHECK(app::vit_fused_attention_from_env({{"TRAINER_VIT_FUSED_ATTENTION", "1"}}));
  CHECK_FALSE(app::vit_fused_attention_from_env({{"TRAINER_VIT_FUSED_ATTENTION", "0"}}));
  CHECK_THROWS_AS(app::vit_fused_attention_from_env({{"TRAINER_VIT_FUSED_ATTENTION", "false"}}), UserError);
  app::BackendRequest request;
  request.precision = "bf16-mixed";
  request.cpu_threads = 1;
  Log log;
  auto backend = app::make_backend(request, log);
  CHECK(backend->transformer_ops().fused_attention() == app::vit_fused_attention_from_env(capture_environment()));
  // The CPU has the batched-matmul attention only, and says nothing about fusing.
  CHECK(backend->transformer_ops().fused_attention_note().empty());
}

TEST_CASE("TRAINER_VIT_16BIT_COPIES keeps the ViT products that cast every operand selectable", "[app][autocast]") {
  CHECK(app::vit_activation_copies_from_env({}));
  CHECK(app::vit_activation_copies_from_env({{"TRAINER_VIT_16BIT_COPIES", "1"}}));
  CHECK_FALSE(app::vit_activation_copies_from_env({{"TRAINER_VIT_16BIT_COPIES", "0"}}));
  CHECK_THROWS_AS(app::vit_activation_copies_from_env({{"TRAINER_VIT_16BIT_COPIES", "off"}}), UserError);
  app::BackendRequest request;
  request.precision = "bf16-mixed";
  request.cpu_threads = 1;
  Log log;
  auto backend = app::make_backend(request, log);
  const Env env = capture_environment();  // TRAINER_VIT_AUTOCAST=0 leaves no 16-bit products to copy for
  CHECK(backend->transformer_ops().activation_copies() ==
        (app::vit_activation_copies_from_env(env) && app::vit_autocast_from_env(env)));
  request.precision = "32";  // fp32 keeps no 16-bit copies, whatever the switch says
  CHECK_FALSE(app::make_backend(request, log)->transformer_ops().activation_copies());
}

TEST_CASE("TRAINER_VIT_BIAS_EPILOGUE is on unless 0, and refuses other values", "[app][vit]") {
  // The default since the 2026-11-28 visit measured it; 0 keeps the separate pass.
  CHECK(app::vit_bias_epilogue_from_env({}));
  CHECK_FALSE(app::vit_bias_epilogue_from_env({{"TRAINER_VIT_BIAS_EPILOGUE", "0"}}));
  CHECK(app::vit_bias_epilogue_from_env({{"TRAINER_VIT_BIAS_EPILOGUE", "1"}}));
  CHECK_THROWS_AS(app::vit_bias_epilogue_from_env({{"TRAINER_VIT_BIAS_EPILOGUE", "on"}}), UserError);
}

TEST_CASE("TRAINER_DEPTHWISE_CHUNKS is on unless 0, and refuses other values", "[app][mbconv]") {
  CHECK(app::depthwise_chunks_from_env({}));
  CHECK_FALSE(app::depthwise_chunks_from_env({{"TRAINER_DEPTHWISE_CHUNKS", "0"}}));
  CHECK(app::depthwise_chunks_from_env({{"TRAINER_DEPTHWISE_CHUNKS", "1"}}));
  CHECK_THROWS_AS(app::depthwise_chunks_from_env({{"TRAINER_DEPTHWISE_CHUNKS", "yes"}}), UserError);
}
