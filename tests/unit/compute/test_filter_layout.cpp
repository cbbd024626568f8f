// compute::krsc_source_index (the one-pass 16-bit filter copies of
// Backend::cache_filters16) against the layout cast_to_16 writes for a filter in
// NHWC order, its inverse krsc_index_of (the weight gradients' cast back), and the
// ResNet's list of filters.
#include <catch2/catch.hpp>

#include <algorithm>  // std::sort
#include <string>     // std::string
#include <vector>     // std::vector

#include "compute/backend.hpp"
#include "compute/filter_layout.hpp"
#include "model/parameter_store.hpp"
#include "model/resnet.hpp"

using namespace trainer;

TEST_CASE("krsc_source_index reads each KRSC value from its OIHW place", "[compute][storage16]") {
  struct Shape {
    int k, c, r;
  };
  for (const Shape f : {Shape{4, 3, 3}, Shape{2, 8, 1}, Shape{3, 5, 7}, Shape{64, 3, 7}}) {
    INFO("filter [" << f.k << ", " << f.c << ", " << f.r << ", " << f.r << "]");
    const int area = f.r * f.r, total = f.k * f.c * area;
    std::vector<int> sources;
    int j = 0;
    // The copy's order: [k][r][s][c], c fastest (cast_to_16's NHWC for [n=k, c, h=r, w=s]).
    for (int k = 0; k < f.k; ++k)
      for (int r = 0; r < f.r; ++r)
        for (int s = 0; s < f.r; ++s)
          for (int c = 0; c < f.c; ++c, ++j) {
            const int oihw = ((k * f.c + c) * f.r + r) * f.r + s;
            CHECK(compute::krsc_source_index(j, f.c, area) == oihw);
            sources.push_back(compute::krsc_source_index(j, f.c, area));
          }
    std::sort(sources.begin(), sources.end());  // a permutation: every source once
    for (int i = 0; i < total; ++i) REQUIRE(sources[std::size_t(i)] == i);
  }
}

TEST_CASE("krsc_index_of takes each OIHW gradient value from its KRSC place", "[compute][storage16]") {
  // The inverse of krsc_source_index: cuDNN's 16-bit weight gradients come back in KRSC.
  for (const int c : {3, 8, 5, 64}) {
    for (const int area : {1, 9, 49}) {
      INFO(c << " input channels, kernel area " << area);
      const int total = 4 * c * area;
      for (int i = 0; i < total; ++i) {
        const int j = compute::krsc_index_of(i, c, area);
        REQUIRE(j >= 0);
        REQUIRE(j < total);
        CHECK(compute::krsc_source_index(j, c, area) == i);
      }
      if (area == 1) CHECK(compute::krsc_index_of(total - 1, c, area) == total - 1);  // 1x1: the same order
    }
  }
}

TEST_CASE("a ResNet lists every convolution filter for the 16-bit copies, and nothing else", "[model][storage16]") {
  for (const char* name : {"resnet18", "resnet50"}) {
    INFO(name);
    auto backend = compute::make_cpu_backend(1, compute::Precision::bf16);
    model::ParameterStore store(*backend);
    model::ResNet net(store, model::resnet_spec(name), "backbone.");
    store.allocate();
    const auto& filters = net.convolution_filters();
    std::vector<std::size_t> convs;  // parameter indices, in registration order
    for (std::size_t i = 0; i < store.parameters().size(); ++i) {
      const std::string& n = store.parameters()[i].name;
      const bool conv = n.find("conv") != std::string::npos || n.find("downsample.0") != std::string::npos;
      if (conv && n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0) convs.push_back(i);
    }
    CHECK(convs.size() == (std::string(name) == "resnet18" ? 20u : 53u));
    REQUIRE(filters.size() == convs.size());
    for (std::size_t i = 0; i < filters.size(); ++i) {
      const auto& shape = store.parameters()[convs[i]].shape;
      CHECK(filters[i].weight == store.param(convs[i]));
      CHECK(filters[i].out_channels == shape[0]);
      CHECK(filters[i].in_channels == shape[1]);
      CHECK(filters[i].kernel == shape[2]);
      CHECK(shape[2] == shape[3]);
    }
    CHECK(filters.front().out_channels == 64);  // conv1: [64, 3, 7, 7]
    CHECK(filters.front().in_channels == 3);
    CHECK(filters.front().kernel == 7);
  }
}
