// `trainer bench plans`: builds cuDNN graph-API plans (model.conv_algorithms graph)
// for every convolution of a model, for the GPU that a file of cuDNN's serialized
// device properties describes, on a machine without that GPU (cuDNN >= 9.11's
// deviceless building). It answers "does each convolution of this model, at this
// size, batch and precision, have a cuDNN engine on that GPU, and how much workspace
// does it take" from a login node or CI. The convolutions come from the model
// itself: one forward of a one-image batch on the CPU through a recording wrapper,
// each problem then taken at --batch. A ViT's attention is built too, as cuDNN's fused
// attention (forward and backward at --batch; 16-bit precisions only, as the GPU runs
// it); its engines are runtime-compiled, so without a GPU the check ends at cuDNN
// accepting the graph, and needs a loadable libcuda (attention_graphs.hpp).
#include <cstdio>    // std::printf
#include <iostream>  // std::cout
#include <random>    // std::mt19937 (the one input image)
#include <set>       // std::set of distinct problems
#include <sstream>   // std::ostringstream
#include <string>    // std::string
#include <tuple>     // std::tie
#include <vector>    // std::vector

#include <boost/program_options.hpp>  // options_description

#include "app/commands.hpp"               // bench_plans, Args
#include "compute/backend.hpp"            // compute::make_cpu_backend
#include "compute/host_buffer.hpp"        // compute::HostBuffer
#include "compute/losses/heatmap_mse.hpp"  // compute::heatmap_mse_loss
#include "compute/precision.hpp"          // compute::parse_precision, parse_float32_matmul_precision
#include "compute/profiling_backend.hpp"  // compute::ProfilingBackend, ConvCall
#include "data/batch.hpp"                 // data::Batch
#include "model/backbone_registry.hpp"    // model::backbone_names
#include "model/heatmap_model.hpp"        // model::HeatmapModel
#include "train/step.hpp"                 // train::StepRunner
#include "util/error.hpp"                 // UserError
#include "util/input_file.hpp"            // read_input_file
#include "util/name_list.hpp"             // join_names
#ifdef TRAINER_WITH_CUDA
#include "compute/cuda/attention_graphs.hpp"  // build_attention_graph_deviceless
#include "compute/cuda/conv_graphs.hpp"       // build_conv_graph_deviceless
#endif

namespace po = boost::program_options;

