// Exports inputs and our outputs for the PyTorch parity check
// (tests/parity/ops_parity.py, run by tests/integration/parity_ops.sh).
// Hidden from normal runs: `unit_tests "[parity]"` with TRAINER_PARITY_DIR set.
// Each case is a folder with meta.txt (key = value lines, shapes as n,c,h,w) and
// one raw little-endian float32 file per tensor.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "compute/backend.hpp"
#include "compute/losses/heatmap_loss_registry.hpp"  // heatmap_losses
#include "test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::test;
namespace fs = std::filesystem;

namespace {

class CaseWriter {
 public:
  CaseWriter(const fs::path& root, const std::string& name) : dir_(root / name) {
    fs::create_directories(dir_);
  }
  ~CaseWriter() { std::ofstream(dir_ / "meta.txt") << meta_.str(); }
  void tensor(const std::string& name, const std::vector<float>& v, Shape4 s) {
    REQUIRE(v.size() == s.numel());
    std::ofstream f(dir_ / (name + ".f32"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
    meta_ << "shape." << name << " = " << s.n << "," << s.c << "," << s.h << "," << s.w << "\n";
  }
  template <class T>
  void param(const std::string& key, const T& value) {
    meta_ << key << " = " << value << "\n";
  }

 private:
  fs::path dir_;
  std::ostringstream meta_;
};

Shape4 flat(std::size_t n) { return {1, 1, 1, int(n)}; }

void export_conv(Backend& be, const fs::path& root, const std::string& name, Shape4 xs,
                 ConvGeometry g, unsigned seed) {
  Stream& s = be.default_stream();
  const Shape4 ys{xs.n, g.out_channels, g.conv_out(xs.h), g.conv_out(xs.w)};
  const Shape4 ws{g.out_channels, g.in_channels, g.kernel, g.kernel};
  auto x = random_vector(xs.numel(), seed), w = random_vector(ws.numel(), seed + 1, -0.3f, 0.3f);
  auto dy = random_vector(ys.numel(), seed + 2);
  std::vector<float> y(ys.numel()), dx(xs.numel()), dw(ws.numel());
  be.conv2d_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, s);
  be.conv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, s);
  be.conv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, s);
  CaseWriter c(root, name);
  c.param("op", "conv");
  c.param("stride", g.stride);
  c.param("pad", g.pad);
  c.tensor("x", x, xs);
  c.tensor("w", w, ws);
  c.tensor("dy", dy, ys);
  c.tensor("y", y, ys);
  c.tensor("dx", dx, xs);
  c.tensor("dw", dw, ws);
}

void export_deconv(Backend& be, const fs::path& root, const std::string& name, Shape4 xs,
                   ConvGeometry g, unsigned seed) {
  Stream& s = be.default_stream();
  const Shape4 ys{xs.n, g.out_channels, g.deconv_out(xs.h), g.deconv_out(xs.w)};
  const Shape4 ws{g.in_channels, g.out_channels, g.kernel, g.kernel};
  auto x = random_vector(xs.numel(), seed), w = random_vector(ws.numel(), seed + 1, -0.3f, 0.3f);
  auto b = random_vector(std::size_t(g.out_channels), seed + 2);
  auto dy = random_vector(ys.numel(), seed + 3);
  std::vector<float> y(ys.numel()), dx(xs.numel()), dw(ws.numel()), db(b.size());
  be.deconv2d_forward({x.data(), xs}, w.data(), b.data(), {y.data(), ys}, g, s);
  be.deconv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, s);
  be.deconv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), db.data(), g, s);
  CaseWriter c(root, name);
  c.param("op", "deconv");
  c.param("stride", g.stride);
  c.param("pad", g.pad);
  c.param("output_padding", g.output_padding);
  c.tensor("x", x, xs);
  c.tensor("w", w, ws);
  c.tensor("b", b, flat(b.size()));
  c.tensor("dy", dy, ys);
  c.tensor("y", y, ys);
  c.tensor("dx", dx, xs);
  c.tensor("dw", dw, ws);
  c.tensor("db", db, flat(db.size()));
}

