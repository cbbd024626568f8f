#pragma once
// CUDA implementations of compute::Stream and compute::Event: RAII owners of a
// cudaStream_t and a cudaEvent_t. Streams are created non-blocking so they never
// serialize against the legacy default stream that libraries may use.
#include <cuda_runtime_api.h>  // cudaStream_t, cudaEvent_t
#include <memory>              // std::unique_ptr

#include "compute/cuda/device_memory.hpp"  // StreamScratch
#include "compute/stream.hpp"              // compute::Stream, compute::Event

namespace trainer::compute::cuda {

class CudaEvent final : public Event {
 public:
  explicit CudaEvent(bool timing = false);  // timing disabled: the cheapest event for ordering
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }
  void synchronize() const override;
  double elapsed_ms_since(const Event& start) const override;

 private:
  cudaEvent_t event_ = nullptr;
};

// A CUDA graph instantiated from a stream's recording; owns the graph and its
// executable form.
class CudaGraph final : public RecordedWork {
 public:
  explicit CudaGraph(cudaGraph_t graph);  // takes ownership; instantiates it
  ~CudaGraph() override;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  void launch(Stream& s) override;

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

class CudaStream final : public Stream {
 public:
  // priority: 0 is the default; lower numbers are higher priority (cudaDeviceGetStreamPriorityRange).
  explicit CudaStream(int priority = 0);
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  std::unique_ptr<Event> record() override;
  std::unique_ptr<Event> record_timed() override;
  void wait(const Event& event) override;
  void synchronize() override;
  void* native() const override { return stream_; }
  cudaStream_t get() const { return stream_; }
  // This stream's reusable device workspace (see StreamScratch): at least `bytes`.
  // While recording it cannot grow (a recorded stream-ordered allocation would
  // belong to the graph): a larger request throws, and the recording is abandoned.
  void* scratch(std::size_t bytes);

  // Stream capture in this thread's mode: an unsafe call from another thread
  // (a loader's pinned allocation) does not invalidate the recording.
  bool can_record() const override { return true; }
  std::uint64_t scratch_reallocations() const override { return scratch_->reallocations(); }
  void begin_recording() override;
  std::unique_ptr<RecordedWork> end_recording() override;
  void abandon_recording() noexcept override;
  bool recording() const { return recording_; }

 private:
  cudaStream_t stream_ = nullptr;
  bool recording_ = false;
  std::unique_ptr<StreamScratch> scratch_;  // freed before the stream is destroyed
};

// The CudaStream behind a Stream; throws when the stream is not a CUDA stream.
CudaStream& as_cuda(Stream& s);

}  // namespace trainer::compute::cuda
