// Dataset: opening, validating and reading the shard files (see dataset.hpp).
#include "data/dataset.hpp"

#include <glob.h>    // glob, globfree
#include <unistd.h>  // access

#include <algorithm>   // std::sort, std::max_element, std::find
#include <cmath>       // std::isnan
#include <filesystem>  // std::filesystem::exists
#include <limits>      // std::numeric_limits
#include <sstream>     // std::ostringstream

#include <zlib.h>  // uncompress (deflate chunks, outside HDF5's lock)

#include "data/visibility.hpp"  // is_visibility_value, kNoVisibilityFlag, kOccluded
#include "util/error.hpp"  // UserError, SystemError
#include "util/h5_io.hpp"  // h5::read_strings, h5::read_int64, h5::read_int_attribute, h5::stored_element_count
#include "util/h5_screen.hpp"  // h5::check_before_parsing
#include "util/input_file.hpp"  // check_input_file

namespace trainer::data {

// How a shard's frames are read. One frame per chunk with no filter or only deflate
// lets a worker fetch the stored chunk bytes with H5Dread_chunk (under HDF5's lock)
// and inflate them with zlib outside it; any other layout goes through H5Dread.
enum class ReadPath { kRawChunk, kDeflateChunk, kHyperslab };

struct Dataset::Shard {
  std::string path;
  std::int64_t num_frames = 0;
  std::mutex open_mutex;  // guards the lazy open below
  h5::Handle file;
  h5::Handle images;
  h5::Handle context_images;  // /context/images, opened on first use
  ReadPath read_path = ReadPath::kHyperslab;
  std::uint64_t file_size = 0;  // bounds what a chunk may claim
};

namespace {

// The largest frame a dataset may claim (a 16k x 16k RGB frame is 768 MiB).
constexpr std::uint64_t kMaxFrameBytes = std::uint64_t{1} << 30;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string type_text(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  switch (cls) {
    case H5T_INTEGER:
      return std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(size * 8);
    case H5T_FLOAT: return "float" + std::to_string(size * 8);
    case H5T_STRING: return "string";
    default: return "a non-numeric type";
  }
}

// Opens a file for reading with user-facing errors for the usual ways it fails.
h5::Handle open_file(const std::string& path) {
  h5::silence_errors_on_this_thread();
  // A FIFO or a device named as data would block HDF5's open (or read forever).
  check_input_file(path, "cannot open data file " + path,
                   "check data_files; create a dataset with `trainer import` or `trainer synth`");
  // HDF5 itself misbehaves on a damaged file: the files the trainer writes carry a
  // checksum, verified before HDF5 parses them, and others are walked in a separate
  // process first (util/h5_checksum.hpp, util/h5_screen.hpp).
  h5::check_before_parsing(path, "data file " + path,
                      "re-create it with `trainer import` or `trainer synth`, or copy it again (a file the trainer "
                      "wrote and you changed on purpose with another tool such as h5py: drop its checksum with "
                      "`h5unjam`)");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw UserError("data file " + path + " is not an HDF5 file",
                    "convert labeled frames with `trainer import --csv CollectedData.csv --out data.h5`");
  }
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) {
    throw UserError("cannot open data file " + path + " as HDF5 (truncated or damaged?): " + h5::last_error_message());
  }
  return h5::Handle(id, H5Fclose);
}

h5::Handle open_dataset(hid_t file, const std::string& path, const char* name, bool required = true) {
  bool exists = false;
  try {
    exists = h5::link_exists(file, name);
  } catch (const SystemError&) {
    exists = false;
  }
  if (!exists) {
    if (!required) return {};
    throw UserError("data file " + path + " has no dataset " + name,
                    "see docs/DATA.md for the schema; `trainer import` and `trainer synth` write it");
  }
  const hid_t id = H5Dopen2(file, name, H5P_DEFAULT);
  if (id < 0) throw UserError("cannot open dataset " + std::string(name) + " in " + path + ": " + h5::last_error_message());
  return h5::Handle(id, H5Dclose);
}

[[noreturn]] void bad(const std::string& path, const char* name, const std::string& what) {
  throw UserError("data file " + path + ", dataset " + name + ": " + what);
}

