// The unsupervised keypoint losses (temporal_loss, pca_loss) on CUDA against their
// CPU twins on random inputs: the loss, and the gradient added into a non-zero
// dkeypoints. Without a GPU the binary skips visibly (tests/gpu/main.cpp).
#include <catch2/catch.hpp>

#include <vector>

#include "compute/pca_loss_table_buffers.hpp"  // PcaLossTableBuffers
#include "gpu_test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

TEST_CASE("cuda temporal_loss matches the CPU twin", "[gpu]") {
  Twins t;
  struct Case { int frames, keypoints; bool confidence; };
  const Case cases[] = {{16, 17, true}, {100, 40, false}, {2, 1, true}, {1, 3, false}};
  unsigned seed = 200;
  for (const Case& c : cases) {
    INFO("frames " << c.frames << ", keypoints " << c.keypoints);
    const std::size_t n = std::size_t(c.frames) * c.keypoints * 2;
    auto kp = random_vector(n, seed++, 0.f, 30.f);
    auto conf = random_vector(n / 2, seed++, 0.f, 1.f);
    auto eps = random_vector(std::size_t(c.keypoints), seed++, 0.f, 10.f);
    auto base = random_vector(n, seed++);
    auto gkp = t.device(kp), gconf = t.device(conf), geps = t.device(eps), gd = t.device(base);
    auto gloss = t.zeros(1);
    t.gpu->temporal_loss(gkp.data(), c.confidence ? gconf.data() : nullptr, c.frames, c.keypoints,
                         geps.data(), 0.3f, 1.5f, 0.75f, gloss.data(), gd.data(), 0.25f, t.gs());
    std::vector<float> d = base;
    float loss = 0;
    t.cpu->temporal_loss(kp.data(), c.confidence ? conf.data() : nullptr, c.frames, c.keypoints,
                         eps.data(), 0.3f, 1.5f, 0.75f, &loss, d.data(), 0.25f, t.cs());
    CHECK(rel_error(t.host(gloss), {loss}) < kTolerance);
    CHECK(rel_error(t.host(gd), d) < kTolerance);
    // Loss only (null dkeypoints).
    t.gpu->temporal_loss(gkp.data(), nullptr, c.frames, c.keypoints, geps.data(), 0.f, 1.f, 1.f,
                         gloss.data(), nullptr, 1.f, t.gs());
    t.cpu->temporal_loss(kp.data(), nullptr, c.frames, c.keypoints, eps.data(), 0.f, 1.f, 1.f, &loss,
                         nullptr, 1.f, t.cs());
    CHECK(rel_error(t.host(gloss), {loss}) < kTolerance);
  }
}

TEST_CASE("cuda pca_loss matches the CPU twin (singleview and multiview tables, centring)", "[gpu]") {
  Twins t;
  struct Case {
    const char* name;
    int keypoints, rows, dims, components, frames;
    PcaCentering centering = PcaCentering::none;
  };
  const Case cases[] = {{"singleview 14 of 17", 17, 1, 28, 9, 16},
                        {"multiview 7 x 2 views", 17, 7, 4, 3, 16},
                        {"multiview 3 views, big batch", 12, 4, 6, 3, 100},
                        {"singleview, no component", 3, 1, 6, 0, 5},
                        {"singleview 14 of 17, mean centring", 17, 1, 28, 9, 16, PcaCentering::mean},
                        {"singleview 14 of 17, median centring", 17, 1, 28, 9, 16, PcaCentering::median},
                        {"singleview 5 of 9, median centring", 9, 1, 10, 3, 40, PcaCentering::median}};
  unsigned seed = 300;
  for (const Case& c : cases) {
    INFO(c.name);
    // A gather table over random coordinates (pairs stay (x, y) of one keypoint;
    // repeats allowed: the gradient of a repeated coordinate collects every use).
    std::vector<int> gather;
    auto picks = random_vector(std::size_t(c.rows) * c.dims / 2, seed++, 0.f, float(c.keypoints) - 0.01f);
    for (float p : picks) {
      gather.push_back(2 * int(p));
      gather.push_back(2 * int(p) + 1);
    }
    auto mean = random_vector(std::size_t(c.dims), seed++, 5.f, 25.f);
    // Rows need not be orthonormal for the CPU-twin comparison.
    auto comps = random_vector(std::size_t(c.components) * c.dims, seed++, -0.5f, 0.5f);
    PcaLossTableBuffers cpu_tables(*t.cpu, mean, comps, gather, c.rows, c.keypoints, 2.f, c.centering, t.cs());
    PcaLossTableBuffers gpu_tables(*t.gpu, mean, comps, gather, c.rows, c.keypoints, 2.f, c.centering, t.gs());
    const std::size_t n = std::size_t(c.frames) * c.keypoints * 2;
    auto kp = random_vector(n, seed++, 0.f, 30.f);
    auto base = random_vector(n, seed++);
    auto gkp = t.device(kp), gd = t.device(base), gloss = t.zeros(1);
    t.gpu->pca_loss(gkp.data(), c.frames, c.keypoints, gpu_tables.tables(), 0.9f, 1.2f, gloss.data(),
                    gd.data(), 3.f, t.gs());
    std::vector<float> d = base;
    float loss = 0;
    t.cpu->pca_loss(kp.data(), c.frames, c.keypoints, cpu_tables.tables(), 0.9f, 1.2f, &loss,
                    d.data(), 3.f, t.cs());
    CHECK(loss > 0.f);
    CHECK(rel_error(t.host(gloss), {loss}) < kTolerance);
    CHECK(rel_error(t.host(gd), d) < kTolerance);
  }
}