namespace trainer::app {
namespace {

// The model's forward convolutions and attention, recorded on the CPU with a one-image
// batch (called only by the GPU build).
struct ModelCalls {
  std::vector<compute::ConvCall> convolutions;
  std::vector<compute::AttentionShape> attention;
};
[[maybe_unused]] ModelCalls model_calls(const std::string& backbone, int size, int keypoints, int downsample) {
  auto cpu = compute::make_cpu_backend(0, compute::Precision::fp32);
  compute::ProfilingBackend recorder(*cpu);
  auto& stream = recorder.default_stream();
  model::HeatmapModel net(recorder, model::ModelSpec{backbone, keypoints, downsample, {size, size}});
  net.initialize(0, stream);
  train::StepRunner runner(recorder, stream, net, compute::heatmap_mse_loss());
  compute::HostBuffer<float> image(*cpu, std::size_t(3) * size * size);
  std::mt19937 gen(1);
  std::normal_distribution<float> pixel(0.f, 1.f);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = pixel(gen);
  data::Batch b;
  b.size = 1;
  b.height = b.width = size;
  b.num_keypoints = keypoints;
  b.images = image.data();
  b.keypoints.assign(std::size_t(keypoints) * 2, float(size) / 2);
  b.is_real.assign(1, 1);
  b.scale_x.assign(1, 1.f);
  b.scale_y.assign(1, 1.f);
  b.frame_index.push_back(0);
  train::Predictions predictions;
  recorder.set_enabled(true);
  runner.predict(b, predictions);
  recorder.set_enabled(false);
  return {recorder.conv_calls(), recorder.attention_calls()};
}

#ifdef TRAINER_WITH_CUDA
// Builds each distinct attention shape's fused forward and backward at `batch`;
// counts them into built / failed (and those built only as far as a driver allows
// into `accepted` as well) and prints a line each.
void build_attention_graphs(const std::string& json, std::vector<compute::AttentionShape> shapes, int batch,
                            compute::Precision precision, int& built, int& failed, int& accepted) {
  std::set<std::tuple<int, int, int, int>> seen;
  for (compute::AttentionShape a : shapes) {
    a.batch *= batch;  // recorded for one image: its windows (SAM, SAM2) or 1
    if (!seen.insert({a.queries(), a.tokens, a.heads, a.head_dim}).second) continue;
    if (a.queries() != a.tokens) {  // SAM2's pooled queries
      std::printf("  --   attention of %d queries over %d tokens, %d heads of %d: pooled queries are not fused "
                  "(the batched attention runs it)\n",
                  a.queries(), a.tokens, a.heads, a.head_dim);
      continue;
    }
    if (!compute::cuda::fused_attention_takes(a, precision)) {
      std::printf("  --   attention of %d tokens, %d heads of %d: not fused in precision %s (the batched-matmul "
                  "attention runs it)\n",
                  a.tokens, a.heads, a.head_dim, compute::precision_name(precision));
      continue;
    }
    for (auto pass : {compute::cuda::AttentionPass::forward, compute::cuda::AttentionPass::backward}) {
      const compute::cuda::DevicelessBuild r =
          compute::cuda::build_attention_graph_deviceless(json, a, precision, pass);
      const bool ok = r.built || r.needs_driver;
      (ok ? built : failed) += 1;
      if (!r.built && r.needs_driver) ++accepted;
      std::printf("  %-4s attention %-8s batch %d, %d tokens, %d heads of %d: %d candidates, %s", ok ? "ok" : "NONE",
                  compute::cuda::attention_pass_name(pass), a.batch, a.tokens, a.heads, a.head_dim, r.candidates,
                  r.engine.c_str());
      if (r.built)
        std::printf(", workspace %.1f MiB\n", double(r.workspace) / (1024.0 * 1024.0));
      else if (r.needs_driver)
        std::printf(" (accepted; its kernel loads through the driver at a GPU)\n");
      else
        std::printf("\n");
    }
  }
}
#endif

}  // namespace

int bench_plans(const Args& args) {
  std::string backbone = "resnet50", precision_name = "bf16-mixed", fp32_precision = "highest", properties;
  int size = 256, batch = 64, keypoints = 17, downsample = 2, operand_alignment = 16;
  double workspace_mib = 1024;
  std::string backbones;
  for (const auto& name : model::backbone_names()) backbones += (backbones.empty() ? "" : " | ") + name;
  po::options_description desc("trainer bench plans --device-properties FILE [options]");
  desc.add_options()("help,h", "show this help")
      ("device-properties", po::value(&properties),
       "cuDNN's serialized device properties of the target GPU (JSON; the device check saves "
       "logs/cudnn-device-properties.json, docs/GPU.md)")
      ("backbone", po::value(&backbone)->default_value(backbone), backbones.c_str())
      ("size", po::value(&size)->default_value(size), "square input size in pixels (multiple of 32)")
      ("batch", po::value(&batch)->default_value(batch), "images per step")
      ("precision", po::value(&precision_name)->default_value(precision_name),
       (join_names(compute::precision_names(), " | ") + ": the convolutions' precision (and the attention's: fused in the 16-bit ones)").c_str())
      ("float32-matmul-precision", po::value(&fp32_precision)->default_value(fp32_precision),
       "highest | high: with --precision 32, high allows TF32 engines")
      ("keypoints", po::value(&keypoints)->default_value(keypoints), "keypoints (heatmap channels)")
      ("downsample", po::value(&downsample)->default_value(downsample), "downsample factor d (heatmap = size / 2^d)")
      ("workspace-mib", po::value(&workspace_mib)->default_value(workspace_mib),
       "largest workspace one convolution may use (the GPU backend's limit is 1024)")
      ("operand-alignment", po::value(&operand_alignment)->default_value(operand_alignment),
       "16 | 8 | 4 | 2: the byte alignment the convolutions' operands declare (under 16: the plans the GPU "
       "backend builds for operands off 16-byte alignment, e.g. a filter after an odd-length bias)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UserError(std::string("bench plans: ") + e.what(), "see `trainer bench plans --help`");
  }
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  if (properties.empty())
    throw UserError("bench plans: --device-properties is required",
                    "the device check saves the target GPU's as logs/cudnn-device-properties.json");
  if (size < 32 || size % 32 != 0) throw UserError("bench plans: --size must be a positive multiple of 32");
  if (batch < 1 || keypoints < 1) throw UserError("bench plans: --batch and --keypoints must be >= 1");
  if (operand_alignment != 16 && operand_alignment != 8 && operand_alignment != 4 && operand_alignment != 2)
    throw UserError("bench plans: --operand-alignment must be 16, 8, 4 or 2");
  if (!(workspace_mib >= 0 && workspace_mib <= 1 << 20))
    throw UserError("bench plans: --workspace-mib must be between 0 and 1048576");
  const compute::Precision precision = compute::parse_precision(precision_name);
  if (operand_alignment < 4 && precision == compute::Precision::fp32)
    throw UserError("bench plans: --operand-alignment 2 is below an fp32 element's 4 bytes");
  const bool allow_tf32 =
      compute::parse_float32_matmul_precision(fp32_precision) == compute::Float32MatmulPrecision::high;
#ifndef TRAINER_WITH_CUDA
  (void)precision, (void)allow_tf32, (void)downsample;
  throw UserError("bench plans needs the GPU build (cuDNN's graph API)", "build with nvcc present (docs/BUILD.md)");
#else
  if (!compute::cuda::cudnn_graph_api_built())
    throw UserError("bench plans: this trainer was built without cudnn-frontend's headers",
                    "run scripts/fetch_cudnn_frontend.sh and rebuild");
  // cuDNN's serialization is a few KiB; the bound keeps /dev/zero from running away.
  const std::string json = read_input_file(properties, "bench plans: cannot read --device-properties " + properties,
                                           1 << 20, "the device check saves it as logs/cudnn-device-properties.json");
  const ModelCalls model = model_calls(backbone, size, keypoints, downsample);
  const std::vector<compute::ConvCall>& calls = model.convolutions;

  // Distinct problems at --batch, in the order the model first runs them.
  std::vector<compute::cuda::ConvProblem> problems;
  std::set<compute::cuda::ConvProblem> seen;
  for (compute::ConvCall c : calls) {
    c.x.n = c.y.n = batch;
    const auto p = c.transposed ? compute::cuda::deconv2d_problem(c.x, c.y, c.geometry, precision)
                                : compute::cuda::conv2d_problem(c.x, c.y, c.geometry, precision);
    if (seen.insert(p).second) problems.push_back(p);
  }
  const compute::cuda::ConvGraphSettings settings{allow_tf32, false,
                                                  static_cast<std::size_t>(workspace_mib * 1024 * 1024)};
  const compute::cuda::ConvAlignment alignment{operand_alignment, operand_alignment, operand_alignment};
  std::printf("bench plans: %s %dx%d batch %d, precision %s: %zu convolutions, %zu distinct problems, 3 passes each",
              backbone.c_str(), size, size, batch, precision_name.c_str(), calls.size(), problems.size());
  if (!alignment.full()) std::printf(", operands aligned to %d bytes", operand_alignment);
  std::printf("\n");
  if (!model.attention.empty() && precision != compute::Precision::fp32)
    std::printf("bench plans: %zu attention layers, as cuDNN's fused attention (forward and backward)\n",
                model.attention.size());
  int built = 0, failed = 0;
  for (const auto& p : problems) {
    for (auto pass : {compute::cuda::ConvPass::forward, compute::cuda::ConvPass::backward_data,
                      compute::cuda::ConvPass::backward_filter}) {
      const compute::cuda::DevicelessBuild r =
          compute::cuda::build_conv_graph_deviceless(json, p, pass, settings, alignment);
      (r.built ? built : failed) += 1;
      std::printf("  %-4s %-15s x [%d,%d,%d,%d] w [%d,%d,%d,%d] stride %d pad %d: %d candidates, %s%s",
                  r.built ? "ok" : "NONE", compute::cuda::conv_pass_name(pass), p.n, p.c, p.h, p.w, p.k, p.c, p.r,
                  p.r, p.stride, p.pad, r.candidates, r.engine.c_str(), r.built ? "" : "\n");
      if (r.built) std::printf(", workspace %.1f MiB\n", double(r.workspace) / (1024.0 * 1024.0));
    }
  }
  int accepted = 0;
  build_attention_graphs(json, model.attention, batch, precision, built, failed, accepted);
  std::printf("bench plans: %d of %d graphs built for the device in %s", built, built + failed, properties.c_str());
  if (accepted > 0) std::printf(" (%d of them accepted by cuDNN, their kernels loaded only at a GPU)", accepted);
  std::printf("\n");
  return failed == 0 ? 0 : 1;
#endif
}

}  // namespace trainer::app
