// The `devices` table (PyTorch Lightning's) and every error, plus GPU choice per rank.
#include <catch2/catch.hpp>

#include "runtime/devices.hpp"
#include "user_error_matchers.hpp"

using namespace trainer;
using namespace trainer::runtime;
using trainer::test::require_user_error;

namespace {
std::vector<int> ids(const std::string& text, int visible) { return resolve_devices(parse_devices(text), visible); }
}  // namespace

TEST_CASE("devices: a count selects the first N GPUs", "[runtime]") {
  CHECK(ids("3", 4) == std::vector<int>{0, 1, 2});
  CHECK(ids(" 3 ", 4) == std::vector<int>{0, 1, 2});
  CHECK(ids("1", 1) == std::vector<int>{0});
  const auto r = parse_devices("3");
  CHECK(r.kind == DeviceRequest::Kind::count);
  CHECK(r.count == 3);
}

TEST_CASE("devices: lists in every spelling select those ids", "[runtime]") {
  for (const char* text : {"[1, 3]", "1, 3", "1,3", "[1,3]", " [ 1 , 3 ] "}) {
    INFO(text);
    CHECK(ids(text, 4) == std::vector<int>{1, 3});
  }
  CHECK(ids("3,", 4) == std::vector<int>{3});  // Lightning: a trailing comma makes a list
  CHECK(ids("[2]", 4) == std::vector<int>{2});
}

TEST_CASE("devices: -1 and unset mean all visible GPUs", "[runtime]") {
  CHECK(ids("-1", 4) == std::vector<int>{0, 1, 2, 3});
  CHECK(ids("-1", 2) == std::vector<int>{0, 1});
  CHECK(ids("", 4) == std::vector<int>{0, 1, 2, 3});
  CHECK_FALSE(parse_devices("").is_set());
  CHECK(parse_devices("-1").is_set());
}

TEST_CASE("devices: 0 or an empty list with the gpu accelerator is an error", "[runtime]") {
  CHECK(parse_devices("0").asks_for_none());
  CHECK(parse_devices("[]").asks_for_none());
  require_user_error([] { ids("0", 4); }, "devices=\"0\" selects no GPU", "accelerator=cpu");
  require_user_error([] { ids("[]", 4); }, "devices=\"[]\" selects no GPU");
}

TEST_CASE("devices: duplicates are an error naming the id", "[runtime]") {
  require_user_error([] { parse_devices("[1, 1]"); }, "devices=\"[1, 1]\": GPU 1 is listed twice");
  require_user_error([] { parse_devices("0,2,0"); }, "GPU 0 is listed twice");
}

TEST_CASE("devices: ids beyond the visible GPUs are an error listing both", "[runtime]") {
  require_user_error([] { ids("8", 4); }, "you requested GPUs [0, 1, 2, 3, 4, 5, 6, 7] but this node has [0, 1, 2, 3]",
                     "CUDA_VISIBLE_DEVICES");
  require_user_error([] { ids("[1, 5]", 2); }, "you requested GPUs [1, 5] but this node has [0, 1]");
  const auto e = trainer::test::user_error_of([] { resolve_devices(parse_devices("3"), 2, "4,5"); });
  CHECK(e.hint().find("CUDA_VISIBLE_DEVICES (=4,5)") != std::string::npos);
}

TEST_CASE("devices: negatives other than -1 are an error", "[runtime]") {
  require_user_error([] { parse_devices("-2"); }, "devices=\"-2\": negative values other than -1");
  require_user_error([] { parse_devices("[-1, 2]"); }, "cannot be negative");
  require_user_error([] { parse_devices("1,-3"); }, "cannot be negative");
}

TEST_CASE("devices: text that is not a number is an error naming the input", "[runtime]") {
  for (const char* text : {"abc", "gpu", "1.5", "[1, x]", "auto", "2 3", "[1, 2", "-"}) {
    INFO(text);
    const auto e = trainer::test::user_error_of([&] { parse_devices(text); });
    CHECK(std::string(e.what()).find(std::string("devices=\"") + text + "\"") != std::string::npos);
    CHECK_FALSE(e.hint().empty());
  }
}

TEST_CASE("devices: no visible GPU at all is an error", "[runtime]") {
  require_user_error([] { ids("", 0); }, "no GPU is visible");
  require_user_error([] { ids("-1", 0); }, "no GPU is visible");
  require_user_error([] { ids("1", 0); }, "this node has []");
}

TEST_CASE("GPU choice: the local_rank-th entry of the device list", "[runtime]") {
  std::string warning;
  CHECK(select_device(parse_devices("[1, 3]"), 4, 0, 2, "", &warning) == 1);
  CHECK(select_device(parse_devices("[1, 3]"), 4, 1, 2, "", &warning) == 3);
  CHECK(warning.empty());
  CHECK(select_device(parse_devices(""), 4, 2, 4, "", &warning) == 2);
}

TEST_CASE("GPU choice: a process that sees exactly one GPU uses it", "[runtime]") {
  // SLURM bound one GPU to each of 4 tasks: every rank sees "GPU 0".
  for (int local = 0; local < 4; ++local) {
    CHECK(select_device(parse_devices(""), 1, local, 4, "", nullptr) == 0);
    CHECK(select_device(parse_devices("4"), 1, local, 4, "", nullptr) == 0);
  }
  require_user_error([] { select_device(parse_devices("2"), 1, 0, 4, "", nullptr); }, "names 2 GPU(s) per node",
                     "--ntasks-per-node=2");
}

TEST_CASE("GPU choice: more ranks on a node than GPUs is an error", "[runtime]") {
  require_user_error([] { select_device(parse_devices("2"), 4, 0, 4, "", nullptr); },
                     "4 ranks run on this node but devices=\"2\" gives only 2 GPU(s)", "--ntasks-per-node=2");
  require_user_error([] { select_device(parse_devices(""), 2, 0, 3, "", nullptr); }, "devices (all visible)",
                     "--ntasks-per-node=2");
}

TEST_CASE("GPU choice: fewer ranks than GPUs warns about idle GPUs", "[runtime]") {
  std::string warning;
  CHECK(select_device(parse_devices(""), 4, 0, 2, "", &warning) == 0);
  CHECK(warning.find("GPUs [2, 3] stay idle") != std::string::npos);
}

TEST_CASE("devices: blanks are an error, not all GPUs", "[runtime]") {
  require_user_error([] { parse_devices(" "); }, "only blanks", "-1 (all visible GPUs)");
  require_user_error([] { parse_devices("\t "); }, "only blanks");
}
