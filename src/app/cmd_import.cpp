// `trainer import`: convert a DeepLabCut / lightning-pose project to HDF5 (see data/import.hpp).
#include <boost/program_options.hpp>  // options_description, command_line_parser

#include <iostream>  // std::cout, std::cerr

#include "app/commands.hpp"  // run_import, Args
#include "app/output_files.hpp" // remove_stale_temp_files_in
#include "util/atomic_write.hpp" // folder_of, check_output_file
#include "data/dlc_project.hpp"  // read_dlc_project
#include "data/import.hpp"   // ImportOptions, import_project, import_label_tables, parse_resize
#include "util/error.hpp"    // UserError
#include "util/log.hpp"      // Log

namespace trainer::app {

int run_import(const Args& args) {
  namespace po = boost::program_options;
  data::ImportOptions o;
  std::string resize;
  po::options_description desc(
      "usage: trainer import --csv PROJECT/CollectedData.csv --out data.h5 [options]\n"
      "       trainer import --dlc-project DLC_PROJECT --out data.h5 [options]\n"
      "Convert a labeled DeepLabCut / lightning-pose project (3-row header scorer/bodyparts/coords,\n"
      "PNG or JPEG frames) into the trainer's HDF5 dataset format (docs/DATA.md). --dlc-project reads\n"
      "a DeepLabCut project folder: config.yaml and every labeled-data/<video>/CollectedData_<scorer>.csv\n"
      "(or its .h5 twin when that is the only one), into one file with a video id per folder.\n"
      "options");
  desc.add_options()
      ("help,h", "show this help")
      ("csv", po::value(&o.csv), "label file, e.g. PROJECT/CollectedData.csv (DeepLabCut's pandas .h5 works too)")
      ("dlc-project", po::value<std::string>()->value_name("DIR"),
       "a DeepLabCut project folder (instead of --csv): all its labeled videos in one file")
      ("out", po::value(&o.out), "output HDF5 file (required)")
      ("root", po::value(&o.root)->default_value(""), "folder the image paths are relative to (default: the CSV's folder)")
      ("resize", po::value(&resize)->default_value(""),
       "HxW: resize every frame (keypoints scaled with it); needed when frames differ in size")
      ("deflate", po::value(&o.deflate_level)->default_value(0), "gzip level of the frames, 0..9 (0: none)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UserError(std::string("import: ") + e.what(), "run `trainer import --help`");
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (!resize.empty()) data::parse_resize(resize, &o.resize_height, &o.resize_width);
  if (o.deflate_level < 0 || o.deflate_level > 9) throw UserError("import: --deflate must be between 0 and 9");
  if (vm.count("dlc-project") && !o.csv.empty())
    throw UserError("import: give --csv or --dlc-project, not both", "run `trainer import --help`");
  if (vm.count("dlc-project") && !o.root.empty())
    throw UserError("import: --root does not apply to --dlc-project",
                    "image paths of a DeepLabCut project are relative to its folder");
  if (!vm.count("dlc-project") && o.csv.empty())
    throw UserError("import: --csv or --dlc-project is required", "run `trainer import --help`");
  if (o.out.empty()) throw UserError("import: --out is required", "run `trainer import --help`");
  check_output_file(o.out, "import: --out");  // before the work, not at its rename
  remove_stale_temp_files_in(folder_of(o.out), Log(0));
  data::ImportSummary s;
  std::string from = o.csv;
  if (vm.count("dlc-project")) {
    const data::DlcProject project = data::read_dlc_project(vm["dlc-project"].as<std::string>());
    from = project.folder;
    o.csv = from + "/config.yaml";  // the file's "source" attribute
    if (project.interchangeable_individuals)
      std::cerr << "warning: " << o.csv << " is a multi-animal project without `identity: true`: its individuals "
                   "are interchangeable, but each individual's keypoints are imported as keypoints of their own "
                   "(individual_bodypart), as lightning-pose takes them, so a frame that labels animal1 where "
                   "another labels animal2 teaches contradictory targets (hint: train only when every frame names "
                   "the same animal the same way, e.g. DeepLabCut's identity: true projects)\n";
    s = data::import_label_tables(project.folders, o);
    std::cout << "DeepLabCut project " << from << " (scorer " << project.scorer << "): " << project.videos.size()
              << " labeled videos:";
    for (std::size_t i = 0; i < project.videos.size(); ++i)
      std::cout << " " << project.videos[i] << "=" << i << "(" << project.folders[i].table.num_frames() << ")";
    std::cout << "\n";
    if (!project.read_from_h5.empty()) {
      std::cout << "read from the .h5 label file (no .csv):";
      for (const auto& v : project.read_from_h5) std::cout << " " << v;
      std::cout << "\n";
    }
    if (!project.unlabeled.empty()) {
      std::cout << "skipped folders without CollectedData_" << project.scorer << ".csv/.h5:";
      for (const auto& v : project.unlabeled) std::cout << " " << v;
      std::cout << "\n";
    }
  } else {
    s = data::import_project(o);
  }
  std::cout << "imported " << s.frames << " frames (" << s.height << "x" << s.width << "x" << s.channels << ", "
            << s.keypoints << " keypoints) from " << from << " to " << o.out << "\n";
  if (s.context_frames > 0)
    std::cout << "stored " << s.context_frames << " unlabelled neighbour frames as context for heatmap_mhcrnn "
              << "(lightning-pose's frames t-2..t+2)\n";
  if (!s.skipped_coords.empty()) {
    std::cout << "skipped coordinate columns:";
    for (const auto& c : s.skipped_coords) std::cout << " " << c;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace trainer::app
