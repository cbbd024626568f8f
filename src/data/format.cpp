// DatasetWriter: creates a dataset file (see format.hpp, docs/DATA.md).
#include "data/format.hpp"

#include <filesystem>  // std::filesystem::path

#include "data/visibility.hpp"  // kNoVisibilityFlag
#include "util/error.hpp"  // UserError
#include "util/h5_io.hpp"  // h5::write_strings, h5::write_*_attribute

#ifndef TRAINER_VERSION
#define TRAINER_VERSION "unknown"
#endif

namespace trainer::data {

DatasetWriter::DatasetWriter(std::string path, DatasetShape shape, WriterOptions options)
    : path_(std::move(path)), shape_(std::move(shape)), options_(std::move(options)) {
  h5::silence_errors_on_this_thread();
  if (shape_.num_frames <= 0) throw UserError("cannot write " + path_ + ": no frames");
  if (shape_.channels != 1 && shape_.channels != 3)
    throw UserError("cannot write " + path_ + ": images must have 1 or 3 channels");
  const auto parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
  }
  // With a checksum of every byte, checked before HDF5 reads the file (util/h5_checksum.hpp).
  file_ = std::make_unique<h5::AtomicFile>(path_, "data file", h5::Checksum::record);

  const hsize_t dims[4] = {static_cast<hsize_t>(shape_.num_frames), static_cast<hsize_t>(shape_.height),
                           static_cast<hsize_t>(shape_.width), static_cast<hsize_t>(shape_.channels)};
  const hsize_t chunk[4] = {1, dims[1], dims[2], dims[3]};
  h5::Handle space = H5_OWN(dataspace, H5Screate_simple(4, dims, nullptr));
  h5::Handle plist = H5_OWN(plist, H5Pcreate(H5P_DATASET_CREATE));
  H5_CHECK(H5Pset_chunk(plist.get(), 4, chunk));
  if (options_.deflate_level > 0) H5_CHECK(H5Pset_deflate(plist.get(), static_cast<unsigned>(options_.deflate_level)));
  images_ = H5_OWN(dataset, H5Dcreate2(file_->get(), kImages, H5T_STD_U8LE, space.get(), H5P_DEFAULT, plist.get(),
                                       H5P_DEFAULT));
  const size_t n = static_cast<size_t>(shape_.num_frames);
  keypoints_.assign(n * shape_.keypoint_names.size() * 2, 0.0f);
  if (options_.with_visibility) visibility_.assign(n * shape_.keypoint_names.size(), kNoVisibilityFlag);
  frame_paths_.resize(n);
  video_id_.assign(n, 0);
  frame_number_.assign(n, 0);
  written_.assign(n, false);
}

DatasetWriter::~DatasetWriter() {
  context_images_.reset();
  images_.reset();
}  // then file_ removes the temporary file unless finished

void DatasetWriter::write_frame(std::int64_t index, const std::uint8_t* image, const float* keypoints,
                                const std::string& frame_path, int video_id, int frame_number,
                                const std::uint8_t* visibility) {
  TRAINER_ASSERT(index >= 0 && index < shape_.num_frames, "frame index out of range");
  const hsize_t start[4] = {static_cast<hsize_t>(index), 0, 0, 0};
  const hsize_t count[4] = {1, static_cast<hsize_t>(shape_.height), static_cast<hsize_t>(shape_.width),
                            static_cast<hsize_t>(shape_.channels)};
  h5::Handle file_space = H5_OWN(dataspace, H5Dget_space(images_.get()));
  H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  h5::Handle mem_space = H5_OWN(dataspace, H5Screate_simple(4, count, nullptr));
  H5_CHECK(H5Dwrite(images_.get(), H5T_NATIVE_UINT8, mem_space.get(), file_space.get(), H5P_DEFAULT, image));
  const size_t k2 = shape_.keypoint_names.size() * 2;
  std::copy(keypoints, keypoints + k2, keypoints_.begin() + static_cast<std::ptrdiff_t>(index * k2));
  TRAINER_ASSERT(visibility == nullptr || options_.with_visibility, "visibility flags without with_visibility");
  if (visibility) {
    const size_t k = shape_.keypoint_names.size();
    std::copy(visibility, visibility + k, visibility_.begin() + static_cast<std::ptrdiff_t>(index * k));
  }
  frame_paths_[index] = frame_path;
  video_id_[index] = video_id;
  frame_number_[index] = frame_number;
  written_[index] = true;
}

