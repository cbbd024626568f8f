#include "compute/cuda/cuda_stream.hpp"

#include "compute/cuda/cuda_check.hpp"  // CUDA_CHECK

namespace trainer::compute::cuda {

CudaEvent::CudaEvent(bool timing) {
  CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() {
  if (event_) cudaEventDestroy(event_);  // no throw from a destructor
}

void CudaEvent::synchronize() const { CUDA_CHECK(cudaEventSynchronize(event_)); }

double CudaEvent::elapsed_ms_since(const Event& start) const {
  const auto* s = dynamic_cast<const CudaEvent*>(&start);
  if (s == nullptr) return Event::elapsed_ms_since(start);
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, s->event_, event_));
  return ms;
}

CudaStream::CudaStream(int priority) {
  CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
  scratch_ = std::make_unique<StreamScratch>(stream_);
}

CudaStream::~CudaStream() {
  scratch_.reset();                         // stream-ordered free needs the stream alive
  if (stream_) cudaStreamDestroy(stream_);  // returns at once; pending work still completes
}

std::unique_ptr<Event> CudaStream::record() {
  auto event = std::make_unique<CudaEvent>();
  CUDA_CHECK(cudaEventRecord(event->get(), stream_));
  return event;
}

std::unique_ptr<Event> CudaStream::record_timed() {
  auto event = std::make_unique<CudaEvent>(true);
  CUDA_CHECK(cudaEventRecord(event->get(), stream_));
  return event;
}

void CudaStream::wait(const Event& event) {
  const auto* cuda_event = dynamic_cast<const CudaEvent*>(&event);
  TRAINER_ASSERT(cuda_event != nullptr, "CudaStream::wait needs an event recorded on a CUDA stream");
  CUDA_CHECK(cudaStreamWaitEvent(stream_, cuda_event->get(), 0));
}

void CudaStream::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

CudaStream& as_cuda(Stream& s) {
  auto* cs = dynamic_cast<CudaStream*>(&s);
  TRAINER_ASSERT(cs != nullptr, "a CUDA op was given a stream that is not a CUDA stream");
  return *cs;
}

}  // namespace trainer::compute::cuda