struct ShardMeta {
  DatasetShape shape;
  std::vector<float> keypoints;
  std::vector<std::uint8_t> visibility;  // N*K; empty without /visibility
  std::vector<std::string> frame_paths;
  std::vector<std::int64_t> video_id, frame_number;
  // /context/*: frames that are only context (optional; needs /video_id).
  std::vector<std::int64_t> context_video_id, context_frame_number;
};

ShardMeta read_shard_meta(const std::string& path) {
  h5::Handle file = open_file(path);
  const hid_t f = file.get();
  ShardMeta meta;
  try {
    std::int64_t version = 0;
    const bool has_version = H5Aexists(f, "format_version") > 0;
    if (has_version && (!h5::read_int_attribute(f, "format_version", &version) || version < 1))
      throw UserError("data file " + path + " has a format_version that is not a positive integer",
                      "write data files with `trainer import` or `trainer synth` (docs/DATA.md)");
    // A version no trainer will reach is a damaged attribute (libhdf5 can read a few
    // overwritten bytes past its buffer without faulting, tests/data/hdf5-foreign),
    // not a newer file.
    constexpr std::int64_t kImplausibleVersion = 1000;
    if (version >= kImplausibleVersion)
      throw UserError("data file " + path + " is truncated or damaged: its format_version reads " +
                          std::to_string(version),
                      "re-create it with `trainer import` or `trainer synth`, or copy it again");
    if (version > kFormatVersion) {
      throw UserError("data file " + path + " has format_version " + std::to_string(version) +
                          ", this trainer reads up to " + std::to_string(kFormatVersion),
                      "use a newer trainer");
    }
    // /images: uint8 [N, H, W, C]
    h5::Handle images = open_dataset(f, path, kImages);
    {
      h5::Handle type = H5_OWN(datatype, H5Dget_type(images.get()));
      if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 1 ||
          H5Tget_sign(type.get()) != H5T_SGN_NONE)
        bad(path, kImages, "wrong dtype " + type_text(type.get()) + ", expected uint8");
    }
    const auto idims = h5::dims_of(images.get());
    if (idims.size() != 4) bad(path, kImages, "wrong rank: shape " + shape_text(idims) + ", expected [N, H, W, C]");
    if (idims[3] != 1 && idims[3] != 3)
      bad(path, kImages, "has " + std::to_string(idims[3]) + " channels, expected 1 (grayscale) or 3 (RGB)");
    if (idims[0] == 0 || idims[1] == 0 || idims[2] == 0) bad(path, kImages, "is empty: shape " + shape_text(idims));
    // Height and width are ints from here on; a larger extent would wrap around.
    constexpr hsize_t kMaxSide = std::numeric_limits<int>::max();
    if (idims[1] > kMaxSide || idims[2] > kMaxSide)
      bad(path, kImages, "frames of " + std::to_string(idims[1]) + "x" + std::to_string(idims[2]) +
                             " pixels are too large (at most " + std::to_string(kMaxSide) + " a side)");
    // What the file claims must fit in it, and a frame in memory: a damaged or
    // hand-made header may claim frames of 100000x100000 pixels that no chunk holds.
    const std::uint64_t frame_bytes = idims[1] * idims[2] * idims[3];
    if (frame_bytes > kMaxFrameBytes)  // no overflow: each side is below 2^31 here
      bad(path, kImages, "frames of " + std::to_string(idims[1]) + "x" + std::to_string(idims[2]) + "x" +
                             std::to_string(idims[3]) + " bytes are too large (at most " +
                             std::to_string(kMaxFrameBytes >> 20) + " MiB a frame)");
    try {
      h5::stored_element_count(images.get());
    } catch (const UserError& e) {
      bad(path, kImages, e.what());
    }
    meta.shape.num_frames = static_cast<std::int64_t>(idims[0]);
    meta.shape.height = static_cast<int>(idims[1]);
    meta.shape.width = static_cast<int>(idims[2]);
    meta.shape.channels = static_cast<int>(idims[3]);
    const auto n = idims[0];

    // /keypoints: float [N, K, 2]
    h5::Handle kp = open_dataset(f, path, kKeypoints);
    {
      h5::Handle type = H5_OWN(datatype, H5Dget_type(kp.get()));
      if (H5Tget_class(type.get()) != H5T_FLOAT)
        bad(path, kKeypoints, "wrong dtype " + type_text(type.get()) + ", expected float32");
    }
    const auto kdims = h5::dims_of(kp.get());
    if (kdims.size() != 3 || kdims[2] != 2)
      bad(path, kKeypoints, "wrong rank: shape " + shape_text(kdims) + ", expected [N, K, 2]");
    if (kdims[0] != n)
      bad(path, kKeypoints, "N mismatch: " + std::to_string(kdims[0]) + " rows but " + kImages + " has " +
                                std::to_string(n) + " frames");
    try {
      meta.keypoints.resize(h5::stored_element_count(kp.get()));
    } catch (const UserError& e) {
      bad(path, kKeypoints, e.what());
    }
    if (!meta.keypoints.empty())
      H5_CHECK(H5Dread(kp.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, meta.keypoints.data()));

    // Optional /visibility: uint8 [N, K], lightning-pose's visible flags.
    if (h5::Handle vis = open_dataset(f, path, kVisibility, false)) {
      {
        h5::Handle type = H5_OWN(datatype, H5Dget_type(vis.get()));
        if (H5Tget_class(type.get()) != H5T_INTEGER)
          bad(path, kVisibility, "wrong dtype " + type_text(type.get()) + ", expected uint8");
      }
      const auto vdims = h5::dims_of(vis.get());
      if (vdims.size() != 2 || vdims[0] != n || vdims[1] != kdims[1])
        bad(path, kVisibility, "shape " + shape_text(vdims) + ", expected [N, K] = [" + std::to_string(n) + ", " +
                                   std::to_string(kdims[1]) + "]");
      try {
        meta.visibility.resize(h5::stored_element_count(vis.get()));
      } catch (const UserError& e) {
        bad(path, kVisibility, e.what());
      }
      if (!meta.visibility.empty())
        H5_CHECK(H5Dread(vis.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, meta.visibility.data()));
      for (std::size_t i = 0; i < meta.visibility.size(); ++i)
        if (!is_visibility_value(meta.visibility[i]))
          bad(path, kVisibility, "flag " + std::to_string(int(meta.visibility[i])) + " of frame " +
                                     std::to_string(i / kdims[1]) + " is not 0, 1, 2 or 255 (none)");
    }

    // /keypoint_names: K strings
    h5::Handle names = open_dataset(f, path, kKeypointNames);
    try {
      meta.shape.keypoint_names = h5::read_strings(names.get());
    } catch (const UserError& e) {
      bad(path, kKeypointNames, e.what());
    }
    if (meta.shape.keypoint_names.size() != kdims[1])
      bad(path, kKeypointNames, std::to_string(meta.shape.keypoint_names.size()) + " names but " + kKeypoints +
                                    " has K = " + std::to_string(kdims[1]));

    // /frame_paths: N strings
    h5::Handle paths = open_dataset(f, path, kFramePaths);
    try {
      meta.frame_paths = h5::read_strings(paths.get());
    } catch (const UserError& e) {
      bad(path, kFramePaths, e.what());
    }
    if (meta.frame_paths.size() != n)
      bad(path, kFramePaths, "N mismatch: " + std::to_string(meta.frame_paths.size()) + " paths but " + kImages +
                                 " has " + std::to_string(n) + " frames");

    // Optional /video_id + /frame_number.
    h5::Handle vid = open_dataset(f, path, kVideoId, false);
    h5::Handle fnum = open_dataset(f, path, kFrameNumber, false);
    if (bool(vid) != bool(fnum))
      bad(path, vid ? kFrameNumber : kVideoId, std::string("is missing; ") + (vid ? kVideoId : kFrameNumber) +
                                                   " needs it (context frames use both)");
    if (vid) {
      for (auto [name, handle, out] : {std::tuple{kVideoId, &vid, &meta.video_id},
                                       std::tuple{kFrameNumber, &fnum, &meta.frame_number}}) {
        try {
          *out = h5::read_int64(handle->get());
        } catch (const UserError& e) {
          bad(path, name, e.what());
        }
        if (out->size() != n)
          bad(path, name, "N mismatch: " + std::to_string(out->size()) + " entries but " + kImages + " has " +
                              std::to_string(n) + " frames");
      }
      for (const std::int64_t v : meta.video_id)
        if (v < 0) bad(path, kVideoId, "video id " + std::to_string(v) + " is negative");
      // Optional /context/*: frames that are only context of labelled ones.
      h5::Handle cimages = open_dataset(f, path, kContextImages, false);
      if (cimages) {
        h5::Handle cvid = open_dataset(f, path, kContextVideoId);
        h5::Handle cnum = open_dataset(f, path, kContextFrameNumber);
        try {
          meta.context_video_id = h5::read_int64(cvid.get());
          meta.context_frame_number = h5::read_int64(cnum.get());
        } catch (const UserError& e) {
          bad(path, kContextVideoId, e.what());
        }
        h5::Handle space = H5_OWN(dataspace, H5Dget_space(cimages.get()));
        hsize_t dims[4] = {0, 0, 0, 0};
        if (H5Sget_simple_extent_ndims(space.get()) != 4) bad(path, kContextImages, "must have 4 dimensions");
        H5Sget_simple_extent_dims(space.get(), dims, nullptr);
        if (dims[1] != static_cast<hsize_t>(meta.shape.height) || dims[2] != static_cast<hsize_t>(meta.shape.width) ||
            dims[3] != static_cast<hsize_t>(meta.shape.channels))
          bad(path, kContextImages, "frame shape differs from " + std::string(kImages));
        try {
          h5::stored_element_count(cimages.get());
        } catch (const UserError& e) {
          bad(path, kContextImages, e.what());
        }
        if (meta.context_video_id.size() != dims[0] || meta.context_frame_number.size() != dims[0])
          bad(path, kContextVideoId, "N mismatch with " + std::string(kContextImages));
        for (const std::int64_t v : meta.context_video_id)
          if (v < 0) bad(path, kContextVideoId, "video id " + std::to_string(v) + " is negative");
      }
    }
  } catch (const SystemError& e) {
    throw UserError("cannot read data file " + path + " (truncated or damaged?): " + e.what());
  }
  return meta;
}

}  // namespace

