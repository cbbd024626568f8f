// metrics.csv: header, epoch rows and step rows leaving each other's cells empty,
// empty cells when not validated, rows after the resume point dropped.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "train/metrics_log.hpp"
#include "../text_file.hpp"  // read_text_file

using trainer::testing::read_text_file;

TEST_CASE("metrics.csv keeps the epochs before the resume point", "[train]") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("trainer_unit_metrics_" + std::to_string(getpid()) + ".csv")).string();
  std::remove(path.c_str());
  {
    trainer::train::MetricsLog log(path, 0);
    for (int e = 0; e < 3; ++e) {
      trainer::train::StepMetrics s;
      s.epoch = e;
      s.step = 10 * e + 5;
      s.loss = 0.125;
      s.lr_head = 1e-3;
      log.append(s);
      trainer::train::EpochMetrics m;
      m.epoch = e;
      m.step = 10 * (e + 1);
      m.train_loss = 1.0 / (e + 1);
      if (e == 1) m.val_loss = 0.5, m.val_rmse = 3.25;
      log.append(m);
    }
  }
  std::string text = read_text_file(path);
  CHECK(text.rfind(trainer::train::MetricsLog::header(), 0) == 0);
  CHECK(text.find("\n1,20,0.5,0.5,3.25,") != std::string::npos);
  CHECK(text.find("\n0,10,1,,,") != std::string::npos);
  CHECK(text.find("\n1,15,,,,0.001,0,0.00,0.00,0.125,,,,,,,,,,,\n") != std::string::npos);  // a step row
  const std::string header = trainer::train::MetricsLog::header();
  const auto columns = std::count(header.begin(), header.end(), ',');
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    CHECK(std::count(line.begin(), line.end(), ',') == columns);  // every row fills every column
  {
    trainer::train::MetricsLog log(path, 20);  // resumed after epoch 1 (step 20)
    trainer::train::EpochMetrics m;
    m.epoch = 2;
    m.step = 99;
    log.append(m);
  }
  text = read_text_file(path);
  CHECK(text.find("\n2,30,") == std::string::npos);
  CHECK(text.find("\n2,25,") == std::string::npos);  // a step after the resume point
  CHECK(text.find("\n1,15,") != std::string::npos);
  CHECK(text.find("\n2,99,") != std::string::npos);
  CHECK(text.find("\n1,20,") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("metrics.csv: lightning-pose's per-step scalars and the resized-pixel RMSE in their columns", "[train]") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("trainer_unit_metrics_lp_" + std::to_string(getpid()) + ".csv")).string();
  std::remove(path.c_str());
  {
    trainer::train::MetricsLog log(path, 0);
    trainer::train::StepMetrics s;
    s.step = 3;
    s.loss = 0.25;
    s.rmse = 4.5;
    s.unsupervised_importance = 0.5;
    s.unsupervised = {{"pca_singleview", 2.0, 0.125}};
    s.total_loss = 0.375;
    log.append(s);
    trainer::train::ValidationMetrics v;
    v.step = 4;
    v.loss = 0.5;
    v.rmse = 10;
    v.rmse_input = 2.5;
    log.append(v);
    trainer::train::EpochMetrics m;
    m.step = 5;
    m.train_loss = 1;
    m.val_loss = 0.5, m.val_rmse = 10, m.val_rmse_input = 2.5;
    log.append(m);
  }
  const std::string text = read_text_file(path);
  std::istringstream lines(text);
  std::string header, step, validation, epoch;
  std::getline(lines, header), std::getline(lines, step), std::getline(lines, validation), std::getline(lines, epoch);
  // The cell of `row` under the header's column `name`.
  const auto cell = [&](const std::string& row, const std::string& name) {
    std::vector<std::string> names, cells;
    std::istringstream h(header), r(row);
    for (std::string c; std::getline(h, c, ',');) names.push_back(c);
    for (std::string c; std::getline(r, c, ',');) cells.push_back(c);
    while (cells.size() < names.size()) cells.push_back("");  // getline drops a last empty cell
    const auto at = std::find(names.begin(), names.end(), name) - names.begin();
    REQUIRE(std::size_t(at) < names.size());
    return cells[std::size_t(at)];
  };
  CHECK(cell(step, "train_loss_step") == "0.25");
  CHECK(cell(step, "train_supervised_rmse") == "4.5");
  CHECK(cell(step, "total_unsupervised_importance") == "0.5");
  CHECK(cell(step, "train_pca_singleview_loss") == "2");
  CHECK(cell(step, "total_loss") == "0.375");
  CHECK(cell(step, "train_loss").empty());
  CHECK(cell(validation, "val_supervised_rmse") == "2.5");
  CHECK(cell(validation, "val_rmse_px") == "10");
  CHECK(cell(validation, "train_loss").empty());
  CHECK(cell(epoch, "val_supervised_rmse") == "2.5");
  CHECK(cell(epoch, "train_supervised_rmse").empty());
  std::remove(path.c_str());
}
