// trainer: entry point. Dispatches to a subcommand and turns exceptions into
// `error:` / `hint:` lines with exit code 2 (user errors) or 1 (system failures).
#include <csignal>    // std::signal, SIGPIPE
#include <exception>  // std::exception
#include <new>        // std::bad_alloc
#include <iostream>   // std::cout, std::cerr
#include <cstdlib>    // std::strtod
#include <string>     // std::string
#include <vector>     // std::vector

#include "app/commands.hpp"  // run_* subcommands, version_text
#include "util/env.hpp"      // capture_environment, env_get
#include "util/error.hpp"    // UserError, SystemError
#include "util/h5_screen.hpp"  // h5::enable_screen, h5::run_screen_child: HDF5 files without a checksum
#include "util/printable.hpp"  // printable: control characters of the input as \xNN

namespace {

struct Subcommand {
  const char* name;
  int (*run)(const trainer::app::Args&);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"train", trainer::app::run_train, "train a heatmap network (launch with mpirun/srun, or --nprocs N)"},
    {"plan", trainer::app::run_plan, "print what every rank would do: devices, batch sizes, workers"},
    {"import", trainer::app::run_import, "convert a DeepLabCut/lightning-pose CollectedData.csv project to HDF5"},
    {"synth", trainer::app::run_synth, "generate the synthetic demo dataset"},
    {"predict", trainer::app::run_predict, "predict keypoints with a checkpoint and write a predictions CSV"},
    {"bench", trainer::app::run_bench, "benchmarks: loader, step, allreduce, plans"},
};

void print_usage(std::ostream& os) {
  os << "usage: trainer <subcommand> [options]\n"
        "       trainer <subcommand> --help\n"
        "       trainer --version\n\n"
        "Keypoint heatmap network trainer (lightning-pose model family) for clusters.\n\n"
        "subcommands:\n";
  for (const auto& s : kSubcommands) {
    os << "  " << s.name << std::string(10 - std::string(s.name).size(), ' ') << s.summary << "\n";
  }
  os << "\nRun `trainer <subcommand> --help` for its options and their defaults.\n";
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    print_usage(std::cerr);
    throw trainer::UserError("no subcommand given", "try `trainer train --config inputs/demo.cfg`");
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    print_usage(std::cout);
    return 0;
  }
  if (first == "--version" || first == "-V") {
    std::cout << trainer::app::version_text();
    return 0;
  }
  trainer::app::Args rest(argv + 2, argv + argc);
  for (const auto& s : kSubcommands) {
    if (first == s.name) return s.run(rest);
  }
  throw trainer::UserError("unknown subcommand '" + first + "'",
                           "run `trainer --help` for the list of subcommands");
}

// One write for the whole report: under mpirun every rank's stderr goes to one
// terminal, and separate writes of several ranks interleave mid-line.
void report(const std::string& message, const std::string& hint) {
  // Messages quote the input: printable() keeps each one line and free of terminal escapes.
  std::string text = "error: " + trainer::printable(message) + "\n";
  if (!hint.empty()) text += "hint: " + trainer::printable(hint) + "\n";
  std::cerr.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::cerr.flush();
}

// HDF5 files without the trainer's checksum are walked by a copy of this program
// before it parses them (util/h5_screen.hpp); TRAINER_H5_SCREEN_SECONDS sets its limit.
void enable_hdf5_screen() {
  trainer::h5::ScreenSettings settings;
  if (const auto text = trainer::env_get(trainer::capture_environment(), "TRAINER_H5_SCREEN_SECONDS")) {
    char* end = nullptr;
    const double seconds = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || *end != '\0' || !(seconds > 0 && seconds <= 86400))
      throw trainer::UserError("TRAINER_H5_SCREEN_SECONDS=" + *text + " is not a number of seconds in (0, 86400]");
    settings.seconds = seconds;
  }
  trainer::h5::enable_screen(settings);
}

}  // namespace

int main(int argc, char** argv) {
  // That copy: before anything else (no MPI, no signal handlers of ours).
  if (argc >= 2 && std::string(argv[1]) == trainer::h5::kScreenSubcommand)
    return trainer::h5::run_screen_child(std::vector<std::string>(argv + 2, argv + argc));
  // Peers that exit close their sockets (Gloo, MPI's TCP transport, heartbeats): a
  // write to one must come back as an error the communicator reports and names,
  // not end this rank silently with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    enable_hdf5_screen();
    return dispatch(argc, argv);
  } catch (const trainer::UserError& e) {
    report(e.what(), e.hint());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    report("out of host memory", {});
    return trainer::kExitFailure;
  } catch (const std::exception& e) {
    report(e.what(), {});
    return trainer::kExitFailure;
  }
}