std::vector<std::string> expand_data_files(const std::vector<std::string>& patterns) {
  std::vector<std::string> files;
  for (const auto& pattern : patterns) {
    if (pattern.find_first_of("*?[") == std::string::npos) {
      files.push_back(pattern);
      continue;
    }
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    std::vector<std::string> matched;
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) matched.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (matched.empty()) throw UserError("data_files pattern '" + pattern + "' matches no file");
    std::sort(matched.begin(), matched.end());
    files.insert(files.end(), matched.begin(), matched.end());
  }
  return files;
}

namespace {
// `names` without those of `remove`, in order.
std::vector<std::string> names_missing_from(const std::vector<std::string>& names,
                                            const std::vector<std::string>& remove) {
  std::vector<std::string> out;
  for (const auto& n : names)
    if (std::find(remove.begin(), remove.end(), n) == remove.end()) out.push_back(n);
  return out;
}

// A data file whose keypoints are not the configuration's named ones: the names that
// differ, which a count alone would not say (a label CSV that lost one keypoint's
// columns reads as "16 keypoints but 17").
[[noreturn]] void refuse_other_keypoints(const std::string& path, const std::vector<std::string>& in_file,
                                         const DatasetExpectations& expect) {
  const auto missing = names_missing_from(expect.keypoint_names, in_file);
  const auto extra = names_missing_from(in_file, expect.keypoint_names);
  std::string what = "data file " + path + " has " + std::to_string(in_file.size()) + " keypoints, data.keypoint_names " +
                     std::to_string(expect.keypoint_names.size());
  if (!missing.empty()) what += "; it has none named " + join(missing);
  if (!extra.empty()) what += "; it has " + join(extra) + ", which data.keypoint_names does not name";
  throw UserError(what, missing.empty() ? "name every keypoint of the data in data.keypoint_names (and "
                                          "data.num_keypoints), or leave both unset to take them from the data"
                                        : "give the label file the columns of " + join(missing) +
                                              ", or remove them from data.keypoint_names and set data.num_keypoints "
                                              "to match");
}
}  // namespace

