#pragma once
// A Stream for host-only callers of the communicator (benchmarks, tests, metric
// reductions): host work runs at once, so there is nothing to order or wait for.
#include <memory>  // std::unique_ptr

#include "compute/stream.hpp"  // compute::Stream, compute::Event

namespace trainer::comm {

class HostStream final : public compute::Stream {
 public:
  std::unique_ptr<compute::Event> record() override { return std::make_unique<compute::Event>(); }
  void wait(const compute::Event&) override {}
  void synchronize() override {}
  void* native() const override { return nullptr; }
};

}  // namespace trainer::comm