void DatasetWriter::write_context_frame(const std::uint8_t* image, const std::string& frame_path, int video_id,
                                        int frame_number) {
  TRAINER_ASSERT(options_.with_video_info, "context frames need video info");
  const hsize_t m = context_paths_.size();
  const hsize_t count[4] = {1, static_cast<hsize_t>(shape_.height), static_cast<hsize_t>(shape_.width),
                            static_cast<hsize_t>(shape_.channels)};
  if (!context_images_) {
    h5::Handle group = H5_OWN(group, H5Gcreate2(file_->get(), kContextGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    const hsize_t max_dims[4] = {H5S_UNLIMITED, count[1], count[2], count[3]};
    const hsize_t dims[4] = {0, count[1], count[2], count[3]};
    h5::Handle space = H5_OWN(dataspace, H5Screate_simple(4, dims, max_dims));
    h5::Handle plist = H5_OWN(plist, H5Pcreate(H5P_DATASET_CREATE));
    H5_CHECK(H5Pset_chunk(plist.get(), 4, count));
    if (options_.deflate_level > 0) H5_CHECK(H5Pset_deflate(plist.get(), static_cast<unsigned>(options_.deflate_level)));
    context_images_ = H5_OWN(dataset, H5Dcreate2(file_->get(), kContextImages, H5T_STD_U8LE, space.get(), H5P_DEFAULT,
                                                 plist.get(), H5P_DEFAULT));
  }
  const hsize_t new_dims[4] = {m + 1, count[1], count[2], count[3]};
  H5_CHECK(H5Dset_extent(context_images_.get(), new_dims));
  const hsize_t start[4] = {m, 0, 0, 0};
  h5::Handle file_space = H5_OWN(dataspace, H5Dget_space(context_images_.get()));
  H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  h5::Handle mem_space = H5_OWN(dataspace, H5Screate_simple(4, count, nullptr));
  H5_CHECK(H5Dwrite(context_images_.get(), H5T_NATIVE_UINT8, mem_space.get(), file_space.get(), H5P_DEFAULT, image));
  context_paths_.push_back(frame_path);
  context_video_id_.push_back(video_id);
  context_frame_number_.push_back(frame_number);
}

void DatasetWriter::finish() {
  for (size_t i = 0; i < written_.size(); ++i) TRAINER_ASSERT(written_[i], "frame " << i << " was never written");
  const hid_t f = file_->get();
  {
    const hsize_t dims[3] = {static_cast<hsize_t>(shape_.num_frames), shape_.keypoint_names.size(), 2};
    h5::Handle space = H5_OWN(dataspace, H5Screate_simple(3, dims, nullptr));
    h5::Handle set = H5_OWN(dataset, H5Dcreate2(f, kKeypoints, H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                                                H5P_DEFAULT, H5P_DEFAULT));
    if (!keypoints_.empty())
      H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, keypoints_.data()));
  }
  if (options_.with_visibility) {
    const hsize_t dims[2] = {static_cast<hsize_t>(shape_.num_frames), shape_.keypoint_names.size()};
    h5::Handle space = H5_OWN(dataspace, H5Screate_simple(2, dims, nullptr));
    h5::Handle set = H5_OWN(dataset, H5Dcreate2(f, kVisibility, H5T_STD_U8LE, space.get(), H5P_DEFAULT,
                                                H5P_DEFAULT, H5P_DEFAULT));
    if (!visibility_.empty())
      H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, visibility_.data()));
  }
  h5::write_strings(f, kKeypointNames, shape_.keypoint_names);
  h5::write_strings(f, kFramePaths, frame_paths_);
  if (options_.with_video_info) {
    for (const auto& [name, values] : {std::pair{kVideoId, &video_id_}, std::pair{kFrameNumber, &frame_number_}}) {
      const hsize_t n = values->size();
      h5::Handle space = H5_OWN(dataspace, H5Screate_simple(1, &n, nullptr));
      h5::Handle set = H5_OWN(dataset, H5Dcreate2(f, name, H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                                  H5P_DEFAULT));
      H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values->data()));
    }
  }
  if (context_images_) {
    h5::write_strings(f, kContextFramePaths, context_paths_);
    for (const auto& [name, values] : {std::pair{kContextVideoId, &context_video_id_},
                                       std::pair{kContextFrameNumber, &context_frame_number_}}) {
      const hsize_t n = values->size();
      h5::Handle space = H5_OWN(dataspace, H5Screate_simple(1, &n, nullptr));
      h5::Handle set = H5_OWN(dataset, H5Dcreate2(f, name, H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                                  H5P_DEFAULT));
      H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values->data()));
    }
    context_images_.reset();
  }
  h5::write_int_attribute(f, "format_version",
                          options_.with_visibility ? kFormatVersion : kFormatVersionWithoutVisibility);
  h5::write_string_attribute(f, "creator", std::string("trainer ") + TRAINER_VERSION);
  h5::write_string_attribute(f, "source", options_.source);
  if (!options_.image_root.empty()) h5::write_string_attribute(f, "image_root", options_.image_root);
  images_.reset();
  file_->commit();
}

}  // namespace trainer::data
