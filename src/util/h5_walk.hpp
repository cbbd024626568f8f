#pragma once
// Everything HDF5 parses when the trainer reads a file, done once, so that a file
// HDF5 cannot read safely shows it here: in the throwaway process of the foreign
// file screen (util/h5_screen.hpp), where a crash or a hang costs nothing.
//
// What is walked: every object reachable from the root (object headers, group
// B-trees and local heaps), every attribute of each (read in full, variable-length
// strings through HDF5's global heap), a name lookup that misses (the path of
// H5Aexists / H5Lexists for optional names), every dataset's dataspace, datatype,
// creation properties, filters and chunk index (every chunk's address checked
// against the end of the file), and its values: in full when they take at most
// kWalkReadBytes in memory, else the first row (the first frame of /images), which
// takes the filter pipeline and the layout's read path once.
#include <cstdint>  // std::uint64_t
#include <string>   // std::string

namespace trainer::h5 {

inline constexpr std::uint64_t kWalkReadBytes = std::uint64_t{4} << 20;

// Walks the HDF5 file at `path` as above. Throws SystemError with what failed
// ("dataset /images: chunk 3 at byte 912 ... past the end of the file", or HDF5's own
// message for the object) on the first failure.
void walk_file(const std::string& path);

}  // namespace trainer::h5
