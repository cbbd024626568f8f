// Every bad-input case of the dataset format: a UserError naming the file and the
// dataset, never a crash.
#include <catch2/catch.hpp>

#include <cmath>       // NAN
#include <filesystem>  // std::filesystem::resize_file
#include <fstream>     // std::ofstream

#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "data/split.hpp"
#include "data/synth.hpp"
#include "scratch_dir.hpp"
#include "util/error.hpp"
#include "util/h5.hpp"
#include "util/h5_io.hpp"

using namespace trainer::data;
namespace h5 = trainer::h5;
using trainer::UserError;

namespace {

// Builds small files with any mix of correct and broken datasets.
class FileBuilder {
 public:
  explicit FileBuilder(const std::string& path) : path_(path) {
    h5::silence_errors_on_this_thread();
    file_ = H5_OWN(file, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  }
  void numeric(const char* name, hid_t type, std::vector<hsize_t> dims) {
    h5::Handle space = H5_OWN(dataspace, H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    h5::Handle set = H5_OWN(dataset, H5Dcreate2(file_.get(), name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    size_t n = 1;
    for (auto d : dims) n *= d;
    std::vector<double> zeros(n, 0.0);
    if (n) H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()));
  }
  void strings(const char* name, size_t n, const std::string& prefix = "k") {
    std::vector<std::string> v;
    for (size_t i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
    h5::write_strings(file_.get(), name, v);
  }
  // A complete valid file of n frames, k keypoints, except what `skip` names.
  void valid(hsize_t n, hsize_t k, const std::string& skip = "") {
    if (skip != "/images") numeric("/images", H5T_STD_U8LE, {n, 8, 8, 1});
    if (skip != "/keypoints") numeric("/keypoints", H5T_IEEE_F32LE, {n, k, 2});
    if (skip != "/keypoint_names") strings("/keypoint_names", k);
    if (skip != "/frame_paths") strings("/frame_paths", n, "img");
  }
  void close() { file_.reset(); }

 private:
  std::string path_;
  h5::Handle file_;
};

// Opening must throw a UserError whose message contains every fragment.
void expect_user_error(const std::vector<std::string>& files, const std::vector<std::string>& fragments,
                       const DatasetExpectations& expect = {}) {
  try {
    Dataset::open(files, expect);
    FAIL("no error for " << files.front());
  } catch (const UserError& e) {
    const std::string what = e.what();
    for (const auto& f : fragments) {
      INFO("message: " << what);
      CHECK(what.find(f) != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("a valid hand-made file opens, all-NaN frames included", "[data]") {
  testing::ScratchDir dir("bad");
  const std::string path = dir.file("ok.h5");
  {
    FileBuilder b(path);
    b.valid(3, 2);
  }
  const Dataset ds = Dataset::open({path}, {2, {"k0", "k1"}});
  CHECK(ds.size() == 3);
  CHECK(ds.channels() == 1);
  CHECK_FALSE(ds.has_video_info());
  // Contiguous (unchunked) /images, as other tools may write it, reads through H5Dread.
  std::vector<std::uint8_t> frame(ds.frame_bytes(), 7);
  ds.read_image(2, frame.data());
  CHECK(frame == std::vector<std::uint8_t>(ds.frame_bytes(), 0));
}

TEST_CASE("missing, unreadable, non-HDF5 and truncated files", "[data]") {
  testing::ScratchDir dir("bad");
  expect_user_error({dir.file("nope.h5")}, {dir.file("nope.h5"), "no such file"});
  expect_user_error({dir.path().string()}, {"is a directory"});
  {
    std::ofstream(dir.file("text.h5")) << "index,frame_path\n0,a.png\n";
  }
  expect_user_error({dir.file("text.h5")}, {dir.file("text.h5"), "not an HDF5 file"});
  {
    std::ofstream(dir.file("empty.h5"));
  }
  expect_user_error({dir.file("empty.h5")}, {dir.file("empty.h5"), "not an HDF5 file"});

  // Truncated: a real dataset cut in half must fail on open or on reading, by name.
  SynthOptions so;
  so.frames = 20;
  so.size = 64;
  write_synthetic_dataset(dir.file("cut.h5"), so);
  const auto full = std::filesystem::file_size(dir.file("cut.h5"));
  std::filesystem::resize_file(dir.file("cut.h5"), full / 2);
  bool failed = false;
  try {
    const Dataset ds = Dataset::open({dir.file("cut.h5")});
    std::vector<std::uint8_t> frame(ds.frame_bytes());
    for (std::int64_t i = 0; i < ds.size(); ++i) ds.read_image(i, frame.data());
  } catch (const UserError& e) {
    failed = true;
    CHECK(std::string(e.what()).find(dir.file("cut.h5")) != std::string::npos);
  }
  CHECK(failed);
  // Through the loader's worker threads: the error reaches next(), nothing crashes.
  write_synthetic_dataset(dir.file("cut2.h5"), so);
  bool loader_failed = false;
  {
    const Dataset ds = Dataset::open({dir.file("cut2.h5")});
    std::filesystem::resize_file(dir.file("cut2.h5"), full / 2);  // cut after opening
    LoaderOptions lo;
    lo.batch_size = 4;
    lo.height = lo.width = 32;
    lo.num_workers = 2;
    Loader loader(ds, lo);
    std::vector<SampleRow> rows;
    for (std::int64_t i = 0; i < ds.size(); ++i) rows.push_back({i, true});
    loader.start_epoch(0, rows);
    try {
      while (loader.next()) {
      }
    } catch (const UserError& e) {
      loader_failed = true;
      INFO(e.what());
      CHECK(std::string(e.what()).find("cut2.h5") != std::string::npos);
      CHECK(std::string(e.what()).find("truncated") != std::string::npos);
    }
  }
  CHECK(loader_failed);
  // Cut to a few bytes past the signature.
  write_synthetic_dataset(dir.file("stub.h5"), so);
  std::filesystem::resize_file(dir.file("stub.h5"), 100);
  expect_user_error({dir.file("stub.h5")}, {dir.file("stub.h5")});
}

TEST_CASE("what a file claims is checked against what it holds", "[data]") {
  testing::ScratchDir dir("claims");
  // Issue 26: /images claiming 100000x100000 frames (chunked, never written, so the
  // file stays small) ended in "out of host memory" (exit 1) when the loader
  // allocated a frame; now the frame size is refused when the file is opened.
  const auto images = [&](const std::string& path, std::vector<hsize_t> dims, std::vector<hsize_t> chunk,
                          bool write_one) {
    h5::silence_errors_on_this_thread();
    h5::Handle file = H5_OWN(file, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    h5::Handle space = H5_OWN(dataspace, H5Screate_simple(4, dims.data(), nullptr));
    h5::Handle plist = H5_OWN(plist, H5Pcreate(H5P_DATASET_CREATE));
    H5_CHECK(H5Pset_chunk(plist.get(), 4, chunk.data()));
    h5::Handle set = H5_OWN(dataset, H5Dcreate2(file.get(), "/images", H5T_STD_U8LE, space.get(), H5P_DEFAULT,
                                                plist.get(), H5P_DEFAULT));
    if (write_one) {  // the first chunk only
      std::vector<std::uint8_t> pixels(chunk[0] * chunk[1] * chunk[2] * chunk[3], 1);
      const hsize_t start[4] = {0, 0, 0, 0};
      h5::Handle file_space = H5_OWN(dataspace, H5Dget_space(set.get()));
      H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, chunk.data(), nullptr));
      h5::Handle memory = H5_OWN(dataspace, H5Screate_simple(4, chunk.data(), nullptr));
      H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_UINT8, memory.get(), file_space.get(), H5P_DEFAULT, pixels.data()));
    }
    const std::vector<float> keypoints(dims[0] * 2, 1.0f);
    h5::write_dataset(file.get(), "/keypoints", {dims[0], 1, 2}, keypoints.data());
    h5::write_strings(file.get(), "/keypoint_names", {"nose"});
    h5::write_strings(file.get(), "/frame_paths", std::vector<std::string>(dims[0], "a.png"));
  };
  images(dir.file("huge.h5"), {2, 100000, 100000, 3}, {1, 1000, 1000, 3}, false);
  expect_user_error({dir.file("huge.h5")}, {dir.file("huge.h5"), "/images", "100000x100000x3", "too large"});
  // Frames of a sane size, but far more of them than the file stores.
  images(dir.file("many.h5"), {5000, 64, 64, 3}, {1, 64, 64, 3}, true);
  expect_user_error({dir.file("many.h5")}, {dir.file("many.h5"), "/images", "claims 61440000 elements"});
}

TEST_CASE("missing datasets are named", "[data]") {
  testing::ScratchDir dir("bad");
  for (const std::string name : {"/images", "/keypoints", "/keypoint_names", "/frame_paths"}) {
    const std::string path = dir.file("missing" + std::to_string(name.size()) + ".h5");
    {
      FileBuilder b(path);
      b.valid(3, 2, name);
    }
    expect_user_error({path}, {path, "no dataset " + name});
  }
}

TEST_CASE("wrong dtype, rank, N and K are named", "[data]") {
  testing::ScratchDir dir("bad");
  auto build = [&](const std::string& file, auto&& fill) {
    const std::string path = dir.file(file);
    FileBuilder b(path);
    fill(b);
    return path;
  };
  std::string p = build("dtype_images.h5", [](FileBuilder& b) {
    b.valid(3, 2, "/images");
    b.numeric("/images", H5T_IEEE_F32LE, {3, 8, 8, 1});
  });
  expect_user_error({p}, {p, "/images", "wrong dtype float32"});
  p = build("dtype_kp.h5", [](FileBuilder& b) {
    b.valid(3, 2, "/keypoints");
    b.numeric("/keypoints", H5T_STD_I32LE, {3, 2, 2});
  });
  expect_user_error({p}, {p, "/keypoints", "wrong dtype int32"});
  p = build("rank_images.h5", [](FileBuilder& b) {
    b.valid(3, 2, "/images");
    b.numeric("/images", H5T_STD_U8LE, {3, 8, 8});
  });
  expect_user_error({p}, {p, "/images", "wrong rank"});
  p = build("channels.h5", [](FileBuilder& b) {
    b.valid(3, 2, "/images");
    b.numeric("/images", H5T_STD_U8LE, {3, 8, 8, 2});
  });
  expect_user_error({p}, {p, "/images", "2 channels"});
  p = build("rank_kp.h5", [](FileBuilder& b) {
    b.valid(3, 2, "/keypoints");
    b.numeric("/keypoints", H5T_IEEE_F32LE, {3, 4});
  });
  expect_user_error({p}, {p, "/keypoints", "wrong rank"});
  p = build("n_kp.h5", [](FileBuilder& b) {
    b.valid(3, 2, "/keypoints");
    b.numeric("/keypoints", H5T_IEEE_F32LE, {4, 2, 2});
  });
  expect_user_error({p}, {p, "/keypoints", "N mismatch"});
  p = build("n_paths.h5", [](FileBuilder& b) {
    b.valid(3, 2, "/frame_paths");
    b.strings("/frame_paths", 5);
  });
  expect_user_error({p}, {p, "/frame_paths", "N mismatch"});
  p = build("k_names.h5", [](FileBuilder& b) {
    b.valid(3, 2, "/keypoint_names");
    b.strings("/keypoint_names", 3);
  });
  expect_user_error({p}, {p, "/keypoint_names", "K = 2"});
  p = build("names_type.h5", [](FileBuilder& b) {
    b.valid(3, 2, "/keypoint_names");
    b.numeric("/keypoint_names", H5T_STD_I32LE, {2});
  });
  expect_user_error({p}, {p, "/keypoint_names", "not a string"});
  p = build("video_half.h5", [](FileBuilder& b) {
    b.valid(3, 2);
    b.numeric("/video_id", H5T_STD_I32LE, {3});
  });
  expect_user_error({p}, {p, "/frame_number", "missing"});
  p = build("video_n.h5", [](FileBuilder& b) {
    b.valid(3, 2);
    b.numeric("/video_id", H5T_STD_I32LE, {3});
    b.numeric("/frame_number", H5T_STD_I32LE, {2});
  });
  expect_user_error({p}, {p, "/frame_number", "N mismatch"});
}

TEST_CASE("configuration mismatches are named", "[data]") {
  testing::ScratchDir dir("bad");
  const std::string path = dir.file("k.h5");
  {
    FileBuilder b(path);
    b.valid(3, 2);
  }
  expect_user_error({path}, {path, "/keypoints", "num_keypoints = 5"}, {5, {}});
  expect_user_error({path}, {path, "/keypoint_names", "differ"}, {0, {"nose", "tail"}});
  // Shards with different frame sizes.
  const std::string other = dir.file("other.h5");
  {
    FileBuilder b(other);
    b.numeric("/images", H5T_STD_U8LE, {2, 16, 8, 1});
    b.numeric("/keypoints", H5T_IEEE_F32LE, {2, 2, 2});
    b.strings("/keypoint_names", 2);
    b.strings("/frame_paths", 2);
  }
  expect_user_error({path, other}, {other, "/images"});
}

TEST_CASE("empty splits and oversized batches are user errors", "[data]") {
  CHECK_THROWS_AS(check_batch_fits("train", 0, 4, false, "d.h5"), UserError);
  CHECK_THROWS_WITH(check_batch_fits("train", 10, 16, false, "d.h5"),
                    Catch::Contains("d.h5") && Catch::Contains("train batch size (16)"));
  CHECK_THROWS_AS(check_batch_fits("train", 10, 16, true, "d.h5"), UserError);
  CHECK_NOTHROW(check_batch_fits("train", 10, 10, false, "d.h5"));
}

TEST_CASE("shards are one dataset with a global index", "[data]") {
  testing::ScratchDir dir("shards");
  SynthOptions so;
  so.size = 32;
  so.frames = 5;
  so.videos = 1;
  std::filesystem::create_directories(dir.path() / "shards");
  write_synthetic_dataset(dir.file("shards/part-0.h5"), so);
  so.seed = 1;
  so.frames = 7;
  write_synthetic_dataset(dir.file("shards/part-1.h5"), so);
  const auto files = expand_data_files({dir.file("shards/part-*.h5")});
  REQUIRE(files.size() == 2);
  const Dataset ds = Dataset::open(files);
  CHECK(ds.size() == 12);
  CHECK(ds.file_of(4) == files[0]);
  CHECK(ds.file_of(5) == files[1]);
  CHECK(ds.video_id(4) != ds.video_id(5));  // video ids made unique across shards
  std::vector<std::uint8_t> a(ds.frame_bytes());
  ds.read_image(6, a.data());
  const SynthFrame f = render_synth_frame(so, 1);
  CHECK(a == f.image);
  CHECK(ds.keypoints(6)[0] == f.keypoints[0]);
  CHECK_THROWS_AS(expand_data_files({dir.file("shards/none-*.h5")}), UserError);
}
