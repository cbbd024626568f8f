#pragma once
// The one gate for every file or folder the user names as input (--config,
// data_files, import --csv, --init-weights, --resume, predict --checkpoint, ...).
// Opening a FIFO for reading blocks until a writer comes, which may be never, and a
// device such as /dev/zero never ends: so nothing is opened before it is known to be
// a regular file (or a folder where one is expected), and whole-file reads open
// without blocking, check the opened file again and read at most what it held.
//
// Errors are UserErrors that start with the caller's `subject` ("cannot open data
// file x.h5", "cannot read config file 'a.cfg'") and add the reason: "no such file",
// "is a directory", "not a regular file (a FIFO)", "permission denied".
#include <cstddef>  // std::size_t
#include <string>   // std::string

namespace trainer {

// For a message about a missing relative path: " (a relative path: from the working
// directory /x/y)"; "" for an absolute one.
std::string from_working_directory(const std::string& path);

// A readable regular file (symbolic links followed), else a UserError.
void check_input_file(const std::string& path, const std::string& subject, const std::string& hint = {});

// A folder that can be listed, else a UserError.
void check_input_folder(const std::string& path, const std::string& subject, const std::string& hint = {});

// The whole content of a regular file of at most `max_bytes` bytes; a larger file, or
// one that is not a regular file by the time it is opened, is a UserError.
std::string read_input_file(const std::string& path, const std::string& subject, std::size_t max_bytes,
                            const std::string& hint = {});

}  // namespace trainer
