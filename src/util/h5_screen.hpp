#pragma once
// HDF5 files without the trainer's checksum (util/h5_checksum.hpp), screened in a
// throwaway process before this one parses them.
//
// Why: a data set written by h5py, a DeepLabCut pandas .h5 or a checkpoint from before
// the checksum carries nothing to verify, and libhdf5 1.10 trusts what a file says: a
// few overwritten bytes make it read past its buffers (SIGSEGV in H5O__msg_iterate_real
// from H5Aexists, in H5D__select_read) or loop, which no check in this process can
// catch. So a child process, started with posix_spawn (never fork: this process may
// hold MPI, CUDA and threads), walks everything the trainer will read
// (util/h5_walk.hpp) under a time and an address-space limit. A crash, a signal, a
// walk past the time limit or an HDF5 error there is the UserError
// "<subject> is damaged: ..." here; a clean walk lets the caller read the file.
// HDF5 then parses the same bytes the same way, so the parent is safe on them.
//
// The child is this program again (/proc/self/exe), run as
//   <program> __screen-hdf5 <seconds> <address-space-bytes> <path>
// which main() hands to run_screen_child before anything else, MPI included. Only a
// program that does so may enable the screen (enable_screen); in test programs and
// fuzzers it stays off and unchecksummed files are read as before.
//
// Every rank decides for itself (its own files, its own child); the callers run inside
// runtime::on_every_rank_or_none, so a refusal on one rank ends every rank.
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::h5 {

inline constexpr char kScreenSubcommand[] = "__screen-hdf5";

struct ScreenSettings {
  std::string program = "/proc/self/exe";  // answers `<program> __screen-hdf5 <path>`
  double seconds = 30;                     // a walk longer than this is a hang
  unsigned long long address_space_bytes = 2ull << 30;  // the child's RLIMIT_AS (its walk needs < 128 MiB)
};

// Turns the screen on for this process; called once by main(), before any thread.
void enable_screen(const ScreenSettings& settings);
// Turns it off again (unit tests, which enable it with a stand-in program).
void disable_screen();

// Before HDF5 opens `path`: the checksum when the file has one (h5::verify_checksum),
// else the screen, when enabled. Either refuses a damaged file with the UserError
// "<subject> is truncated or damaged: <why>" and `hint`. A file that passed once in this
// process, unchanged since (same inode, size and modification time), is not checked again.
void check_before_parsing(const std::string& path, const std::string& subject, const std::string& hint);

// The child's side, `<program> __screen-hdf5 <seconds> <address-space-bytes> <path>`
// with `args` the words after the subcommand: sets its limits, walks the file, writes
// what failed (one line) on stdout and returns the exit status: 0 for a clean walk
// (or a file that is not HDF5 at all, which the reader refuses in its own words),
// kScreenDamaged for a failure.
inline constexpr int kScreenDamaged = 3;
int run_screen_child(const std::vector<std::string>& args);

}  // namespace trainer::h5