LabelSource label_source_of(const std::string& path) {
  h5::Handle file = open_file(path);
  LabelSource out;
  h5::read_string_attribute(file.get(), "source", &out.source);
  h5::read_string_attribute(file.get(), "image_root", &out.image_root);
  return out;
}

Dataset::Dataset() = default;
Dataset::Dataset(Dataset&&) noexcept = default;
Dataset& Dataset::operator=(Dataset&&) noexcept = default;
Dataset::~Dataset() = default;

Dataset Dataset::open(const std::vector<std::string>& files, const DatasetExpectations& expect) {
  if (files.empty()) throw UserError("no data files given");
  Dataset ds;
  ds.files_ = files;
  bool video_info = true;
  std::int64_t video_offset = 0;
  for (const auto& path : files) {
    ShardMeta meta = read_shard_meta(path);
    const int k = meta.shape.num_keypoints();
    if (expect.num_keypoints > 0 && k != expect.num_keypoints && !expect.keypoint_names.empty())
      refuse_other_keypoints(path, meta.shape.keypoint_names, expect);
    if (expect.num_keypoints > 0 && k != expect.num_keypoints)
      throw UserError("data file " + path + ", dataset " + kKeypoints + ": has " + std::to_string(k) +
                          " keypoints but num_keypoints = " + std::to_string(expect.num_keypoints),
                      "set data.num_keypoints to " + std::to_string(k) + " (or 0 to take it from the data)");
    if (!expect.keypoint_names.empty() && meta.shape.keypoint_names != expect.keypoint_names)
      throw UserError("data file " + path + ", dataset " + kKeypointNames + ": names (" +
                          join(meta.shape.keypoint_names) + ") differ from keypoint_names in the config (" +
                          join(expect.keypoint_names) + ")",
                      "fix data.keypoint_names or leave it empty to take the names from the data");
    if (ds.shards_.empty()) {
      ds.shape_ = meta.shape;
      ds.shape_.num_frames = 0;
    } else {
      const auto& s = ds.shape_;
      if (meta.shape.height != s.height || meta.shape.width != s.width || meta.shape.channels != s.channels)
        throw UserError("data file " + path + ", dataset " + kImages + ": frames are " +
                        std::to_string(meta.shape.height) + "x" + std::to_string(meta.shape.width) + "x" +
                        std::to_string(meta.shape.channels) + " but " + files.front() + " has " +
                        std::to_string(s.height) + "x" + std::to_string(s.width) + "x" + std::to_string(s.channels));
      if (meta.shape.keypoint_names != s.keypoint_names)
        throw UserError("data file " + path + ", dataset " + kKeypointNames + ": names differ from " + files.front());
    }
    auto shard = std::make_unique<Shard>();
    shard->path = path;
    shard->num_frames = meta.shape.num_frames;
    ds.shard_start_.push_back(ds.shape_.num_frames);
    ds.shape_.num_frames += meta.shape.num_frames;
    ds.shards_.push_back(std::move(shard));
    ds.keypoints_.insert(ds.keypoints_.end(), meta.keypoints.begin(), meta.keypoints.end());
    // Flags of shards without /visibility are "none", so that shards of either kind mix.
    const auto per_frame = static_cast<std::size_t>(k);
    if (!meta.visibility.empty() && ds.visibility_.empty())
      ds.visibility_.assign(static_cast<std::size_t>(ds.shape_.num_frames - meta.shape.num_frames) * per_frame,
                            kNoVisibilityFlag);
    if (!meta.visibility.empty())
      ds.visibility_.insert(ds.visibility_.end(), meta.visibility.begin(), meta.visibility.end());
    else if (!ds.visibility_.empty())
      ds.visibility_.insert(ds.visibility_.end(), static_cast<std::size_t>(meta.shape.num_frames) * per_frame,
                            kNoVisibilityFlag);
    ds.frame_paths_.insert(ds.frame_paths_.end(), meta.frame_paths.begin(), meta.frame_paths.end());
    if (meta.video_id.empty()) {
      video_info = false;
    } else if (video_info) {
      // Shard s's videos are shifted past those of shards 0..s-1 (ids are >= 0).
      std::int64_t max_id = *std::max_element(meta.video_id.begin(), meta.video_id.end());
      for (auto v : meta.context_video_id) max_id = std::max(max_id, v);
      if (max_id > std::numeric_limits<std::int64_t>::max() - 1 - video_offset)
        throw UserError("data file " + path + ", dataset " + kVideoId + ": video id " + std::to_string(max_id) +
                        " is too large to number the videos of all shards apart");
      for (auto v : meta.video_id) ds.video_id_.push_back(v + video_offset);
      for (std::size_t j = 0; j < meta.context_video_id.size(); ++j) {
        ds.context_video_id_.push_back(meta.context_video_id[j] + video_offset);
        ds.context_frame_number_.push_back(meta.context_frame_number[j]);
        ds.context_location_.emplace_back(ds.shards_.size() - 1, static_cast<std::int64_t>(j));
      }
      video_offset += max_id + 1;
      ds.frame_number_.insert(ds.frame_number_.end(), meta.frame_number.begin(), meta.frame_number.end());
    }
  }
  if (!video_info) {
    ds.video_id_.clear();
    ds.frame_number_.clear();
    ds.context_video_id_.clear();
    ds.context_frame_number_.clear();
    ds.context_location_.clear();
  }
  return ds;
}

