// libFuzzer harness: the dataset opener's checks of the schema (data/dataset.cpp on
// top of util/h5_io.cpp) on well-formed HDF5 files. The input is a recipe, not file
// bytes: for each dataset of the format it picks missing, numeric, strings or a
// group, then a type, a shape, a storage layout and the values, and HDF5 writes the
// file. fuzz_dataset_open mutates file bytes, so most of its inputs stop in
// libhdf5's own parser (whose bugs are not ours, docs/BUILD.md); every input here
// reaches our code. The file is opened alone and as two shards, and its first and
// last frame are read.
#include <algorithm>  // std::min, std::max
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t, std::int64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include <fuzzer/FuzzedDataProvider.h>  // FuzzedDataProvider (ships with clang)

#include "data/dataset.hpp"  // Dataset, dataset names
#include "fuzz_support.hpp"  // ScratchFile, expect_user_errors_only
#include "util/error.hpp"    // SystemError
#include "util/h5.hpp"       // Handle, H5_CHECK, H5_OWN
#include "util/h5_io.hpp"    // write_strings, write_*_attribute

namespace {

using trainer::h5::Handle;

constexpr std::size_t kMaxWrittenElements = 4096;              // larger datasets stay unwritten (fill value)
constexpr std::size_t kMaxFrameBytes = std::size_t{64} << 20;  // larger frames are not read (fuzz_dataset_open.cpp)

// Every choice below reads 0 from an exhausted input, and choice 0 is what the
// format wants: the empty input is a valid file, and each byte of a longer one
// bends one detail of it.
hid_t numeric_type(FuzzedDataProvider& in, hid_t wanted) {
  switch (in.ConsumeIntegralInRange(0, 6)) {
    case 0: return wanted;
    case 1: return H5T_STD_U8LE;
    case 2: return H5T_STD_I8LE;
    case 3: return H5T_STD_I32LE;
    case 4: return H5T_STD_U64LE;
    case 5: return H5T_IEEE_F32LE;
    default: return H5T_IEEE_F64LE;
  }
}

hsize_t extent(FuzzedDataProvider& in, hsize_t wanted) {
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 0: return wanted;
    case 1: return 0;
    case 2: return 1;
    case 3: return 3;
    case 4: return in.ConsumeIntegralInRange<hsize_t>(0, 40);
    case 5: return hsize_t{1} << 31;
    case 6: return (hsize_t{1} << 32) + 1;
    default: return in.ConsumeIntegralInRange<hsize_t>(0, hsize_t{1} << 62);
  }
}

enum class Kind { kNumeric, kVlenStrings, kFixedStrings };

// What the format wants of one dataset.
struct Spec {
  const char* name;
  Kind kind;
  hid_t type;  // for kNumeric
  std::vector<hsize_t> dims;
  bool chunk_per_frame = false;  // /images: one chunk per frame
};

// The dataset `spec` names, written as the input bends it.
void add_object(hid_t file, const Spec& spec, FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 1: return;  // missing
    case 2: H5_OWN(group, H5Gcreate2(file, spec.name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)); return;
    default: break;
  }
  Kind kind = spec.kind;
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 1: kind = Kind::kNumeric; break;
    case 2: kind = Kind::kVlenStrings; break;
    case 3: kind = Kind::kFixedStrings; break;
    default: break;
  }
  Handle type;
  if (kind == Kind::kNumeric) {
    type = H5_OWN(datatype, H5Tcopy(numeric_type(in, spec.kind == Kind::kNumeric ? spec.type : H5T_STD_I64LE)));
  } else if (kind == Kind::kVlenStrings) {
    type = trainer::h5::vlen_string_type();
  } else {
    type = H5_OWN(datatype, H5Tcopy(H5T_C_S1));
    H5_CHECK(H5Tset_size(type.get(), 1 + in.ConsumeIntegralInRange<std::size_t>(0, 15)));
  }
  std::vector<hsize_t> dims = spec.dims;
  if (in.ConsumeBool()) dims.resize(in.ConsumeIntegralInRange<std::size_t>(0, 5), 2);  // another rank
  std::size_t count = 1;
  bool overflow = false;
  for (auto& d : dims) {
    d = extent(in, d);
    overflow = __builtin_mul_overflow(count, d, &count) || overflow;
  }
  const int rank = static_cast<int>(dims.size());
  Handle plist = H5_OWN(plist, H5Pcreate(H5P_DATASET_CREATE));
  Handle space;
  const bool chunked = rank > 0 && (spec.chunk_per_frame != in.ConsumeBool());
  if (rank == 0) {
    space = H5_OWN(dataspace, H5Screate(H5S_SCALAR));
  } else if (chunked) {  // extendible, so chunks may exceed the extent; maybe deflated
    std::vector<hsize_t> chunk(dims.size()), max(dims.size(), H5S_UNLIMITED);
    for (std::size_t i = 0; i < chunk.size(); ++i)
      chunk[i] = (i == 0 ? 1 : std::max<hsize_t>(1, std::min<hsize_t>(dims[i], 64))) + in.ConsumeIntegralInRange(0, 3);
    H5_CHECK(H5Pset_chunk(plist.get(), rank, chunk.data()));
    if (in.ConsumeBool()) H5_CHECK(H5Pset_deflate(plist.get(), 1));
    space = H5_OWN(dataspace, H5Screate_simple(rank, dims.data(), max.data()));
  } else {
    space = H5_OWN(dataspace, H5Screate_simple(rank, dims.data(), nullptr));
  }
  Handle set = H5_OWN(dataset, H5Dcreate2(file, spec.name, type.get(), space.get(), H5P_DEFAULT, plist.get(), H5P_DEFAULT));
  if (overflow || count == 0 || count > kMaxWrittenElements || in.ConsumeBool()) return;  // left unwritten
  if (kind == Kind::kNumeric) {
    std::vector<std::int64_t> ints(count);
    std::vector<double> reals(count);
    const bool as_reals = H5Tget_class(type.get()) == H5T_FLOAT;
    for (std::size_t i = 0; i < count; ++i) {
      if (as_reals) reals[i] = in.ConsumeFloatingPoint<double>();
      else ints[i] = in.ConsumeIntegral<std::int64_t>();
    }
    H5_CHECK(H5Dwrite(set.get(), as_reals ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                      as_reals ? static_cast<const void*>(reals.data()) : static_cast<const void*>(ints.data())));
  } else if (kind == Kind::kVlenStrings) {
    std::vector<std::string> text(count);
    std::vector<const char*> pointers(count);
    for (std::size_t i = 0; i < count; ++i) {
      text[i] = in.ConsumeRandomLengthString(24);
      pointers[i] = text[i].c_str();
    }
    H5_CHECK(H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()));
  } else {
    std::vector<std::uint8_t> bytes = in.ConsumeBytes<std::uint8_t>(count * H5Tget_size(type.get()));
    bytes.resize(count * H5Tget_size(type.get()));
    H5_CHECK(H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()));
  }
}

