// The shared HDF5 layer (util/h5*.hpp): typed attribute and dataset round trips,
// the stored types the checkpoint layout relies on, and the atomic writer.
#include <catch2/catch.hpp>

#include <filesystem>  // std::filesystem::exists

#include "../data/scratch_dir.hpp"  // ScratchDir
#include "util/error.hpp"           // UserError
#include "util/h5.hpp"
#include "util/h5_atomic_file.hpp"
#include "util/h5_io.hpp"

namespace h5 = trainer::h5;
using trainer::data::testing::ScratchDir;

namespace {

h5::Handle create_file(const std::string& path) {
  h5::silence_errors_on_this_thread();
  return H5_OWN(file, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
}

h5::Handle open_file(const std::string& path) {
  return H5_OWN(file, H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
}

bool stored_type_is(hid_t dataset, hid_t expected) {
  h5::Handle type = H5_OWN(datatype, H5Dget_type(dataset));
  return H5_CHECK(H5Tequal(type.get(), expected)) > 0;
}

}  // namespace

TEST_CASE("h5 attributes round-trip and report missing or mistyped ones", "[util][h5]") {
  ScratchDir dir("h5-attributes");
  const std::string path = dir.file("a.h5");
  {
    h5::Handle file = create_file(path);
    h5::write_int_attribute(file.get(), "int", -1234567890123LL);
    h5::write_double_attribute(file.get(), "double", 0.125);
    h5::write_string_attribute(file.get(), "vlen", "variable ü");
    h5::write_fixed_string_attribute(file.get(), "fixed", "trainer-checkpoint-1");
    h5::write_fixed_string_attribute(file.get(), "empty", "");
  }
  h5::Handle file = open_file(path);
  const hid_t f = file.get();
  std::int64_t i = 0;
  double d = 0;
  std::string s;
  REQUIRE(h5::read_int_attribute(f, "int", &i));
  CHECK(i == -1234567890123LL);
  REQUIRE(h5::read_double_attribute(f, "double", &d));
  CHECK(d == 0.125);
  REQUIRE(h5::read_double_attribute(f, "int", &d));  // integers widen to double
  CHECK(d == -1234567890123.0);
  REQUIRE(h5::read_string_attribute(f, "vlen", &s));
  CHECK(s == "variable ü");
  // A fixed-length string fills its whole width (no NUL stored): nothing may be cut.
  REQUIRE(h5::read_string_attribute(f, "fixed", &s));
  CHECK(s == "trainer-checkpoint-1");
  REQUIRE(h5::read_string_attribute(f, "empty", &s));
  CHECK(s.empty());

  i = 7;
  CHECK_FALSE(h5::read_int_attribute(f, "missing", &i));
  CHECK_FALSE(h5::read_int_attribute(f, "fixed", &i));  // a string is not an integer
  CHECK_FALSE(h5::read_int_attribute(f, "double", &i));
  CHECK(i == 7);  // untouched
  CHECK_FALSE(h5::read_string_attribute(f, "int", &s));
}

TEST_CASE("h5 datasets keep the stored types, shapes and group paths checkpoints use", "[util][h5]") {
  ScratchDir dir("h5-datasets");
  const std::string path = dir.file("d.h5");
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  const std::int64_t counter = 42;
  {
    h5::Handle file = create_file(path);
    h5::write_dataset(file.get(), "grad/backbone.conv1.weight", {2, 3}, values.data());
    h5::write_dataset(file.get(), "count", {}, &counter);
    h5::write_strings(file.get(), "names", {"nose", "tail"});
  }
  h5::Handle file = open_file(path);
  CHECK(h5::link_exists(file.get(), "grad"));
  h5::Handle set = H5_OWN(dataset, H5Dopen2(file.get(), "grad/backbone.conv1.weight", H5P_DEFAULT));
  CHECK(h5::dims_of(set.get()) == std::vector<hsize_t>{2, 3});
  CHECK(stored_type_is(set.get(), H5T_IEEE_F32LE));
  std::vector<float> back(values.size());
  H5_CHECK(H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data()));
  CHECK(back == values);

  h5::Handle count = H5_OWN(dataset, H5Dopen2(file.get(), "count", H5P_DEFAULT));
  CHECK(h5::dims_of(count.get()).empty());  // a scalar
  CHECK(stored_type_is(count.get(), H5T_STD_I64LE));

  h5::Handle names = H5_OWN(dataset, H5Dopen2(file.get(), "names", H5P_DEFAULT));
  CHECK(h5::read_strings(names.get()) == std::vector<std::string>{"nose", "tail"});
  CHECK_THROWS_AS(h5::read_int64(names.get()), trainer::UserError);
}

TEST_CASE("h5 reads fixed-length strings that fill their whole width (h5py bytes) uncut", "[util][h5]") {
  ScratchDir dir("h5-fixed");
  const std::string path = dir.file("s.h5");
  {
    h5::Handle file = create_file(path);
    h5::Handle type = H5_OWN(datatype, H5Tcopy(H5T_C_S1));  // numpy 'S4': null-padded, no terminator
    H5_CHECK(H5Tset_size(type.get(), 4));
    H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD));
    const hsize_t n = 2;
    h5::Handle space = H5_OWN(dataspace, H5Screate_simple(1, &n, nullptr));
    h5::Handle set = H5_OWN(dataset, H5Dcreate2(file.get(), "names", type.get(), space.get(), H5P_DEFAULT,
                                                H5P_DEFAULT, H5P_DEFAULT));
    const char data[] = {'n', 'o', 's', 'e', 'a', 'b', '\0', '\0'};
    H5_CHECK(H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
    h5::Handle scalar = H5_OWN(dataspace, H5Screate(H5S_SCALAR));
    h5::Handle attr = H5_OWN(attribute, H5Acreate2(file.get(), "tail", type.get(), scalar.get(), H5P_DEFAULT,
                                                   H5P_DEFAULT));
    H5_CHECK(H5Awrite(attr.get(), type.get(), "tail"));
  }
  h5::Handle file = open_file(path);
  h5::Handle names = H5_OWN(dataset, H5Dopen2(file.get(), "names", H5P_DEFAULT));
  CHECK(h5::read_strings(names.get()) == std::vector<std::string>{"nose", "ab"});
  std::string s;
  REQUIRE(h5::read_string_attribute(file.get(), "tail", &s));
  CHECK(s == "tail");
}

TEST_CASE("h5 AtomicFile shows the file under its final name only after commit", "[util][h5]") {
  ScratchDir dir("h5-atomic");
  const std::string path = dir.file("out.h5");
  const float one = 1;
  {
    h5::AtomicFile file(path, "test file");
    h5::write_dataset(file.get(), "x", {1}, &one);
    CHECK_FALSE(std::filesystem::exists(path));
    file.commit();
  }
  CHECK(std::filesystem::exists(path));
  CHECK(h5::link_exists(open_file(path).get(), "x"));

  const std::string other = dir.file("abandoned.h5");
  {
    h5::AtomicFile file(other, "test file");
    h5::write_dataset(file.get(), "x", {1}, &one);
  }  // no commit: as if an exception had left the scope
  CHECK_FALSE(std::filesystem::exists(other));
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) entries += entry.exists() ? 1 : 0;
  CHECK(entries == 1);  // no temporary file left behind

  try {
    h5::AtomicFile file(dir.file("no/such/folder/x.h5"), "checkpoint file");
    FAIL("creating a file in a missing folder must throw");
  } catch (const trainer::UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cannot create checkpoint file") && Catch::Contains("no/such/folder"));
  }
}
