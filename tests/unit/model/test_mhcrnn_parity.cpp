// The context head's multi-frame branch (UpsamplingCRNN) against PyTorch: names
// and shapes, forward logits, input and parameter gradients within rel 1e-4
// (tests/parity/mhcrnn_parity.py re-implements lightning-pose's module, float64).
// Skips visibly when /usr/bin/python3 has no torch.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>  // WIFEXITED
#include <unistd.h>    // getpid

#include "model/upsampling_crnn.hpp"
#include "model_test_util.hpp"

using namespace trainer;

namespace {
void write_floats(const std::filesystem::path& p, const std::vector<float>& v) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
}
std::vector<float> read_floats(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  REQUIRE(in.good());
  const auto bytes = std::size_t(in.tellg());
  std::vector<float> v(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(bytes));
  return v;
}
double rel_error(const std::vector<float>& x, const std::vector<float>& exact) {
  REQUIRE(x.size() == exact.size());
  double d = 0, n = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    d += (double(x[i]) - exact[i]) * (double(x[i]) - exact[i]);
    n += double(exact[i]) * exact[i];
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}
std::vector<float> download(compute::Backend& b, const float* p, std::size_t n) {
  std::vector<float> v(n);
  b.download(v.data(), p, n, b.default_stream());
  b.default_stream().synchronize();
  return v;
}
}  // namespace

TEST_CASE("UpsamplingCRNN matches PyTorch (names, forward, gradients)", "[model][mhcrnn][parity]") {
  // upsampling_factor 2 (stride-32 backbones: the ResNets) and 1 (stride 16: the ViTs).
  const int factor = GENERATE(2, 1);
  INFO("upsampling_factor " << factor);
  const int K = 3, C = 16, B = 2, F = 5, h = 2, w = 3;
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  model::ParameterStore store(*b);
  model::UpsamplingCRNN crnn(store, "", C, K, factor);
  store.allocate();
  store.initialize(11, s);
  // Non-zero biases so that every bias path is exercised.
  for (std::size_t i = 0; i < store.parameters().size(); ++i)
    if (store.parameters()[i].shape.size() == 1)
      store.upload_param(i, model_test::random_vector(store.parameters()[i].count, 100 + std::uint32_t(i), 0.3f), s);

  const compute::Shape4 fs{B * F, C, h, w};
  auto features = model_test::random_vector(fs.numel(), 5);
  compute::DeviceBuffer x(*b, fs.numel());
  b->upload(x.data(), features.data(), features.size(), s);
  model::Context ctx{*b, s, true, nullptr, nullptr};
  auto logits = crnn.forward(ctx, {x.data(), fs}, F);
  REQUIRE(logits.shape == compute::Shape4{B, K, 4 * factor * h, 4 * factor * w});
  const auto our_logits = download(*b, logits.data, logits.shape.numel());
  auto dl = model_test::random_vector(logits.shape.numel(), 6);
  compute::DeviceBuffer dlogits(*b, dl.size());
  b->upload(dlogits.data(), dl.data(), dl.size(), s);
  auto dfeat = crnn.backward(ctx, {dlogits.data(), logits.shape}, true);
  REQUIRE(dfeat.shape == fs);
  const auto our_dfeat = download(*b, dfeat.data, fs.numel());

  namespace fsys = std::filesystem;
  const fsys::path dir = fsys::temp_directory_path() / ("mhcrnn_parity_" + std::to_string(::getpid()));
  fsys::create_directories(dir);
  std::ofstream(dir / "meta.txt") << K << ' ' << C << ' ' << B << ' ' << F << ' ' << h << ' ' << w << ' ' << factor
                                  << '\n';
  for (std::size_t i = 0; i < store.parameters().size(); ++i)
    write_floats(dir / ("param_" + store.parameters()[i].name + ".bin"), store.download_param(i, s));
  write_floats(dir / "features.bin", features);
  write_floats(dir / "dlogits.bin", dl);
  const std::string cmd = "/usr/bin/python3 " TRAINER_SOURCE_DIR "/tests/parity/mhcrnn_parity.py " + dir.string();
  const int status = std::system(cmd.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 77 || code == 127) {
    WARN("SKIPPED: /usr/bin/python3 with torch is not available; UpsamplingCRNN parity not checked");
    fsys::remove_all(dir);
    return;
  }
  REQUIRE(code == 0);

  // Names and shapes: exactly lightning-pose's parameters, in its order.
  std::ifstream names(dir / "names.txt");
  std::string line;
  std::size_t i = 0;
  while (std::getline(names, line)) {
    std::istringstream in(line);
    std::string name;
    in >> name;
    std::vector<int> shape;
    for (int d; in >> d;) shape.push_back(d);
    REQUIRE(i < store.parameters().size());
    CHECK(store.parameters()[i].name == name);
    CHECK(store.parameters()[i].shape == shape);
    ++i;
  }
  CHECK(i == store.parameters().size());

  CHECK(rel_error(our_logits, read_floats(dir / "logits.bin")) < 1e-4);
  CHECK(rel_error(our_dfeat, read_floats(dir / "dfeatures.bin")) < 1e-4);
  for (std::size_t p = 0; p < store.parameters().size(); ++p) {
    const auto& e = store.parameters()[p];
    INFO(e.name);
    CHECK(rel_error(download(*b, store.grad(p), e.count), read_floats(dir / ("grad_" + e.name + ".bin"))) < 1e-4);
  }
  fsys::remove_all(dir);
}
