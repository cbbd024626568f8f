#pragma once
// A DeepLabCut project folder, read for `trainer import --dlc-project DIR`:
//   DIR/config.yaml                        scorer, bodyparts (multi-animal:
//                                          individuals x multianimalbodyparts + uniquebodyparts)
//   DIR/labeled-data/<video>/CollectedData_<scorer>.csv   one per labeled video
//   DIR/labeled-data/<video>/CollectedData_<scorer>.h5    its pandas twin, read when
//                                                         it is the only one there
// Image paths in the label files are relative to DIR (labeled-data/<video>/img.png).
// Folders without labels (DeepLabCut makes them for every extracted video) are
// listed and skipped. Problems are UserErrors naming the file.
#include <string>  // std::string
#include <vector>  // std::vector

#include "data/import.hpp"  // LabeledFolder

namespace trainer::data {

struct DlcProject {
  std::string scorer;
  std::vector<std::string> bodyparts;      // config.yaml's, in label-column order; empty for multi-animal
  std::vector<LabeledFolder> folders;      // one per labeled video, sorted by folder name
  std::vector<std::string> videos;         // their folder names (video id = index)
  std::vector<std::string> unlabeled;      // labeled-data folders with no label file
  std::vector<std::string> read_from_h5;   // folders whose labels came from the .h5 twin
  std::string folder;                      // the project folder (`dir`, or a config.yaml's folder)
  // Multi-animal without `identity: true`: DeepLabCut's individuals are interchangeable
  // (animal1 in one frame may be animal2 in the next), which fixed keypoints cannot learn.
  bool interchangeable_individuals = false;
};

// `dir`: the project folder, or its config.yaml.
DlcProject read_dlc_project(const std::string& dir);

}  // namespace trainer::data
