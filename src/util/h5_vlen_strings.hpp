#pragma once
// Variable-length string datasets read without HDF5's own variable-length path.
//
// Each element of such a dataset is a reference (length, global heap collection
// address, object index) and HDF5 1.10 follows it unchecked: a damaged index or
// object size makes H5HG_read read past its arrays or copy more bytes than it
// allocated (a SIGSEGV in `trainer train` on a gzip dataset with a few overwritten
// bytes), and a free-space object of size 0 makes its heap parser loop forever. So
// the references and the heap collections they point into are read here, straight
// from the file's bytes, with every length, address and index checked against what
// the file really holds. HDF5 only says where the references are (layout, offset,
// chunks); it never touches the global heap.
//
// Layouts: contiguous (what `trainer import`/`synth` and h5py write by default) and
// chunked with no filter, shuffle and/or deflate (h5py with compression="gzip").
// Anything else (compact storage, other filters) is refused, not handed to HDF5.
#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "util/h5.hpp"  // hid_t

namespace trainer::h5 {

// The `count` strings of a one-dimensional variable-length string dataset (count
// comes from the caller's checked dataspace). A string ends at its first NUL, as
// HDF5's conversion to C strings makes it; a never-written element reads as "".
// Damage is a UserError with a bare reason ("string 3 points ... (damaged?)") for the
// caller to prefix with the file and dataset.
std::vector<std::string> read_vlen_strings(hid_t dataset, std::size_t count);

}  // namespace trainer::h5
