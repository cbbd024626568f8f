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

void* CudaStream::scratch(std::size_t bytes) {
  TRAINER_ASSERT(!recording_ || bytes <= scratch_->bytes(),
                 "a recorded step needs " << bytes << " bytes of stream scratch, more than the " << scratch_->bytes()
                                          << " its unrecorded run left");
  return scratch_->get(bytes);
}

void CudaStream::begin_recording() {
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  recording_ = true;
}

std::unique_ptr<RecordedWork> CudaStream::end_recording() {
  recording_ = false;
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  return std::make_unique<CudaGraph>(graph);
}

void CudaStream::abandon_recording() noexcept {
  recording_ = false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream_, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
  }
  (void)cudaGetLastError();  // capture errors are not sticky; clear the last one
}

CudaGraph::CudaGraph(cudaGraph_t graph) : graph_(graph) {
  // A library may allocate stream-ordered memory while recorded (cuBLAS's workspace
  // since CUDA 12.2): free what a launch left allocated before the next launch.
  const cudaError_t rc = cudaGraphInstantiate(&exec_, graph_, cudaGraphInstantiateFlagAutoFreeOnLaunch);
  if (rc != cudaSuccess) {
    cudaGraphDestroy(graph_);  // the constructor throws: no destructor runs
    CUDA_CHECK(rc);
  }
}

CudaGraph::~CudaGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void CudaGraph::launch(Stream& s) { CUDA_CHECK(cudaGraphLaunch(exec_, as_cuda(s).get())); }

CudaStream& as_cuda(Stream& s) {
  auto* cs = dynamic_cast<CudaStream*>(&s);
  TRAINER_ASSERT(cs != nullptr, "a CUDA op was given a stream that is not a CUDA stream");
  return *cs;
}

}  // namespace trainer::compute::cuda
