#pragma once
// The unit tests' scratch folder (tests/unit/scratch_dir.hpp) under the data tests' name.
#include "../scratch_dir.hpp"  // unit_test::ScratchDir

namespace trainer::data::testing {
using unit_test::ScratchDir;
}  // namespace trainer::data::testing