std::int64_t Dataset::occluded_with_coordinates() const {
  std::int64_t n = 0;
  for (std::size_t at = 0; at < visibility_.size(); ++at)
    if (visibility_[at] == kOccluded && !std::isnan(keypoints_[2 * at]) && !std::isnan(keypoints_[2 * at + 1])) ++n;
  return n;
}

std::size_t Dataset::shard_of(std::int64_t i) const {
  TRAINER_ASSERT(i >= 0 && i < size(), "frame index " << i << " out of range [0, " << size() << ")");
  const auto it = std::upper_bound(shard_start_.begin(), shard_start_.end(), i);
  return static_cast<std::size_t>(it - shard_start_.begin()) - 1;
}

const std::string& Dataset::file_of(std::int64_t i) const { return shards_[shard_of(i)]->path; }

namespace {
ReadPath choose_read_path(hid_t images, const hsize_t frame_dims[4]) {
  h5::Handle plist = H5_OWN(plist, H5Dget_create_plist(images));
  if (H5Pget_layout(plist.get()) != H5D_CHUNKED) return ReadPath::kHyperslab;
  hsize_t chunk[4] = {0, 0, 0, 0};
  if (H5Pget_chunk(plist.get(), 4, chunk) != 4) return ReadPath::kHyperslab;
  if (chunk[0] != 1 || chunk[1] != frame_dims[1] || chunk[2] != frame_dims[2] || chunk[3] != frame_dims[3])
    return ReadPath::kHyperslab;
  const int nfilters = H5Pget_nfilters(plist.get());
  if (nfilters == 0) return ReadPath::kRawChunk;
  if (nfilters != 1) return ReadPath::kHyperslab;
  unsigned flags = 0;
  size_t nvalues = 0;
  unsigned filter_config = 0;
  const H5Z_filter_t filter = H5Pget_filter2(plist.get(), 0, &flags, &nvalues, nullptr, 0, nullptr, &filter_config);
  return filter == H5Z_FILTER_DEFLATE ? ReadPath::kDeflateChunk : ReadPath::kHyperslab;
}
}  // namespace