void add_format_version(hid_t file, FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 4)) {
    case 0: trainer::h5::write_int_attribute(file, "format_version", 1); return;
    case 1: trainer::h5::write_int_attribute(file, "format_version", in.ConsumeIntegral<std::int64_t>()); return;
    case 2: trainer::h5::write_double_attribute(file, "format_version", in.ConsumeFloatingPoint<double>()); return;
    case 3: trainer::h5::write_string_attribute(file, "format_version", in.ConsumeRandomLengthString(8)); return;
    default: return;
  }
}

// Writes the file the input describes; false when HDF5 refuses the recipe (no finding).
bool write_file(const std::string& path, FuzzedDataProvider& in) {
  try {
    Handle file = H5_OWN(file, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    add_format_version(file.get(), in);
    using namespace trainer::data;
    const hsize_t n = extent(in, 2), k = extent(in, 2), h = extent(in, 4), w = extent(in, 4);
    const hsize_t c = in.ConsumeBool() ? 1 : 3;
    const std::vector<Spec> specs = {
        {kImages, Kind::kNumeric, H5T_STD_U8LE, {n, h, w, c}, true},
        {kKeypoints, Kind::kNumeric, H5T_IEEE_F32LE, {n, k, 2}},
        {kKeypointNames, Kind::kVlenStrings, H5T_NO_CLASS, {k}},
        {kFramePaths, Kind::kVlenStrings, H5T_NO_CLASS, {n}},
    };
    for (const Spec& spec : specs) add_object(file.get(), spec, in);
    if (in.ConsumeBool()) {  // context frames
      add_object(file.get(), {kVideoId, Kind::kNumeric, H5T_STD_I64LE, {n}}, in);
      add_object(file.get(), {kFrameNumber, Kind::kNumeric, H5T_STD_I64LE, {n}}, in);
    }
    H5_CHECK(file.close());
    return true;
  } catch (const trainer::SystemError&) {
    return false;
  }
}

// An opened dataset must report the frame shape the file really has.
void check_frame_shape(const trainer::data::Dataset& dataset, const std::string& path) {
  Handle file = H5_OWN(file, H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  Handle images = H5_OWN(dataset, H5Dopen2(file.get(), trainer::data::kImages, H5P_DEFAULT));
  const std::vector<hsize_t> dims = trainer::h5::dims_of(images.get());
  if (dims.size() != 4 || dims[1] != static_cast<hsize_t>(dataset.height()) ||
      dims[2] != static_cast<hsize_t>(dataset.width()) || dims[3] != static_cast<hsize_t>(dataset.channels()))
    trainer::fuzz::ScratchFile::finding("opened with frames " + std::to_string(dataset.height()) + "x" +
                                        std::to_string(dataset.width()) + "x" + std::to_string(dataset.channels()) +
                                        " but /images has shape [" + std::to_string(dims.at(0)) + ", " +
                                        std::to_string(dims.at(1)) + ", " + std::to_string(dims.at(2)) + ", " +
                                        std::to_string(dims.at(3)) + "]");
}

void read_first_and_last(const trainer::data::Dataset& dataset) {
  if (dataset.frame_bytes() > kMaxFrameBytes) return;
  std::vector<std::uint8_t> frame(dataset.frame_bytes());
  dataset.read_image(0, frame.data());
  dataset.read_image(dataset.size() - 1, frame.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const trainer::fuzz::ScratchFile input(".schema.h5");
  trainer::h5::silence_errors_on_this_thread();
  FuzzedDataProvider in(data, size);
  const bool two_shards = in.ConsumeBool();
  if (!write_file(input.path(), in)) return 0;
  trainer::fuzz::expect_user_errors_only([&] {
    using trainer::data::Dataset;
    const Dataset dataset = two_shards ? Dataset::open({input.path(), input.path()}) : Dataset::open({input.path()});
    check_frame_shape(dataset, input.path());
    read_first_and_last(dataset);
  });
  trainer::fuzz::expect_no_open_hdf5_objects();
  return 0;
}
