// `trainer bench step`: training images/s of one rank on random input (forward,
// loss, backward, Adam), the number to compare with scripts/bench_step_torch.py;
// with --mode predict, the prediction path's images/s instead (evaluation forward,
// soft-argmax, keypoints to the host: what `trainer predict` runs per batch).
// With --export DIR it also writes what the PyTorch parity test needs: the initial
// weights, the batch, the targets, the loss, the gradients and the weights after
// one Adam step (tests/parity/model_parity.py).
#include <sys/resource.h>  // getrusage: process CPU time

#include <chrono>    // std::chrono::steady_clock
#include <cstdio>    // std::printf
#include <iostream>  // std::cout
#include <memory>    // std::unique_ptr
#include <random>    // std::mt19937 (benchmark input only)
#include <string>    // std::string
#include <vector>    // std::vector

#include <boost/program_options.hpp>  // options_description

#include "app/commands.hpp"         // bench_step, Args
#include "app/make_backend.hpp"     // make_backend
#include "app/output_files.hpp"     // make_directories
#include "compute/backend.hpp"      // compute::Backend
#include "compute/host_buffer.hpp"  // compute::HostBuffer
#include "compute/losses/heatmap_mse.hpp"  // compute::heatmap_mse_loss
#include "compute/precision.hpp"    // compute::precision_names, float32_matmul_precision_names
#include "compute/profiling_backend.hpp"  // compute::ProfilingBackend (--profile)
#include "data/batch.hpp"           // data::Batch
#include "model/backbone_registry.hpp"  // model::backbone_names
#include "model/heatmap_model.hpp"  // model::HeatmapModel
#include "train/checkpoint.hpp"     // save_checkpoint, save_named_tensors, load_model
#include "train/gradient_sync.hpp"  // train::LocalGradientSync
#include "train/optimizer.hpp"      // train::Optimizer
#include "train/pretrained_weights.hpp"  // train::load_pretrained_backbone (--init-weights)
#include "train/step.hpp"           // train::StepRunner
#include "util/error.hpp"           // UserError
#include "util/log.hpp"             // Log
#include "util/name_list.hpp"       // join_names

namespace po = boost::program_options;

namespace trainer::app {

namespace {
// User + system CPU seconds of the whole process (all threads).
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}
// --init-checkpoint: the model the options describe must be the checkpoint's, else
// load_model's first shape mismatch would be the only (and a puzzling) hint.
void check_checkpoint_model(const std::string& path, const std::string& backbone, int keypoints, int downsample) {
  const train::TrainingState st = train::load_training_state(path);
  const auto differs = [&](const std::string& option, const std::string& ours, const std::string& theirs) {
    if (ours != theirs)
      throw UserError("bench step: --" + option + " " + ours + " differs from the checkpoint's " + theirs + " (" +
                      path + ")", "give --" + option + " " + theirs);
  };
  if (!st.model_type.empty() && st.model_type != "heatmap")
    throw UserError("bench step: " + path + " holds a " + st.model_type + " model; bench step trains heatmap models");
  differs("backbone", backbone, st.backbone);
  differs("keypoints", std::to_string(keypoints), std::to_string(st.num_keypoints));
  differs("downsample", std::to_string(downsample), std::to_string(st.downsample_factor));
}
}  // namespace