void Dataset::read_image(std::int64_t i, std::uint8_t* out) const {
  Shard& shard = *shards_[shard_of(i)];
  const std::int64_t local = i - shard_start_[shard_of(i)];
  h5::silence_errors_on_this_thread();
  try {
    hid_t images = H5I_INVALID_HID;
    {
      std::lock_guard<std::mutex> lock(shard.open_mutex);
      if (!shard.images) {
        shard.file = open_file(shard.path);
        shard.images = open_dataset(shard.file.get(), shard.path, kImages);
        hsize_t file_size = 0;
        H5_CHECK(H5Fget_filesize(shard.file.get(), &file_size));
        shard.file_size = file_size;
        const hsize_t dims[4] = {1, static_cast<hsize_t>(shape_.height), static_cast<hsize_t>(shape_.width),
                                 static_cast<hsize_t>(shape_.channels)};
        shard.read_path = choose_read_path(shard.images.get(), dims);
      }
      images = shard.images.get();
    }
    const hsize_t start[4] = {static_cast<hsize_t>(local), 0, 0, 0};
    const hsize_t count[4] = {1, static_cast<hsize_t>(shape_.height), static_cast<hsize_t>(shape_.width),
                              static_cast<hsize_t>(shape_.channels)};
    if (shard.read_path != ReadPath::kHyperslab) {
      const std::size_t bytes = frame_bytes();
      hsize_t stored = 0;
      H5_CHECK(H5Dget_chunk_storage_size(images, start, &stored));
      if (stored == 0) {  // never written: HDF5's fill value, 0
        std::fill(out, out + bytes, std::uint8_t{0});
        return;
      }
      std::uint32_t filter_mask = 0;
      if (shard.read_path == ReadPath::kRawChunk) {
        if (stored != bytes) throw SystemError("chunk of " + std::to_string(stored) + " bytes, expected " + std::to_string(bytes));
        H5_CHECK(H5Dread_chunk(images, H5P_DEFAULT, start, &filter_mask, out));
        return;
      }
      // A chunk larger than the file is a damaged index, not something to allocate.
      if (stored > shard.file_size)
        throw SystemError("chunk of " + std::to_string(stored) + " bytes in a file of " +
                          std::to_string(shard.file_size));
      std::vector<std::uint8_t> packed(static_cast<std::size_t>(stored));
      H5_CHECK(H5Dread_chunk(images, H5P_DEFAULT, start, &filter_mask, packed.data()));
      if (filter_mask & 1u) {  // deflate was skipped for this chunk: stored as is
        if (stored != bytes) throw SystemError("unfiltered chunk of " + std::to_string(stored) + " bytes, expected " + std::to_string(bytes));
        std::copy(packed.begin(), packed.end(), out);
        return;
      }
      // Outside HDF5's lock: this is what lets several workers decompress at once.
      uLongf out_len = static_cast<uLongf>(bytes);
      const int rc = ::uncompress(out, &out_len, packed.data(), static_cast<uLong>(packed.size()));
      if (rc != Z_OK || out_len != bytes)
        throw SystemError("zlib uncompress failed (" + std::to_string(rc) + ") for a chunk of " + std::to_string(stored) + " bytes");
      return;
    }
    h5::Handle file_space = H5_OWN(dataspace, H5Dget_space(images));
    H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr));
    h5::Handle mem_space = H5_OWN(dataspace, H5Screate_simple(4, count, nullptr));
    H5_CHECK(H5Dread(images, H5T_NATIVE_UINT8, mem_space.get(), file_space.get(), H5P_DEFAULT, out));
  } catch (const SystemError& e) {
    throw UserError("cannot read frame " + std::to_string(local) + " of data file " + shard.path + ", dataset " +
                    kImages + " (truncated or damaged?): " + e.what());
  }
}

