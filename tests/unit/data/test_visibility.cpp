// lightning-pose's `visible` label column (2.1.2+): parsed from the label CSV, kept by
// `trainer import` as /visibility (format version 2; files without it stay version 1
// and open as before), read back per frame, and carried by the loader into batches,
// swapped with the keypoints on a horizontal flip. What each flag does to the target
// is tested in tests/unit/train/test_label_target.cpp.
#include <catch2/catch.hpp>

#include <cmath>       // std::isnan, NAN
#include <cstdint>     // std::uint8_t
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <opencv2/core.hpp>  // cv::Mat

#include "data/dataset.hpp"       // Dataset
#include "data/format.hpp"        // DatasetWriter, kFormatVersion
#include "data/import.hpp"        // import_project
#include "data/label_csv.hpp"     // parse_label_csv_text
#include "data/loader.hpp"        // Loader
#include "data/media_loader.hpp"  // media_api: write_image
#include "data/sampler.hpp"       // distributed_rows
#include "data/visibility.hpp"    // kNotLabeled, kOccluded, kVisible, kNoVisibilityFlag
#include "scratch_dir.hpp"        // ScratchDir
#include "util/error.hpp"         // UserError
#include "util/h5.hpp"            // h5::Handle, H5_OWN
#include "util/h5_io.hpp"         // h5::read_int_attribute

using namespace trainer;
using namespace trainer::data;

