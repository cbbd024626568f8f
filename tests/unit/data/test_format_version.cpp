// The root attribute format_version: a version this trainer cannot read, or one that
// is not a positive integer (a string, a float), is an error naming the file.
#include <catch2/catch.hpp>

#include <string>  // std::string
#include <vector>  // std::vector

#include "data/dataset.hpp"
#include "scratch_dir.hpp"
#include "util/error.hpp"
#include "util/h5.hpp"
#include "util/h5_io.hpp"

using namespace trainer::data;
namespace h5 = trainer::h5;

namespace {

// A valid one-frame, one-keypoint file whose format_version is written by `set_version`.
template <typename SetVersion>
std::string file_with_version(const testing::ScratchDir& dir, const std::string& name, SetVersion set_version) {
  const std::string path = dir.file(name);
  h5::silence_errors_on_this_thread();
  h5::Handle file = H5_OWN(file, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const auto numeric = [&](const char* set_name, hid_t type, std::vector<hsize_t> dims) {
    h5::Handle space = H5_OWN(dataspace, H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    h5::Handle set = H5_OWN(dataset, H5Dcreate2(file.get(), set_name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                                H5P_DEFAULT));
    std::vector<double> zeros(8 * 8, 0.0);
    H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()));
  };
  numeric("/images", H5T_STD_U8LE, {1, 8, 8, 1});
  numeric("/keypoints", H5T_IEEE_F32LE, {1, 1, 2});
  h5::write_strings(file.get(), "/keypoint_names", {"k0"});
  h5::write_strings(file.get(), "/frame_paths", {"img0.png"});
  set_version(file.get());
  return path;
}

std::string open_error(const std::string& path) {
  try {
    Dataset::open({path});
  } catch (const trainer::UserError& e) {
    CHECK(e.exit_code() == trainer::kExitUsage);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("format_version: an integer 1 or none opens", "[data]") {
  testing::ScratchDir dir("version");
  CHECK(Dataset::open({file_with_version(dir, "one.h5", [](hid_t f) { h5::write_int_attribute(f, "format_version", 1); })})
            .size() == 1);
  CHECK(Dataset::open({file_with_version(dir, "none.h5", [](hid_t) {})}).size() == 1);
}

TEST_CASE("format_version: a string, a float, 0 or a newer version is an error", "[data]") {
  testing::ScratchDir dir("version");
  const std::string text = file_with_version(dir, "text.h5", [](hid_t f) { h5::write_string_attribute(f, "format_version", "1"); });
  CHECK_THAT(open_error(text), Catch::Contains("text.h5") && Catch::Contains("not a positive integer"));
  const std::string real = file_with_version(dir, "real.h5", [](hid_t f) { h5::write_double_attribute(f, "format_version", 1.0); });
  CHECK_THAT(open_error(real), Catch::Contains("real.h5") && Catch::Contains("not a positive integer"));
  const std::string zero = file_with_version(dir, "zero.h5", [](hid_t f) { h5::write_int_attribute(f, "format_version", 0); });
  CHECK_THAT(open_error(zero), Catch::Contains("zero.h5") && Catch::Contains("not a positive integer"));
  const std::string newer = file_with_version(dir, "newer.h5", [](hid_t f) { h5::write_int_attribute(f, "format_version", 99); });
  CHECK_THAT(open_error(newer), Catch::Contains("has format_version 99"));
}
