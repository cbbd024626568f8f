#include "compute/pca_centering.hpp"

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::compute {

const std::vector<std::string>& pca_centering_names() {
  static const std::vector<std::string> names = {"mean", "median"};
  return names;
}

PcaCentering pca_centering_from_name(const std::string& name) {
  if (name.empty()) return PcaCentering::none;
  if (name == "mean") return PcaCentering::mean;
  TRAINER_ASSERT(name == "median", "unknown PCA centering '" << name << "'");
  return PcaCentering::median;
}

}  // namespace trainer::compute
