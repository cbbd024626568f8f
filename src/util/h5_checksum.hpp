#pragma once
// A checksum of every byte of the HDF5 files the trainer writes (data sets and
// checkpoints), checked before HDF5 parses them.
//
// Why: libhdf5 1.10 trusts what a file says. A few overwritten bytes (a bad disk, a
// copy cut short) make it read past its buffers, use freed memory or loop (found by
// tests/fuzz/fuzz_damaged_*: H5HG_read, H5O__msg_iterate_real from H5Aexists, ...),
// and none of that can be caught from outside. A damaged file must instead be a
// clean `error:` naming it, so the checksum is verified first.
//
// Where: in a 512-byte HDF5 user block at the start of the file, which HDF5 skips
// (every HDF5 reader, h5py included, reads such a file as usual):
//   TRAINER-CHECKSUM 1\n
//   crc32 <8 hex digits>\n      zlib's CRC-32 of every byte after the user block
//   bytes <decimal>\n           how many bytes that is
// then NUL padding. A file without a user block (written before, or by other tools)
// has nothing to verify: util/h5_screen.hpp walks it in a separate process instead.
#include <string>  // std::string

#include "util/h5.hpp"  // Handle, hsize_t

namespace trainer::h5 {

inline constexpr hsize_t kChecksumBlockBytes = 512;

// A file-creation property list with the user block the record goes into.
Handle checksummed_file_creation();

// Writes the record into the user block of the closed HDF5 file at `path` (created
// with checksummed_file_creation()). SystemError if the file cannot be read or written.
void write_checksum_record(const std::string& path);

// Before HDF5 opens `path`: when the file has a 512-byte user block, it must hold a
// record that matches the rest of the file; anything else is the UserError
// "<subject> is truncated or damaged: <why>" (subject: "data file x.h5", ...) with `hint`. Returns true when the file was verified, false when it has no record
// (a file of older versions or of other tools). A file verified once in this
// process, unchanged since (same inode, size and modification time), is not read again.
bool verify_checksum(const std::string& path, const std::string& subject, const std::string& hint);

}  // namespace trainer::h5