void export_bn(Backend& be, const fs::path& root, const std::string& name, Shape4 xs, bool train,
               unsigned seed) {
  Stream& s = be.default_stream();
  const int C = xs.c;
  auto x = random_vector(xs.numel(), seed, -1.f, 3.f), dy = random_vector(xs.numel(), seed + 1);
  auto gamma = random_vector(C, seed + 2, 0.5f, 1.5f), beta = random_vector(C, seed + 3);
  auto rm0 = random_vector(C, seed + 4), rv0 = random_vector(C, seed + 5, 0.5f, 2.f);
  auto rm = rm0, rv = rv0;
  std::vector<float> mean(C), invstd(C), stats(batchnorm_moments_size(C)), reduce(2 * C), y(xs.numel()),
      dx(xs.numel()), dgamma(C), dbeta(C);
  const double count = double(xs.n) * xs.h * xs.w;
  if (train) {
    be.batchnorm_moments({x.data(), xs}, stats.data(), s);
    be.batchnorm_finalize(stats.data(), 1, C, 1e-5f, 0.1f, mean.data(), invstd.data(),
                          rm.data(), rv.data(), s);
  } else {
    be.batchnorm_inference_stats(rm.data(), rv.data(), C, 1e-5f, mean.data(), invstd.data(), s);
  }
  be.batchnorm_apply({x.data(), xs}, mean.data(), invstd.data(), gamma.data(), beta.data(),
                     {y.data(), xs}, s);
  be.batchnorm_backward_reduce({dy.data(), xs}, {x.data(), xs}, mean.data(), reduce.data(), s);
  be.batchnorm_param_grads(reduce.data(), invstd.data(), C, dgamma.data(), dbeta.data(), s);
  if (train) {
    be.batchnorm_backward_apply({dy.data(), xs}, {x.data(), xs}, mean.data(), invstd.data(),
                                gamma.data(), reduce.data(), count, {dx.data(), xs}, s);
  } else {  // eval: dx = dy * invstd * gamma, through apply with zero mean
    std::vector<float> zeros(C, 0.f);
    be.batchnorm_apply({dy.data(), xs}, zeros.data(), invstd.data(), gamma.data(), nullptr,
                       {dx.data(), xs}, s);
  }
  CaseWriter c(root, name);
  c.param("op", train ? "bn_train" : "bn_eval");
  c.tensor("x", x, xs);
  c.tensor("dy", dy, xs);
  c.tensor("gamma", gamma, flat(C));
  c.tensor("beta", beta, flat(C));
  c.tensor("running_mean_in", rm0, flat(C));
  c.tensor("running_var_in", rv0, flat(C));
  c.tensor("y", y, xs);
  c.tensor("dx", dx, xs);
  c.tensor("dgamma", dgamma, flat(C));
  c.tensor("dbeta", dbeta, flat(C));
  c.tensor("running_mean", rm, flat(C));
  c.tensor("running_var", rv, flat(C));
}

void export_maxpool(Backend& be, const fs::path& root, const std::string& name, Shape4 xs,
                    bool ties, unsigned seed) {
  Stream& s = be.default_stream();
  const PoolGeometry g{3, 2, 1};
  const Shape4 ys{xs.n, xs.c, g.out(xs.h), g.out(xs.w)};
  auto x = random_vector(xs.numel(), seed, -2.f, 2.f);
  if (ties)
    for (auto& v : x) v = std::round(v);  // many equal values: tie-breaking matters
  auto dy = random_vector(ys.numel(), seed + 1);
  std::vector<float> y(ys.numel()), dx(xs.numel());
  be.maxpool2d_forward({x.data(), xs}, {y.data(), ys}, g, s);
  be.maxpool2d_backward({x.data(), xs}, {dy.data(), ys}, {dx.data(), xs}, g, s);
  CaseWriter c(root, name);
  c.param("op", "maxpool");
  c.tensor("x", x, xs);
  c.tensor("dy", dy, ys);
  c.tensor("y", y, ys);
  c.tensor("dx", dx, xs);
}

}  // namespace

