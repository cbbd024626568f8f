// metrics.csv: header, one row per epoch, empty cells when not validated, rows
// after the resume point dropped.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "train/metrics_log.hpp"

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("metrics.csv keeps the epochs before the resume point", "[train]") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("trainer_unit_metrics_" + std::to_string(getpid()) + ".csv")).string();
  std::remove(path.c_str());
  {
    trainer::train::MetricsLog log(path, 0);
    for (int e = 0; e < 3; ++e) {
      trainer::train::EpochMetrics m;
      m.epoch = e;
      m.step = 10 * (e + 1);
      m.train_loss = 1.0 / (e + 1);
      if (e == 1) m.val_loss = 0.5, m.val_rmse = 3.25;
      log.append(m);
    }
  }
  std::string text = slurp(path);
  CHECK(text.rfind(trainer::train::MetricsLog::header(), 0) == 0);
  CHECK(text.find("\n1,20,0.5,0.5,3.25,") != std::string::npos);
  CHECK(text.find("\n0,10,1,,,") != std::string::npos);
  {
    trainer::train::MetricsLog log(path, 2);  // resumed after epoch 1
    trainer::train::EpochMetrics m;
    m.epoch = 2;
    m.step = 99;
    log.append(m);
  }
  text = slurp(path);
  CHECK(text.find("\n2,30,") == std::string::npos);
  CHECK(text.find("\n2,99,") != std::string::npos);
  CHECK(text.find("\n1,20,") != std::string::npos);
  std::remove(path.c_str());
}
