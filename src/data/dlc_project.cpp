// DeepLabCut project folders (see dlc_project.hpp).
#include "data/dlc_project.hpp"

#include <yaml-cpp/yaml.h>  // YAML::LoadFile, for the project's config.yaml

#include <algorithm>   // std::sort, std::replace
#include <cctype>      // std::tolower
#include <filesystem>  // std::filesystem

#include "data/label_csv.hpp"  // parse_label_csv
#include "data/pandas_h5.hpp"  // read_pandas_label_h5
#include "util/error.hpp"      // UserError

namespace trainer::data {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> string_list(const YAML::Node& node) {
  std::vector<std::string> out;
  if (node && node.IsSequence())
    for (const auto& item : node) out.push_back(item.as<std::string>());
  return out;
}

bool yaml_true(const YAML::Node& node) {
  if (!node || !node.IsScalar()) return false;
  std::string text = node.as<std::string>();
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text == "true" || text == "yes";
}

}  // namespace

DlcProject read_dlc_project(const std::string& given) {
  std::error_code ec;
  // The project's config.yaml names its folder as well as the folder does.
  const bool config_given = fs::is_regular_file(given, ec) && fs::path(given).filename() == "config.yaml";
  const std::string dir = config_given ? fs::path(given).parent_path().lexically_normal().string() : given;
  const fs::path root(dir.empty() ? "." : dir);
  const fs::path config_path = root / "config.yaml";
  if (!fs::is_directory(root, ec))
    throw UserError("--dlc-project " + dir + " is not a folder",
                    "give the DeepLabCut project folder (with config.yaml), or its config.yaml");
  if (!fs::is_regular_file(config_path, ec))
    throw UserError("--dlc-project " + dir + " has no config.yaml", "give the DeepLabCut project folder itself");
  YAML::Node config;
  try {
    config = YAML::LoadFile(config_path.string());
  } catch (const YAML::Exception& e) {
    throw UserError(config_path.string() + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  DlcProject p;
  p.folder = root.string();
  try {
    if (!config.IsMap() || !config["scorer"] || !config["scorer"].IsScalar())
      throw UserError(config_path.string() + " has no scorer", "DeepLabCut's config.yaml names the labeler: scorer: NAME");
    p.scorer = config["scorer"].as<std::string>();
    const bool multi = yaml_true(config["multianimalproject"]);
    p.interchangeable_individuals = multi && !yaml_true(config["identity"]);
    if (!multi) {
      p.bodyparts = string_list(config["bodyparts"]);
      if (p.bodyparts.empty())
        throw UserError(config_path.string() + " lists no bodyparts", "DeepLabCut's config.yaml: bodyparts: [nose, ...]");
    }
  } catch (const YAML::Exception& e) {
    throw UserError(config_path.string() + ": unexpected content: " + e.msg);
  }

  const fs::path labeled = root / "labeled-data";
  if (!fs::is_directory(labeled, ec))
    throw UserError(dir + " has no labeled-data folder", "label frames in DeepLabCut first (labeled-data/<video>/)");
  std::vector<fs::path> videos;
  for (const auto& entry : fs::directory_iterator(labeled, ec))
    if (entry.is_directory()) videos.push_back(entry.path());
  if (ec) throw UserError("cannot list " + labeled.string() + ": " + ec.message());
  std::sort(videos.begin(), videos.end());
  const std::string stem = "CollectedData_" + p.scorer;
  for (const auto& video : videos) {
    const std::string name = video.filename().string();
    // DeepLabCut's own extras (name_labeled: plots of the labels) hold no label files.
    const fs::path csv = video / (stem + ".csv"), h5 = video / (stem + ".h5");
    LabeledFolder folder;
    folder.root = root.string();
    if (fs::is_regular_file(csv, ec)) {
      folder.table = parse_label_csv(csv.string());
    } else if (fs::is_regular_file(h5, ec)) {
      folder.table = read_pandas_label_h5(h5.string(), p.bodyparts);
      p.read_from_h5.push_back(name);
    } else {
      p.unlabeled.push_back(name);
      continue;
    }
    if (!p.bodyparts.empty() && folder.table.keypoint_names != p.bodyparts) {
      std::string list;
      for (const auto& b : folder.table.keypoint_names) list += (list.empty() ? "" : ", ") + b;
      throw UserError(folder.table.source + ": its bodyparts (" + list + ") differ from " + config_path.string() + "'s",
                      "relabel or fix config.yaml's bodyparts so they agree");
    }
    for (auto& path : folder.table.frame_paths) {
      std::replace(path.begin(), path.end(), '\\', '/');  // projects labeled on Windows
      // Older DeepLabCut writes bare image names; the images live in the video's folder.
      if (path.find('/') == std::string::npos) path = "labeled-data/" + name + "/" + path;
    }
    p.videos.push_back(name);
    p.folders.push_back(std::move(folder));
  }
  if (p.folders.empty())
    throw UserError(labeled.string() + " has no " + stem + ".csv (or .h5) in any video folder",
                    "the scorer in config.yaml names the label files: CollectedData_<scorer>.csv");
  return p;
}

}  // namespace trainer::data
