// The autotuners' timer (compute/cuda/fastest_run): device time alone, however slowly
// the host enqueues, and a refused run times nothing. The hold kernel
// (kernels/hold.cuh) it queues the runs behind is itself the work timed here: a
// kernel of known length.
#include <catch2/catch.hpp>

#include <chrono>  // std::chrono
#include <thread>  // std::this_thread::sleep_for

#include "compute/cuda/cuda_stream.hpp"  // CudaStream
#include "compute/cuda/fastest_run.hpp"  // fastest_run_ms, stream_capturing
#include "hold.cuh"                      // kernels::hold_stream

using trainer::compute::cuda::CudaStream;
using trainer::compute::cuda::fastest_run_ms;
using trainer::compute::cuda::stream_capturing;

TEST_CASE("fastest_run_ms times device work, not the host's enqueueing", "[gpu][fastest_run]") {
  CudaStream stream;
  CHECK_FALSE(stream_capturing(stream.get()));
  // 100 us of device work enqueued after 50 us of host time per run (enough for the
  // 500 us hold to cover three runs): without the hold, each run would read about
  // 150 us.
  const double ms = fastest_run_ms(stream.get(), [&] {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    trainer::kernels::hold_stream(100, stream.get());
    return true;
  });
  INFO(ms << " ms");
  CHECK(ms >= 0.095);
  CHECK(ms < 0.14);
}

TEST_CASE("fastest_run_ms times nothing when the work is refused", "[gpu][fastest_run]") {
  CudaStream stream;
  CHECK(fastest_run_ms(stream.get(), [] { return false; }) < 0);  // at the warm-up
  int calls = 0;
  CHECK(fastest_run_ms(stream.get(), [&] { return ++calls < 3; }) < 0);  // at a timed run
  CHECK(calls == 3);
}