int bench_step(const Args& args) {
  std::string backbone = "resnet18", export_dir, init_weights, init_checkpoint, precision_name = "32", accelerator = "cpu",
              fp32_precision = "highest", mode = "train", conv_algorithms = "auto";
  int size = 128, batch = 16, keypoints = 17, steps = 10, warmup = 2, threads = 0, downsample = 2, profile = 0;
  unsigned seed = 0;
  bool cuda_graphs = false;
  std::string backbones;
  for (const auto& name : model::backbone_names()) backbones += (backbones.empty() ? "" : " | ") + name;
  po::options_description desc("trainer bench step [options]");
  desc.add_options()("help,h", "show this help")
      ("backbone", po::value(&backbone)->default_value(backbone), backbones.c_str())
      ("size", po::value(&size)->default_value(size), "square input size in pixels (multiple of 32)")
      ("batch", po::value(&batch)->default_value(batch), "images per step")
      ("precision", po::value(&precision_name)->default_value(precision_name),
       (join_names(compute::precision_names(), " | ") +
        ": convolution precision (docs/GPU.md); on the CPU the mixed ones "
        "are emulated in fp32 (same numerics, no speed-up)").c_str())
      ("float32-matmul-precision", po::value(&fp32_precision)->default_value(fp32_precision),
       (join_names(compute::float32_matmul_precision_names(), " | ") +
        ": with --precision 32 on the GPU, high allows TF32 tensor cores (model.float32_matmul_precision)")
           .c_str())
      ("accelerator", po::value(&accelerator)->default_value(accelerator),
       "cpu | gpu (gpu: the CUDA backend on device 0; CUDA builds only)")
      ("keypoints", po::value(&keypoints)->default_value(keypoints), "keypoints (heatmap channels)")
      ("downsample", po::value(&downsample)->default_value(downsample), "downsample factor d (heatmap = size / 2^d)")
      ("conv-algorithms", po::value(&conv_algorithms)->default_value(conv_algorithms),
       (join_names(compute::conv_algorithms_names(), " | ") +
        ": how the GPU picks cuDNN algorithms (model.conv_algorithms)").c_str())
      ("mode", po::value(&mode)->default_value(mode),
       "train: one optimizer step per iteration | predict: the prediction path (evaluation forward, "
       "soft-argmax, keypoints copied to the host)")
      ("steps", po::value(&steps)->default_value(steps), "timed steps")
      ("profile", po::value(&profile)->default_value(profile),
       "after the timed steps, N more with every op timed (GPU: events around each op): each category's "
       "time per step and call count (where Nsight Compute cannot run)")
      ("cuda-graphs", po::bool_switch(&cuda_graphs),
       "GPUs: replay each step's (or prediction's) recorded device work as a CUDA graph "
       "(model.cuda_graphs); the first three (warm-up, and a recording per staging slot) should be "
       "untimed: --warmup 3")
      ("warmup", po::value(&warmup)->default_value(warmup), "untimed steps first")
      ("threads", po::value(&threads)->default_value(threads), "CPU threads (0: OMP_NUM_THREADS, else the CPUs this process may run on)")
      ("seed", po::value(&seed)->default_value(seed), "model and input seed")
      ("init-weights", po::value(&init_weights),
       "backbone weights to start from, as model.backbone_weights (the parity tests start from a given state)")
      ("init-checkpoint", po::value(&init_checkpoint),
       "a trainer checkpoint (.h5) whose whole model to start from: the parity tests measure from a trained "
       "state; --backbone, --keypoints and --downsample must be the checkpoint's")
      ("export", po::value(&export_dir), "write initial.h5, batch.h5 and after.h5 for the PyTorch parity test "
                                         "(runs exactly one step, no warm-up)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UserError(std::string("bench step: ") + e.what(), "see `trainer bench step --help`");
  }
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  if (size < 32 || size % 32 != 0) throw UserError("bench step: --size must be a positive multiple of 32");
  if (batch < 1 || steps < 1 || keypoints < 1) throw UserError("bench step: --batch, --steps and --keypoints must be >= 1");
  const bool exporting = !export_dir.empty();
  if (exporting) steps = 1, warmup = 0;
  try {
    compute::parse_float32_matmul_precision(fp32_precision);
  } catch (const UserError&) {
    throw UserError("bench step: --float32-matmul-precision must be " +
                    join_names(compute::float32_matmul_precision_names(), " or ") + ", not '" + fp32_precision + "'");
  }
  if (accelerator != "cpu" && accelerator != "gpu")
    throw UserError("bench step: --accelerator must be cpu or gpu, not '" + accelerator + "'");
  if (profile < 0) throw UserError("bench step: --profile must be >= 0");
  if (cuda_graphs && profile > 0)
    throw UserError("bench step: --profile times the ops one by one, which a replayed CUDA graph does not run",
                    "profile without --cuda-graphs");
  if (cuda_graphs && (accelerator != "gpu" || exporting))
    throw UserError("bench step: --cuda-graphs records GPU steps and predictions", "use it with --accelerator gpu");
  if (threads < 0 || warmup < 0)
    throw UserError("bench step: --threads and --warmup must be >= 0, got " + std::to_string(threads) + " and " +
                    std::to_string(warmup), "--threads 0 uses OMP_NUM_THREADS or all cores");
  if (mode != "train" && mode != "predict")
    throw UserError("bench step: --mode must be train or predict, not '" + mode + "'");
  if (!init_weights.empty() && !init_checkpoint.empty())
    throw UserError("bench step: --init-weights and --init-checkpoint cannot be given together",
                    "--init-checkpoint already holds the backbone");
  if (!init_checkpoint.empty()) check_checkpoint_model(init_checkpoint, backbone, keypoints, downsample);
  if (mode == "predict" && exporting)
    throw UserError("bench step: --export writes a training step; it cannot be combined with --mode predict");
  BackendRequest request;
  request.gpu = accelerator == "gpu";
  request.precision = precision_name;
  request.float32_matmul = fp32_precision;
  request.conv_algorithms = conv_algorithms;
  request.cpu_threads = threads;
  auto backend = make_backend(request, Log(0));
  // With --profile everything runs through the profiling wrapper (idle until the
  // profiled steps), so the timed steps measure the same code path.
  std::unique_ptr<compute::ProfilingBackend> profiler;
  if (profile > 0) profiler = std::make_unique<compute::ProfilingBackend>(*backend);
  compute::Backend& run_backend = profiler ? *profiler : *backend;
  auto& stream = run_backend.default_stream();
  model::HeatmapModel net(run_backend, model::ModelSpec{backbone, keypoints, downsample, {size, size}});
  net.initialize(seed, stream);
  if (!init_weights.empty()) train::load_pretrained_backbone(init_weights, net.store(), stream);
  if (!init_checkpoint.empty()) train::load_model(init_checkpoint, net.store(), stream);
  train::Optimizer optimizer(net.store(), train::OptimizerConfig{});
  optimizer.set_group(model::ParamGroup::backbone, 1e-3, true);
  optimizer.set_group(model::ParamGroup::head, 1e-3, true);
  train::StepRunner runner(run_backend, stream, net, compute::heatmap_mse_loss());
  runner.set_model_seed(seed);
  train::LocalGradientSync sync;
  if (cuda_graphs) runner.record_steps([](const std::string& line) { std::fprintf(stderr, "warning: %s\n", line.c_str()); });

  // Random normalized images and keypoints inside the frame. The images sit in the
  // backend's host memory (pinned on a GPU), as the loader's batches do: from
  // pageable memory the upload would block the host and, on an H200, take 5.8 ms of
  // a 50 ms bf16 step (2026-11-26) that training never spends.
  std::mt19937 gen(seed + 1);
  std::normal_distribution<float> pixel(0.f, 1.f);
  std::uniform_real_distribution<float> where(0.f, float(size - 1));
  compute::HostBuffer<float> images(*backend, std::size_t(batch) * 3 * size * size);
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = pixel(gen);
  data::Batch b;
  b.size = batch;
  b.height = b.width = size;
  b.num_keypoints = keypoints;
  b.images = images.data();
  for (int i = 0; i < batch * keypoints * 2; ++i) b.keypoints.push_back(where(gen));
  b.is_real.assign(batch, 1);
  b.scale_x.assign(batch, 1.f);
  b.scale_y.assign(batch, 1.f);
  for (int i = 0; i < batch; ++i) b.frame_index.push_back(i);

  if (exporting) {
    make_directories(export_dir);
    train::TrainingState st;
    st.backbone = backbone;
    st.num_keypoints = keypoints;
    st.downsample_factor = downsample;
    train::save_checkpoint(export_dir + "/initial.h5", net.store(), nullptr, st, stream);
  }
  const bool predicting = mode == "predict";
  train::Predictions predictions;
  for (int i = 0; i < warmup; ++i) {
    if (predicting) runner.predict(b, predictions);
    else runner.train_step(b, optimizer, sync, true, nullptr);
  }
  stream.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = process_cpu_seconds();
  // Training steps are queued without waiting (as in training); the loss read waits
  // for the last. Each prediction waits for its keypoints, as `trainer predict` does.
  double loss = 0;
  if (predicting) {
    for (int i = 0; i < steps; ++i) runner.predict(b, predictions);
  } else {
    for (int i = 0; i < steps; ++i) runner.train_step(b, optimizer, sync, true, nullptr);
    runner.request_loss();
    loss = runner.requested_loss();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu_seconds = process_cpu_seconds() - cpu0;

  if (exporting) {
    train::TrainingState st;
    st.global_step = 1;
    st.backbone = backbone;
    st.num_keypoints = keypoints;
    st.downsample_factor = downsample;
    train::save_checkpoint(export_dir + "/after.h5", net.store(), &optimizer, st, stream);
    std::vector<float> grads(net.store().parameter_count());
    backend->download(grads.data(), net.store().grads_data(), grads.size(), stream);
    stream.synchronize();
    std::vector<train::NamedTensor> tensors;
    tensors.push_back({"images", {batch, 3, size, size}, std::vector<float>(images.data(), images.data() + images.size())});
    tensors.push_back({"keypoints", {batch, keypoints, 2}, b.keypoints});
    tensors.push_back({"loss", {1}, {float(loss)}});
    // The network's own draws of the step (DINOv3: its RoPE coordinate factor), which
    // the reference applies too.
    for (const auto& [name, values] : net.backbone().training_draws())
      tensors.push_back({name, {static_cast<int>(values.size())}, values});
    for (const auto& e : net.store().parameters())
      tensors.push_back({"grad/" + e.name, e.shape,
                         std::vector<float>(grads.begin() + long(e.offset), grads.begin() + long(e.offset + e.count))});
    train::save_named_tensors(export_dir + "/batch.h5", tensors);
    std::printf("exported initial.h5, batch.h5, after.h5 to %s (loss %.8g)\n", export_dir.c_str(), loss);
    return 0;
  }
  std::printf("bench step: %s %dx%d batch %d, %d keypoints, precision %s, mode %s, %s\n", backbone.c_str(), size,
              size, batch, keypoints, precision_name.c_str(), mode.c_str(), backend->description().c_str());
  if (predicting)
    std::printf("trainer: %.2f images/s (%.3f s/batch over %d batches, prediction)\n", batch * steps / seconds,
                seconds / steps, steps);
  else
    std::printf("trainer: %.2f images/s (%.3f s/step over %d steps, last loss %.6g)\n", batch * steps / seconds,
                seconds / steps, steps, loss);
  // On a shared machine wall time measures the scheduler; CPU time measures the
  // work (use OMP_WAIT_POLICY=passive so idle threads do not spin).
  std::printf("trainer: %.2f images per CPU-second (%.3f CPU s/step)\n", batch * steps / cpu_seconds,
              cpu_seconds / steps);
  // A ViT whose attention could have been fused but ran as batched products says why.
  if (const std::string note = backend->transformer_ops().fused_attention_note(); !note.empty())
    std::printf("note: fused attention: %s\n", note.c_str());
  if (cuda_graphs)
    std::printf("cuda graphs: %zu recorded step(s) replayed (one per staging slot; 0: every step ran op by op)\n",
                runner.recorded_steps());
  if (profiler) {
    profiler->set_enabled(true);
    const auto p0 = std::chrono::steady_clock::now();
    for (int i = 0; i < profile; ++i) {
      if (predicting) runner.predict(b, predictions);
      else runner.train_step(b, optimizer, sync, true, nullptr);
    }
    stream.synchronize();
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0).count();
    profiler->set_enabled(false);
    const compute::OpProfile p = profiler->take_profile();
    double total = 0;
    long calls = 0;
    for (std::size_t i = 0; i < compute::kOpCategories; ++i) total += p.ms[i], calls += p.calls[i];
    std::printf("profile over %d %s (per %s; %s time inside the ops, events around each op):\n", profile,
                predicting ? "batches" : "steps", predicting ? "batch" : "step",
                backend->kind() == compute::DeviceKind::cuda ? "device" : "host");
    for (std::size_t i = 0; i < compute::kOpCategories; ++i)
      if (p.calls[i] > 0)  // a ResNet has no ViT ops, a ViT no batch norm
        std::printf("  %-14s %9.3f ms %5.1f%%  %6.1f calls\n", compute::op_category_name(compute::OpCategory(i)),
                  p.ms[i] / profile, total > 0 ? 100 * p.ms[i] / total : 0.0, double(p.calls[i]) / profile);
    std::printf("  %-14s %9.3f ms         %6.1f calls\n", "all ops", total / profile, double(calls) / profile);
    if (p.copy_reads > 0)  // a ViT in bf16-mixed / 16-mixed (TRAINER_VIT_16BIT_COPIES)
      std::printf("  %6.1f ViT product calls per %s read a 16-bit activation copy instead of casting\n",
                  double(p.copy_reads) / profile, predicting ? "batch" : "step");
    std::printf("  %-14s %9.3f ms (wall; minus the ops: time between them, host work, waits)\n", "step",
                wall_ms / profile);
  }
  return 0;
}

}  // namespace trainer::app
