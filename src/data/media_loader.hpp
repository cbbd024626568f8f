#pragma once
// Loads the media module (libtrainer_media.so, data/media_api.hpp) the first time a
// command reads or writes an image or video file.
//
// Where it looks, in order: beside the program, in ../lib next to the program's folder
// (the bundle's layout: bin/trainer, lib/libtrainer_media.so) and in the program's
// parent folder (build/tests/unit_tests finds build/libtrainer_media.so).
#include <string>  // std::string

#include "data/media_api.hpp"  // media::Api

namespace trainer::data {

// The loaded module. `purpose` says what needed it ("reading video 'a.mp4'"), for the
// UserError (exit 2) raised when the module is not installed or does not load: that
// error names the file it looked for, why it failed (dlerror), and how to get it.
const media::Api& media_api(const std::string& purpose);

// One line for `trainer --version`: what the module provides and where it was
// found, or that it is not installed and what that leaves out.
std::string media_module_status();

}  // namespace trainer::data
