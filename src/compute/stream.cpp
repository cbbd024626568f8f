// Stream's defaults for streams that cannot record (see stream.hpp).
#include "compute/stream.hpp"

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::compute {

void Stream::begin_recording() { TRAINER_ASSERT(false, "this stream cannot record its work (can_record() is false)"); }

std::unique_ptr<RecordedWork> Stream::end_recording() {
  TRAINER_ASSERT(false, "end_recording() on a stream that cannot record");
  return nullptr;
}

}  // namespace trainer::compute