// Backend::pca_loss with null dkeypoints computes the loss only (the logged value
// of a term whose gradient is not wanted, e.g. validation): the kernel then skips
// the gradient half of pca_frame_kernel. Same loss as the CPU twin, and as the
// GPU's own call with a gradient.
TEST_CASE("cuda pca_loss without keypoint gradients (null dkeypoints) matches the CPU twin", "[gpu]") {
  Twins t;
  struct Case {
    const char* name;
    int keypoints, rows, dims, components, frames;
    PcaCentering centering;
  };
  const Case cases[] = {{"singleview 14 of 17", 17, 1, 28, 9, 16, PcaCentering::none},
                        {"singleview 14 of 17, median centring", 17, 1, 28, 9, 16, PcaCentering::median},
                        {"multiview 3 views, big batch", 12, 4, 6, 3, 100, PcaCentering::none}};
  unsigned seed = 400;
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<int> gather;
    auto picks = random_vector(std::size_t(c.rows) * c.dims / 2, seed++, 0.f, float(c.keypoints) - 0.01f);
    for (float p : picks) {
      gather.push_back(2 * int(p));
      gather.push_back(2 * int(p) + 1);
    }
    auto mean = random_vector(std::size_t(c.dims), seed++, 5.f, 25.f);
    auto comps = random_vector(std::size_t(c.components) * c.dims, seed++, -0.5f, 0.5f);
    PcaLossTableBuffers cpu_tables(*t.cpu, mean, comps, gather, c.rows, c.keypoints, 2.f, c.centering, t.cs());
    PcaLossTableBuffers gpu_tables(*t.gpu, mean, comps, gather, c.rows, c.keypoints, 2.f, c.centering, t.gs());
    const std::size_t n = std::size_t(c.frames) * c.keypoints * 2;
    auto kp = random_vector(n, seed++, 0.f, 30.f);
    auto gkp = t.device(kp), gloss = t.zeros(1), gloss_with = t.zeros(1), gd = t.zeros(n);
    t.gpu->pca_loss(gkp.data(), c.frames, c.keypoints, gpu_tables.tables(), 0.9f, 1.2f, gloss.data(), nullptr, 3.f,
                    t.gs());
    t.gpu->pca_loss(gkp.data(), c.frames, c.keypoints, gpu_tables.tables(), 0.9f, 1.2f, gloss_with.data(), gd.data(),
                    3.f, t.gs());
    float loss = 0;
    t.cpu->pca_loss(kp.data(), c.frames, c.keypoints, cpu_tables.tables(), 0.9f, 1.2f, &loss, nullptr, 3.f, t.cs());
    CHECK(loss > 0.f);
    CHECK(rel_error(t.host(gloss), {loss}) < kTolerance);
    CHECK(t.host(gloss) == t.host(gloss_with));  // the loss does not depend on whether the gradient is wanted
  }
}
