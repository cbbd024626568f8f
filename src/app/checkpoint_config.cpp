// The configuration of a checkpoint's run (see checkpoint_config.hpp).
#include "app/checkpoint_config.hpp"

#include <sys/stat.h>  // stat

#include "app/output_files.hpp"   // run_dir_of_checkpoint
#include "train/checkpoint.hpp"   // load_training_state: the stored configuration
#include "util/error.hpp"         // UserError

namespace trainer::app {
namespace {

// Whether anything is there (not opened: a FIFO would block; --config refuses it).
bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

bool names_configuration(const Args& args) {
  if (!args.empty() && is_positional_config(args[0])) return true;
  for (const auto& a : args)
    if (a == "--config" || a.rfind("--config=", 0) == 0) return true;
  return false;
}

std::string use_checkpoint_configuration(Args& args, const std::string& checkpoint, FallbackConfig& stored,
                                         bool read_checkpoint) {
  const std::string beside = run_dir_of_checkpoint(checkpoint) + "/config.ini";
  if (file_exists(beside)) {
    args.insert(args.begin(), {"--config", beside});
    return "configuration: " + beside;
  }
  if (!read_checkpoint) return "";
  stored.text = train::load_training_state(checkpoint).config_text;
  stored.name = checkpoint + " (its stored configuration)";
  if (stored.text.empty())
    throw UserError("checkpoint '" + checkpoint + "' carries no configuration and there is no " + beside,
                    "give the configuration the model was trained with: --config <run>/config.ini");
  return "configuration: the one stored in " + checkpoint + " (no " + beside + ")";
}

}  // namespace trainer::app
