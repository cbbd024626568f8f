// Context frames of imported labels follow lightning-pose's rule (utils/io.py
// get_context_img_paths + its dataset): neighbours t-2..t+2 by file name in the same
// folder, floored at 0, labelled or not (unlabelled ones are stored as context-only
// frames), the centre frame where a neighbour does not exist.
#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>  // cv::Mat

#include "data/context.hpp"  // ContextIndex
#include "data/dataset.hpp"  // Dataset
#include "data/import.hpp"   // import_project
#include "data/loader.hpp"   // Loader
#include "data/media_loader.hpp"  // media_api: write_image
#include "scratch_dir.hpp"   // ScratchDir

using namespace trainer::data;

namespace {
bool write_png(const std::string& path, const cv::Mat& image) {
  return media_api("writing a test image").write_image(path, image);
}
}  // namespace

TEST_CASE("import stores unlabelled neighbours as context and ContextIndex uses them", "[data][context][media]") {
  testing::ScratchDir dir("context-import");
  std::filesystem::create_directories(dir.file("labeled-data"));
  // img00..img05 on disk, each a flat grey of 10 * its number; still.png has no number.
  for (int i = 0; i <= 5; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "labeled-data/img%02d.png", i);
    REQUIRE(write_png(dir.file(name), cv::Mat(16, 20, CV_8UC1, cv::Scalar(10 * i))));
  }
  REQUIRE(write_png(dir.file("labeled-data/img10.png"), cv::Mat(16, 20, CV_8UC1, cv::Scalar(100))));
  REQUIRE(write_png(dir.file("labeled-data/still.png"), cv::Mat(16, 20, CV_8UC1, cv::Scalar(200))));
  std::ofstream(dir.file("CollectedData.csv")) << "scorer,s,s\nbodyparts,nose,nose\ncoords,x,y\n"
                                                  "labeled-data/img02.png,1,2\nlabeled-data/img03.png,3,4\n"
                                                  "labeled-data/img10.png,5,6\nlabeled-data/still.png,7,8\n";
  ImportOptions o;
  o.csv = dir.file("CollectedData.csv");
  o.out = dir.file("d.h5");
  const ImportSummary s = import_project(o);
  CHECK(s.frames == 4);
  CHECK(s.context_frames == 4);  // img00, img01, img04, img05 (img08, 09, 11, 12 do not exist)

  const Dataset ds = Dataset::open({dir.file("d.h5")});
  REQUIRE(ds.has_video_info());
  REQUIRE(ds.context_size() == 4);
  const ContextIndex ctx(ds);
  // The value of a context entry: the grey level of the frame it points at.
  std::vector<std::uint8_t> pixels(ds.frame_bytes());
  auto level = [&](std::int64_t index) {
    if (index >= 0) ds.read_image(index, pixels.data());
    else ds.read_context_image(-1 - index, pixels.data());
    return static_cast<int>(pixels[0]);
  };
  auto levels = [&](std::int64_t frame) {
    std::array<int, 5> out{};
    const auto around = ctx.around(frame);
    for (int j = 0; j < 5; ++j) out[static_cast<std::size_t>(j)] = level(around[static_cast<std::size_t>(j)]);
    return out;
  };
  using L = std::array<int, 5>;
  CHECK(levels(0) == L{0, 10, 20, 30, 40});    // img02: img00, img01 (context only), 02, 03 (labelled), 04
  CHECK(levels(1) == L{10, 20, 30, 40, 50});   // img03
  CHECK(levels(2) == L{100, 100, 100, 100, 100});  // img10: no neighbours on disk -> the centre
  CHECK(levels(3) == L{200, 200, 200, 200, 200});  // still.png: no number -> itself

  // The loader reads context-only frames into a context batch.
  LoaderOptions lo;
  lo.batch_size = 1;
  lo.height = lo.width = 32;
  lo.context = true;
  Loader loader(ds, lo);
  loader.start_epoch(0, {{0, true}});
  const Batch* b = loader.next();
  REQUIRE(b);
  REQUIRE(b->context_frames == 5);
  const std::size_t plane = 32 * 32;
  // Frame t-2 (img00, level 0) and t+2 (img04, level 40) differ after normalization.
  CHECK(b->images[0] < b->images[4 * 3 * plane]);
}