void Dataset::read_context_image(std::int64_t j, std::uint8_t* out) const {
  TRAINER_ASSERT(j >= 0 && j < context_size(), "context frame " << j << " out of range");
  const auto [shard_index, local] = context_location_[static_cast<std::size_t>(j)];
  Shard& shard = *shards_[shard_index];
  h5::silence_errors_on_this_thread();
  try {
    hid_t images = H5I_INVALID_HID;
    {
      std::lock_guard<std::mutex> lock(shard.open_mutex);
      if (!shard.file) shard.file = open_file(shard.path);
      if (!shard.context_images) shard.context_images = open_dataset(shard.file.get(), shard.path, kContextImages);
      images = shard.context_images.get();
    }
    // Few frames, read rarely: HDF5's own path (it serialises the read).
    const hsize_t start[4] = {static_cast<hsize_t>(local), 0, 0, 0};
    const hsize_t count[4] = {1, static_cast<hsize_t>(shape_.height), static_cast<hsize_t>(shape_.width),
                              static_cast<hsize_t>(shape_.channels)};
    h5::Handle file_space = H5_OWN(dataspace, H5Dget_space(images));
    H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr));
    h5::Handle mem_space = H5_OWN(dataspace, H5Screate_simple(4, count, nullptr));
    H5_CHECK(H5Dread(images, H5T_NATIVE_UINT8, mem_space.get(), file_space.get(), H5P_DEFAULT, out));
  } catch (const SystemError& e) {
    throw UserError("cannot read context frame " + std::to_string(local) + " of data file " + shard.path +
                    ", dataset " + kContextImages + " (truncated or damaged?): " + e.what());
  }
}

}  // namespace trainer::data
