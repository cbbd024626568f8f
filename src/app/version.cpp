// `trainer --version`: version, git revision and compiled-in backends.
#include <sstream>  // std::ostringstream

#include "app/commands.hpp"  // version_text

#ifndef TRAINER_VERSION
#define TRAINER_VERSION "0.0.0"
#endif
#ifndef TRAINER_GIT_REVISION
#define TRAINER_GIT_REVISION "unknown"
#endif

namespace trainer::app {

std::string version_text() {
  std::ostringstream os;
  os << "trainer " << TRAINER_VERSION << " (git " << TRAINER_GIT_REVISION << ")\n";
  os << "compute: cpu (oneDNN)";
#ifdef TRAINER_WITH_CUDA
  os << ", cuda (cuDNN, cuBLAS; architectures " << TRAINER_CUDA_ARCHS << ")";
#endif
  os << "\ncommunication backends: ";
#ifdef TRAINER_WITH_CUDA
  os << "nccl, ";
#endif
  os << "mpi, gloo\n";
  return os.str();
}

}  // namespace trainer::app
