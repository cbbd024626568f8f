// `trainer synth`: generate the synthetic demo dataset (see data/synth.hpp).
#include <boost/program_options.hpp>  // options_description, command_line_parser

#include <iostream>  // std::cout

#include "app/commands.hpp"  // run_synth, Args
#include "app/output_files.hpp" // remove_stale_temp_files_in
#include "util/atomic_write.hpp" // folder_of, check_output_file
#include "data/media_loader.hpp"  // media_api: --export-dir needs the media module
#include "data/synth.hpp"    // SynthOptions, write_synthetic_dataset, export_synthetic_project
#include "util/error.hpp"    // UserError
#include "util/log.hpp"      // Log

namespace trainer::app {

int run_synth(const Args& args) {
  namespace po = boost::program_options;
  data::SynthOptions o;
  std::string out, export_dir;
  po::options_description desc(
      "usage: trainer synth --out FILE [options]\n"
      "Generate frames of a synthetic articulated animal with its keypoints (deterministic for a seed).\n"
      "options");
  desc.add_options()
      ("help,h", "show this help")
      ("out", po::value(&out), "output HDF5 file (required)")
      ("frames", po::value(&o.frames)->default_value(o.frames), "number of frames (2 .. 1000000)")
      ("size", po::value(&o.size)->default_value(o.size), "frame width and height in pixels")
      ("keypoints", po::value(&o.keypoints)->default_value(o.keypoints),
       "keypoints per frame (1..15: nose, ear_left, ear_right, paw_LF, paw_RF, paw_LH, paw_RH, tail_base, tail_tip, "
       "head, neck, tail_mid, body_center, tail_1, tail_3)")
      ("seed", po::value(&o.seed)->default_value(o.seed), "random seed")
      ("videos", po::value(&o.videos)->default_value(o.videos),
       "split the frames into V videos of smoothly moving poses (writes /video_id, /frame_number for "
       "heatmap_mhcrnn); 0: independent frames")
      ("channels", po::value(&o.channels)->default_value(o.channels), "3 (RGB) or 1 (grayscale)")
      ("deflate", po::value(&o.deflate_level)->default_value(o.deflate_level), "gzip level of the frames (0: none)")
      ("export-dir", po::value(&export_dir),
       "also write the frames as a DeepLabCut/lightning-pose project (DIR/CollectedData.csv, DIR/labeled-data/)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UserError(std::string("synth: ") + e.what(), "run `trainer synth --help`");
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (out.empty() && export_dir.empty()) throw UserError("synth: --out FILE is required", "run `trainer synth --help`");
  data::validate(o);
  if (!out.empty()) check_output_file(out, "synth: --out");  // before the work, not at its rename
  // Refused before the HDF5 file is written, not after it.
  if (!export_dir.empty()) data::media_api("writing the frames of --export-dir as PNG files");
  if (!out.empty()) {
    remove_stale_temp_files_in(folder_of(out), Log(0));
    data::write_synthetic_dataset(out, o);
    std::cout << "wrote " << out << ": " << o.frames << " frames " << o.size << "x" << o.size << "x" << o.channels
              << ", " << o.keypoints << " keypoints" << (o.videos > 0 ? ", " + std::to_string(o.videos) + " videos" : "")
              << "\n";
  }
  if (!export_dir.empty()) {
    data::export_synthetic_project(export_dir, o);
    std::cout << "wrote " << export_dir << "/CollectedData.csv and " << o.frames << " PNG frames\n";
  }
  return 0;
}

}  // namespace trainer::app