TEST_CASE("export op inputs and outputs for the PyTorch parity check", "[.parity]") {
  const char* dir = std::getenv("TRAINER_PARITY_DIR");
  if (!dir) FAIL("set TRAINER_PARITY_DIR to the folder to write the cases to");
  const fs::path root(dir);
  auto be = make_cpu_backend(2);
  Stream& s = be->default_stream();

  export_conv(*be, root, "conv_stem_7x7s2", {2, 3, 32, 30}, {3, 16, 7, 2, 3, 0}, 1);
  export_conv(*be, root, "conv_3x3s1", {2, 16, 12, 12}, {16, 16, 3, 1, 1, 0}, 10);
  export_conv(*be, root, "conv_3x3s2", {2, 16, 13, 12}, {16, 32, 3, 2, 1, 0}, 20);
  export_conv(*be, root, "conv_1x1s2", {2, 16, 12, 12}, {16, 32, 1, 2, 0, 0}, 30);
  export_conv(*be, root, "conv_1x1s1", {2, 32, 6, 6}, {32, 8, 1, 1, 0, 0}, 40);
  export_deconv(*be, root, "deconv_head", {2, 8, 6, 5}, {8, 5, 3, 2, 1, 1}, 50);
  export_deconv(*be, root, "deconv_s1", {2, 4, 5, 5}, {4, 3, 3, 1, 1, 0}, 60);
  export_bn(*be, root, "bn_train", {4, 6, 7, 5}, true, 70);
  export_bn(*be, root, "bn_eval", {4, 6, 7, 5}, false, 80);
  export_maxpool(*be, root, "maxpool", {2, 4, 13, 12}, false, 90);
  export_maxpool(*be, root, "maxpool_ties", {2, 4, 12, 12}, true, 95);

  {  // relu
    const Shape4 xs{2, 3, 5, 7};
    auto x = random_vector(xs.numel(), 100), dy = random_vector(xs.numel(), 101);
    std::vector<float> y(xs.numel()), dx(xs.numel());
    be->relu_forward(x.data(), y.data(), x.size(), s);
    be->relu_backward(y.data(), dy.data(), dx.data(), x.size(), s);
    CaseWriter c(root, "relu");
    c.param("op", "relu");
    c.tensor("x", x, xs);
    c.tensor("dy", dy, xs);
    c.tensor("y", y, xs);
    c.tensor("dx", dx, xs);
  }
  {  // pixel shuffle
    const Shape4 xs{2, 16, 3, 4}, ys{2, 4, 6, 8};
    auto x = random_vector(xs.numel(), 110), dy = random_vector(ys.numel(), 111);
    std::vector<float> y(ys.numel()), dx(xs.numel());
    be->pixel_shuffle_forward({x.data(), xs}, {y.data(), ys}, 2, s);
    be->pixel_shuffle_backward({dy.data(), ys}, {dx.data(), xs}, 2, s);
    CaseWriter c(root, "pixel_shuffle");
    c.param("op", "pixel_shuffle");
    c.param("factor", 2);
    c.tensor("x", x, xs);
    c.tensor("dy", dy, ys);
    c.tensor("y", y, ys);
    c.tensor("dx", dx, xs);
  }
  for (float temp : {1.f, 3.f}) {  // spatial softmax
    const Shape4 xs{2, 5, 8, 6};
    auto x = random_vector(xs.numel(), 120, -3.f, 3.f), dy = random_vector(xs.numel(), 121);
    std::vector<float> y(xs.numel()), dx(xs.numel());
    be->spatial_softmax_forward({x.data(), xs}, temp, {y.data(), xs}, s);
    be->spatial_softmax_backward({y.data(), xs}, {dy.data(), xs}, temp, {dx.data(), xs}, s);
    CaseWriter c(root, "spatial_softmax_t" + std::to_string(int(temp)));
    c.param("op", "spatial_softmax");
    c.param("temperature", temp);
    c.tensor("x", x, xs);
    c.tensor("dy", dy, xs);
    c.tensor("y", y, xs);
    c.tensor("dx", dx, xs);
  }
  {  // heatmap targets and the three losses on them
    const int N = 3, K = 4, H = 16, W = 12;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto kp = random_vector(std::size_t(N) * K * 2, 130, -1.f, 12.f);
    kp[2] = nan;           // unlabeled
    kp[9] = 17.5f;         // y > H + 1: out of range
    kp[12] = -1.f;         // x = -1: still counted
    const Shape4 ts{N, K, H, W};
    std::vector<float> t(ts.numel()), mask(std::size_t(N) * K);
    be->heatmap_targets(kp.data(), {t.data(), ts}, 1.25f, mask.data(), s);
    CaseWriter c(root, "heatmap_targets");
    c.param("op", "heatmap_targets");
    c.param("sigma", 1.25f);
    c.tensor("keypoints", kp, {N, K, 1, 2});
    c.tensor("targets", t, ts);
    c.tensor("mask", mask, flat(mask.size()));

    auto raw = random_vector(ts.numel(), 131, -3.f, 3.f);
    std::vector<float> pred(ts.numel());
    be->spatial_softmax_forward({raw.data(), ts}, 1.f, {pred.data(), ts}, s);
    for (const HeatmapLoss* type : heatmap_losses()) {  // ops_parity.py needs a reference for each
      float loss = 0;
      std::vector<float> dpred(ts.numel());
      be->heatmap_loss({pred.data(), ts}, {t.data(), ts}, mask.data(), *type, &loss, dpred.data(),
                       1.f, s);
      CaseWriter lc(root, std::string("loss_") + type->name());
      lc.param("op", "heatmap_loss");
      lc.param("type", type->name());
      lc.tensor("pred", pred, ts);
      lc.tensor("target", t, ts);
      lc.tensor("loss", {loss}, flat(1));
      lc.tensor("dpred", dpred, ts);
    }
  }
  for (int d : {1, 2, 3}) {  // soft-argmax on peaked, softmaxed heatmaps
    const int N = 2, K = 3, H = 12, W = 10;
    const Shape4 hs{N, K, H, W};
    auto raw = random_vector(hs.numel(), 140 + d, 0.f, 1.f);
    for (int k = 0; k < N * K; ++k) raw[std::size_t(k) * H * W + (2 + k) * W + (7 - k)] += 8.f;
    std::vector<float> hm(hs.numel()), coords(std::size_t(N) * K * 2), conf(std::size_t(N) * K);
    be->spatial_softmax_forward({raw.data(), hs}, 1.f, {hm.data(), hs}, s);
    be->soft_argmax({hm.data(), hs}, d, 1000.f, coords.data(), conf.data(), s);
    CaseWriter c(root, "soft_argmax_d" + std::to_string(d));
    c.param("op", "soft_argmax");
    c.param("downsample_factor", d);
    c.param("temperature", 1000.f);
    c.tensor("heatmaps", hm, hs);
    c.tensor("coords", coords, {N, K, 1, 2});
    c.tensor("confidence", conf, {N, K, 1, 1});
  }
  for (int d : {0, 2}) {  // soft-argmax backward: the gradient of dcoords . coords
    const int N = 2, K = 3, H = 12, W = 10;
    const Shape4 hs{N, K, H, W};
    auto raw = random_vector(hs.numel(), 145 + d, 0.f, 1.f);
    for (int k = 0; k < N * K; ++k) raw[std::size_t(k) * H * W + (3 + k) * W + (6 - k)] += 6.f;
    std::vector<float> hm(hs.numel()), dhm(hs.numel());
    be->spatial_softmax_forward({raw.data(), hs}, 1.f, {hm.data(), hs}, s);
    const auto dcoords = random_vector(std::size_t(N) * K * 2, 147 + d);
    be->soft_argmax_backward({hm.data(), hs}, d, 1000.f, dcoords.data(), {dhm.data(), hs}, s);
    CaseWriter c(root, "soft_argmax_backward_d" + std::to_string(d));
    c.param("op", "soft_argmax_backward");
    c.param("downsample_factor", d);
    c.param("temperature", 1000.f);
    c.tensor("heatmaps", hm, hs);
    c.tensor("dcoords", dcoords, {N, K, 1, 2});
    c.tensor("dheatmaps", dhm, hs);
  }
  for (bool decoupled : {false, true}) {  // three Adam / AdamW steps
    const std::size_t n = 4096;
    auto p0 = random_vector(n, 150);
    auto p = p0;
    std::vector<float> m(n, 0.f), v(n, 0.f), grads;
    AdamParams a;
    a.lr = 3e-3f;
    a.weight_decay = 0.01f;
    a.decoupled_weight_decay = decoupled;
    for (long step = 1; step <= 3; ++step) {
      auto g = random_vector(n, unsigned(160 + step));
      grads.insert(grads.end(), g.begin(), g.end());
      a.step = step;
      be->adam_update(p.data(), g.data(), m.data(), v.data(), n, a, s);
    }
    CaseWriter c(root, decoupled ? "adamw" : "adam");
    c.param("op", "adam");
    c.param("decoupled", decoupled ? 1 : 0);
    c.param("lr", a.lr);
    c.param("weight_decay", a.weight_decay);
    c.param("steps", 3);
    c.tensor("p0", p0, flat(n));
    c.tensor("grads", grads, {3, 1, 1, int(n)});
    c.tensor("p", p, flat(n));
    c.tensor("m", m, flat(n));
    c.tensor("v", v, flat(n));
  }
  SUCCEED("cases written to " << root);
}