namespace {
// Each case of the column: 0 with x, y; 1 with x, y; 1 without; 2; an empty cell.
const char* const kCsv =
    "scorer,s,s,s,s,s,s\n"
    "bodyparts,nose,nose,nose,paw,paw,paw\n"
    "coords,x,y,visible,x,y,visible\n"
    "labeled-data/img01.png,10,12,0,4,5,1\n"
    "labeled-data/img02.png,,,1,6,7,2\n"
    "labeled-data/img03.png,8,9,,,,2.0\n";

std::int64_t format_version_of(const std::string& path) {
  h5::Handle file = H5_OWN(file, H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  std::int64_t version = 0;
  REQUIRE(h5::read_int_attribute(file.get(), "format_version", &version));
  return version;
}
}  // namespace

TEST_CASE("visible: the label CSV's flags per keypoint, empty cells without one", "[data][visibility]") {
  const LabelTable t = parse_label_csv_text(kCsv, "c.csv");
  REQUIRE(t.num_keypoints() == 2);
  CHECK(t.skipped_coords.empty());  // visible is read, not skipped
  CHECK(t.visibility == std::vector<std::uint8_t>{kNotLabeled, kOccluded, kOccluded, kVisible, kNoVisibilityFlag,
                                                  kVisible});
  // The coordinates stay as written, whatever the flag (the metrics use them).
  CHECK(t.keypoints[0] == 10.f);  // flagged 0, still has x, y
  CHECK(t.keypoints[2] == 4.f);   // flagged 1 with x, y
  CHECK(std::isnan(t.keypoints[4]));  // flagged 1 without x, y
}

TEST_CASE("visible: a file without the column has no flags", "[data][visibility]") {
  const LabelTable t = parse_label_csv_text("scorer,s,s\nbodyparts,nose,nose\ncoords,x,y\nimg.png,1,2\n", "c.csv");
  CHECK(t.visibility.empty());
}

TEST_CASE("visible: a value other than 0, 1 or 2 is refused with file:line", "[data][visibility]") {
  for (const char* bad : {"3", "1.5", "-1", "yes"}) {
    INFO(bad);
    const std::string text = std::string("scorer,s,s,s\nbodyparts,nose,nose,nose\ncoords,x,y,visible\nimg.png,1,2,") +
                             bad + "\n";
    try {
      parse_label_csv_text(text, "c.csv");
      FAIL("no error");
    } catch (const UserError& e) {
      CHECK_THAT(e.what(), Catch::Contains("c.csv:4: column 4 (nose visible): '" + std::string(bad) +
                                           "' is not a visibility flag"));
      CHECK_THAT(e.hint(), Catch::Contains("0 (not labelled), 1 (occluded) or 2 (visible)"));
    }
  }
  CHECK_THROWS_WITH(parse_label_csv_text("scorer,s,s,s,s\nbodyparts,nose,nose,nose,nose\ncoords,x,y,visible,visible\n"
                                         "img.png,1,2,2,2\n",
                                         "c.csv"),
                    Catch::Contains("bodypart 'nose' has two 'visible' columns"));
}

TEST_CASE("visible: import keeps the flags as /visibility (version 2), the loader carries them",
          "[data][visibility][media]") {
  testing::ScratchDir dir("visibility-import");
  std::filesystem::create_directories(dir.file("labeled-data"));
  for (const char* name : {"img01.png", "img02.png", "img03.png"})
    REQUIRE(media_api("writing a test image")
                .write_image(dir.file(std::string("labeled-data/") + name), cv::Mat(16, 20, CV_8UC1, cv::Scalar(90))));
  std::ofstream(dir.file("CollectedData.csv")) << kCsv;
  ImportOptions o;
  o.csv = dir.file("CollectedData.csv");
  o.out = dir.file("d.h5");
  const ImportSummary s = import_project(o);
  CHECK(s.visibility);
  CHECK(s.skipped_coords.empty());
  CHECK(format_version_of(o.out) == kFormatVersion);

  const Dataset ds = Dataset::open({o.out});
  REQUIRE(ds.has_visibility());
  CHECK(ds.visibility(0)[0] == kNotLabeled);
  CHECK(ds.visibility(0)[1] == kOccluded);
  CHECK(ds.visibility(1)[0] == kOccluded);
  CHECK(ds.visibility(2)[0] == kNoVisibilityFlag);
  CHECK(ds.visibility(2)[1] == kVisible);
  CHECK(ds.occluded_with_coordinates() == 1);  // paw of img01: flagged 1, has x, y

  LoaderOptions lo;
  lo.batch_size = 3;
  lo.height = lo.width = 32;
  Loader loader(ds, lo);
  SamplerOptions so;
  so.shuffle = false;
  loader.start_epoch(0, distributed_rows({0, 1, 2}, so, 0));
  const Batch* b = loader.next();
  REQUIRE(b != nullptr);
  CHECK(b->visibility == std::vector<std::uint8_t>{kNotLabeled, kOccluded, kOccluded, kVisible, kNoVisibilityFlag,
                                                   kVisible});
  CHECK(b->missing == std::vector<std::uint8_t>{0, 0, 1, 0, 0, 1});  // NaN in the file, whatever the flag
}

TEST_CASE("visible: a file without the column stays version 1 and has no flags; shards mix",
          "[data][visibility]") {
  testing::ScratchDir dir("visibility-shards");
  DatasetShape shape;
  shape.num_frames = 2;
  shape.height = shape.width = 8;
  shape.channels = 1;
  shape.keypoint_names = {"nose", "paw"};
  const std::vector<std::uint8_t> image(64, 7);
  const float kp[4] = {1.f, 2.f, 3.f, 4.f};
  for (const bool flags : {false, true}) {
    WriterOptions wo;
    wo.with_visibility = flags;
    DatasetWriter writer(dir.file(flags ? "with.h5" : "without.h5"), shape, wo);
    const std::uint8_t vis[2] = {kOccluded, kVisible};
    writer.write_frame(0, image.data(), kp, "a.png", 0, 0, flags ? vis : nullptr);
    writer.write_frame(1, image.data(), kp, "b.png");  // no flags given: none
    writer.finish();
  }
  CHECK(format_version_of(dir.file("without.h5")) == kFormatVersionWithoutVisibility);
  CHECK(format_version_of(dir.file("with.h5")) == kFormatVersion);
  CHECK_FALSE(Dataset::open({dir.file("without.h5")}).has_visibility());
  CHECK(Dataset::open({dir.file("without.h5")}).visibility(0) == nullptr);

  // A shard without /visibility among shards with it: its frames have no flag.
  const Dataset mixed = Dataset::open({dir.file("without.h5"), dir.file("with.h5")});
  REQUIRE(mixed.has_visibility());
  CHECK(mixed.visibility(0)[0] == kNoVisibilityFlag);
  CHECK(mixed.visibility(1)[1] == kNoVisibilityFlag);
  CHECK(mixed.visibility(2)[0] == kOccluded);
  CHECK(mixed.visibility(2)[1] == kVisible);
  CHECK(mixed.visibility(3)[0] == kNoVisibilityFlag);
}

TEST_CASE("visible: a horizontal flip swaps the flags with their keypoints", "[data][visibility]") {
  testing::ScratchDir dir("visibility-hflip");
  DatasetShape shape;
  shape.num_frames = 8;
  shape.height = shape.width = 32;
  shape.channels = 1;
  shape.keypoint_names = {"paw_left", "nose", "paw_right"};
  {
    WriterOptions wo;
    wo.with_visibility = true;
    DatasetWriter writer(dir.file("h.h5"), shape, wo);
    const std::vector<std::uint8_t> image(32 * 32, 100);
    const float kp[6] = {8.f, 10.f, 16.f, 16.f, 20.f, 10.f};
    const std::uint8_t vis[3] = {kOccluded, kVisible, kNotLabeled};
    for (int i = 0; i < 8; ++i) writer.write_frame(i, image.data(), kp, "f" + std::to_string(i) + ".png", 0, 0, vis);
    writer.finish();
  }
  const Dataset ds = Dataset::open({dir.file("h.h5")});
  LoaderOptions o;
  o.batch_size = 8;
  o.height = o.width = 32;
  o.hflip = true;
  o.seed = 5;
  Loader loader(ds, o);
  loader.start_epoch(0, distributed_rows({0, 1, 2, 3, 4, 5, 6, 7}, SamplerOptions{}, 0));
  const Batch* b = loader.next();
  REQUIRE(b != nullptr);
  int mirrored = 0;
  for (int r = 0; r < b->size; ++r) {
    const std::uint8_t* vis = b->visibility.data() + r * 3;
    const float* kp = b->keypoints.data() + r * 6;
    CHECK(vis[1] == kVisible);
    if (kp[0] == Approx(32 - 20.f)) {  // flipped: the right paw now in the left slot
      ++mirrored;
      CHECK(vis[0] == kNotLabeled);
      CHECK(vis[2] == kOccluded);
    } else {
      CHECK(vis[0] == kOccluded);
      CHECK(vis[2] == kNotLabeled);
    }
  }
  CHECK(mirrored > 0);
  CHECK(mirrored < b->size);
}
