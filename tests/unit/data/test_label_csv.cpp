// CollectedData.csv parsing: DeepLabCut layouts, a third coordinate, and errors with file:line.
#include <catch2/catch.hpp>

#include <cmath>       // std::isnan
#include <cstdlib>     // std::getenv
#include <filesystem>  // std::filesystem::exists

#include "data/import.hpp"
#include "data/label_csv.hpp"
#include "util/error.hpp"

using namespace trainer::data;

TEST_CASE("the DeepLabCut 3-row header with x, y", "[data]") {
  const LabelTable t = parse_label_csv_text(
      "scorer,me,me,me,me\r\n"
      "bodyparts,nose,nose,tail,tail\r\n"
      "coords,x,y,x,y\r\n"
      "labeled-data/a.png,1.5,2.5,,\r\n"
      "labeled-data/b.png,3,4,5e1,NaN\r\n",
      "c.csv");
  REQUIRE(t.num_frames() == 2);
  CHECK(t.keypoint_names == std::vector<std::string>{"nose", "tail"});
  CHECK(t.frame_paths == std::vector<std::string>{"labeled-data/a.png", "labeled-data/b.png"});
  CHECK(t.lines == std::vector<int>{4, 5});
  CHECK(t.keypoints[0] == 1.5f);
  CHECK(t.keypoints[1] == 2.5f);
  CHECK(std::isnan(t.keypoints[2]));
  CHECK(t.keypoints[6] == 50.0f);
  CHECK(std::isnan(t.keypoints[7]));
  CHECK(t.skipped_coords.empty());
}

TEST_CASE("a third coordinate (likelihood, visible) is not mistaken for x or y", "[data]") {
  const LabelTable t = parse_label_csv_text(
      "scorer,s,s,s,s,s,s\n"
      "bodyparts,nose,nose,nose,paw,paw,paw\n"
      "coords,x,y,likelihood,y,x,visible\n"
      "img.png,10,20,0.9,40,30,1\n",
      "c.csv");
  REQUIRE(t.num_keypoints() == 2);
  CHECK(t.keypoints == std::vector<float>{10, 20, 30, 40});  // paw's x and y in the stated order
  CHECK(t.skipped_coords == std::vector<std::string>{"likelihood"});
  // visible is read (test_visibility.cpp); nose has no such column: no flag.
  CHECK(t.visibility == std::vector<std::uint8_t>{255, 1});
}

TEST_CASE("multi-column index and multi-animal header", "[data]") {
  const LabelTable t = parse_label_csv_text(
      "scorer,,,s,s\n"
      "bodyparts,,,nose,nose\n"
      "coords,,,x,y\n"
      "labeled-data,video1,img0.png,1,2\n",
      "c.csv");
  CHECK(t.frame_paths == std::vector<std::string>{"labeled-data/video1/img0.png"});
  const LabelTable m = parse_label_csv_text(
      "scorer,s,s,s,s\n"
      "individuals,mouse1,mouse1,mouse2,mouse2\n"
      "bodyparts,nose,nose,nose,nose\n"
      "coords,x,y,x,y\n"
      "img.png,1,2,3,4\n",
      "c.csv");
  CHECK(m.keypoint_names == std::vector<std::string>{"mouse1_nose", "mouse2_nose"});
}

namespace {
void expect_csv_error(const std::string& text, const std::string& fragment) {
  try {
    parse_label_csv_text(text, "proj/CollectedData.csv");
    FAIL("no error for: " << text);
  } catch (const trainer::UserError& e) {
    INFO("message: " << e.what());
    CHECK(std::string(e.what()).find(fragment) != std::string::npos);
  }
}
const std::string kHeader = "scorer,s,s\nbodyparts,nose,nose\ncoords,x,y\n";
}  // namespace

TEST_CASE("CSV errors carry file:line", "[data]") {
  expect_csv_error(kHeader + "a.png,1,2\nb.png,1\n", "proj/CollectedData.csv:5: expected 3 columns, found 2");
  expect_csv_error(kHeader + "a.png,1,2\na.png,3,4\n", "proj/CollectedData.csv:5: duplicate frame path a.png (first at line 4)");
  expect_csv_error(kHeader + "a.png,1,abc\n", "proj/CollectedData.csv:4: column 3 (nose y): 'abc' is not a number");
  expect_csv_error(kHeader + "a.png,1,2x\n", ":4: column 3");
  expect_csv_error("index,x\n0,1\n", "proj/CollectedData.csv:1: first header row must start with 'scorer'");
  expect_csv_error("scorer,s,s\ncoords,x,y\n", "'bodyparts'");
  expect_csv_error("scorer,s,s\nbodyparts,nose,nose\ncoords,x,x\n", ":3: bodypart 'nose' has two 'x' columns");
  expect_csv_error("scorer,s,s\nbodyparts,nose,nose\ncoords,x,likelihood\n", "lacks its y column");
  expect_csv_error(kHeader, "no labeled frames");
  expect_csv_error("", "is empty");
  CHECK_THROWS_AS(parse_label_csv("/nonexistent/CollectedData.csv"), trainer::UserError);
}

TEST_CASE("--resize parsing", "[data]") {
  int h = 0, w = 0;
  parse_resize("256x320", &h, &w);
  CHECK(h == 256);
  CHECK(w == 320);
  CHECK_THROWS_AS(parse_resize("256", &h, &w), trainer::UserError);
  CHECK_THROWS_AS(parse_resize("0x5", &h, &w), trainer::UserError);
  CHECK_THROWS_AS(parse_resize("5x5x", &h, &w), trainer::UserError);
}

TEST_CASE("the mirror-mouse example CSV", "[data]") {
  const char* env = std::getenv("TRAINER_SHARED_DATA");
  const std::string shared = env ? env : std::string(TRAINER_SOURCE_DIR) + "/../shared/data";
  const std::string csv = shared + "/mirror-mouse-example/CollectedData.csv";
  if (!std::filesystem::exists(csv)) {
    WARN("SKIPPED: " << csv << " not found (set TRAINER_SHARED_DATA)");
    return;
  }
  const LabelTable t = parse_label_csv(csv);
  CHECK(t.num_frames() == 90);
  CHECK(t.num_keypoints() == 17);
  CHECK(t.keypoint_names.front() == "paw1LH_top");
  CHECK(t.frame_paths.front() == "labeled-data/img01.png");
  CHECK(t.keypoints[0] == 77.25f);  // first row: paw1LH_top x, y
  CHECK(t.keypoints[1] == 36.25f);
  CHECK(std::isnan(t.keypoints[8]));  // tailBase_top is empty in the first row
}
