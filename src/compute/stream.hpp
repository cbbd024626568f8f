#pragma once
// A queue of device work. Every call that launches work takes a Stream& so the
// order of work is explicit. The CPU backend runs work immediately on the calling
// thread (its stream only names the thread pool size); the CUDA backend wraps a
// cudaStream_t. Events order work between streams (data copy, compute, all-reduce).
#include <cstdint>  // std::uint64_t
#include <limits>   // std::numeric_limits
#include <memory>   // std::unique_ptr

namespace trainer::compute {

class Event {
 public:
  virtual ~Event() = default;
  // Blocks the host until the work before the event is done. Host streams run
  // work at once, so their events are always complete.
  virtual void synchronize() const {}
  // Milliseconds from `start` to this event, both from Stream::record_timed() on the
  // same backend and complete; NaN for events that carry no time (record()).
  virtual double elapsed_ms_since(const Event& start) const;
};

class Stream;

// A stream's work recorded once and replayed (a CUDA graph): the same kernels with
// the same arguments and buffers on every launch. What changes from one replay to
// the next must live in device memory (Backend::set_values, staged batches).
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
  // Queues the recorded work on `s`, after the work already queued there.
  virtual void launch(Stream& s) = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  // Records an event after all work queued so far.
  virtual std::unique_ptr<Event> record() = 0;
  // The same, carrying a time for Event::elapsed_ms_since (profiling: costlier
  // than record() on a GPU). Streams that cannot time return record()'s event.
  virtual std::unique_ptr<Event> record_timed() { return record(); }
  // Makes later work on this stream wait for the event.
  virtual void wait(const Event& event) = 0;
  // Blocks the host until the stream's work is done. Not for use inside the step
  // except where a host value is truly needed (e.g. the loss for logging).
  virtual void synchronize() = 0;
  // Native handle (cudaStream_t for CUDA, nullptr for CPU).
  virtual void* native() const = 0;

  // Recording (CUDA streams; can_record() says whether this one can). Between
  // begin_recording() and end_recording(), work queued on this stream, and on streams
  // that wait for events it records, is recorded instead of run; host waits on it
  // and allocations fail. end_recording() returns the recorded work ready to launch
  // (it has not run), or throws when an op failed while recording. After an
  // exception between the two, abandon_recording() ends the recording and drops it.
  virtual bool can_record() const { return false; }
  // Times this stream's own scratch memory moved to a new block (it grows): recorded
  // work that used the scratch is stale once this count has moved. 0 without scratch.
  virtual std::uint64_t scratch_reallocations() const { return 0; }
  virtual void begin_recording();
  virtual std::unique_ptr<RecordedWork> end_recording();
  virtual void abandon_recording() noexcept {}
};

inline double Event::elapsed_ms_since(const Event&) const { return std::numeric_limits<double>::quiet_NaN(); }

}  // namespace trainer::compute
