// Import of a labeled project into the HDF5 format (see import.hpp).
#include "data/import.hpp"

#include <opencv2/imgproc.hpp>  // cv::cvtColor, cv::resize

#include <algorithm>   // std::find
#include <cctype>      // std::isdigit
#include <cerrno>      // errno
#include <cstdio>      // std::sscanf
#include <cstring>     // std::strerror
#include <map>         // std::map: video ids by file-name pattern
#include <set>         // std::set
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <iterator>    // std::istreambuf_iterator
#include <vector>      // std::vector

#include "data/format.hpp"        // DatasetWriter
#include "data/label_csv.hpp"     // parse_label_csv
#include "data/media_loader.hpp"  // media_api: image codecs live in the media module
#include "data/pandas_h5.hpp"     // read_pandas_label_h5
#include "util/error.hpp"         // UserError

namespace trainer::data {

namespace fs = std::filesystem;

void parse_resize(const std::string& text, int* height, int* width) {
  int h = 0, w = 0;
  char x = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &h, &x, &w, &extra) != 3 || (x != 'x' && x != 'X') || h < 1 || w < 1 ||
      h > 16384 || w > 16384)
    throw UserError("--resize '" + text + "' is not HxW", "e.g. --resize 256x256 (height x width)");
  *height = h;
  *width = w;
}

namespace {

// Reads one frame as 8-bit gray or RGB; user errors name the CSV line.
cv::Mat read_image_file(const fs::path& path, const std::string& where);

cv::Mat read_frame(const LabelTable& table, size_t row, const fs::path& root) {
  return read_image_file(root / table.frame_paths[row], table.source + ":" + std::to_string(table.lines[row]));
}

// `where` says which line of which label file needs the image.
cv::Mat read_image_file(const fs::path& path, const std::string& where) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw UserError(where + ": image file " + path.string() + " not found",
                    "image paths are relative to --root (default: the CSV's folder; for a DeepLabCut project's "
                    "labeled-data/<video>/ CSV, the project's folder)");
  // Read the bytes ourselves: cv::imread prints its own warning for a file it cannot
  // open and cannot say why (a permission problem is not a decoding one).
  if (!fs::is_regular_file(path, ec))
    throw UserError(where + ": image " + path.string() + " is not a regular file",
                    "image paths are relative to --root (default: the CSV's folder)");
  std::vector<unsigned char> bytes;
  {
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError(where + ": cannot read image " + path.string() + ": " + std::strerror(errno));
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw UserError(where + ": cannot read image " + path.string() + ": " + std::strerror(errno));
  }
  cv::Mat img;
  if (!media_api(where + ": reading image " + path.string()).decode_image(bytes, img)) throw UserError(where + ": cannot decode image " + path.string() + " (PNG and JPEG are supported)");
  if (img.depth() != CV_8U)
    throw UserError(where + ": image " + path.string() + " is not 8-bit per channel", "convert the frames to 8-bit PNG");
  cv::Mat out;
  switch (img.channels()) {
    case 1: out = img; break;
    case 3: cv::cvtColor(img, out, cv::COLOR_BGR2RGB); break;
    case 4: cv::cvtColor(img, out, cv::COLOR_BGRA2RGB); break;
    default:
      throw UserError(where + ": image " + path.string() + " has " + std::to_string(img.channels()) + " channels");
  }
  return out;
}

}  // namespace

namespace {

// Where a label file's image paths start when --root is not given: the file's folder,
// except for a DeepLabCut project's PROJECT/labeled-data/<video>/CollectedData_*.csv,
// whose paths (labeled-data/<video>/img.png) start at PROJECT.
std::string default_image_root(const std::string& csv, const LabelTable& table) {
  const fs::path folder = fs::path(csv).parent_path();
  const bool in_dlc_video = folder.parent_path().filename() == "labeled-data";
  const bool dlc_paths = !table.frame_paths.empty() && table.frame_paths.front().rfind("labeled-data/", 0) == 0;
  if (in_dlc_video && dlc_paths) {
    const std::string project = folder.parent_path().parent_path().string();
    return project.empty() ? "." : project;
  }
  return folder.string();
}

}  // namespace

ImportSummary import_project(const ImportOptions& o) {
  if (o.csv.empty()) throw UserError("import: --csv is required", "run `trainer import --help`");
  if (o.out.empty()) throw UserError("import: --out is required", "run `trainer import --help`");
  LabeledFolder folder;
  // DeepLabCut's CollectedData_<scorer>.h5 (pandas) is read as well as its CSV twin.
  const std::string ext = fs::path(o.csv).extension().string();
  if (ext == ".h5" || ext == ".hdf5" || ext == ".H5")
    folder.table = read_pandas_label_h5(o.csv, o.keypoint_names);
  else
    folder.table = parse_label_csv(o.csv);
  folder.root = o.root.empty() ? default_image_root(o.csv, folder.table) : o.root;
  return import_label_tables({folder}, o);
}

namespace {

// lightning-pose's frame number of an image (utils/io.py get_context_img_paths): the
// first run of digits of the file name without extension (img0123.png -> 123). Its
// context frames are the files with that run replaced by the neighbour's number,
// zero-padded to the same width, in the same folder. So the frames that can be each
// other's context share the folder, the text around the run and the run's width: that
// is the "video" recorded for them. A name without digits (or with more than 9) is a
// video of its own, frame 0 (its context is itself).
struct FrameKey {
  std::string video;  // folder | prefix | width | suffix
  long number = 0;
};
FrameKey frame_key_of(const std::string& frame_path) {
  const fs::path p(frame_path);
  const std::string stem = p.stem().string();
  std::size_t start = 0;
  while (start < stem.size() && !std::isdigit(static_cast<unsigned char>(stem[start]))) ++start;
  std::size_t end = start;
  while (end < stem.size() && std::isdigit(static_cast<unsigned char>(stem[end]))) ++end;
  if (start == end || end - start > 9) return {"\x01" + frame_path, 0};
  const std::string folder = p.parent_path().string();
  return {folder + '\x01' + stem.substr(0, start) + '\x01' + std::to_string(end - start) + '\x01' + stem.substr(end) +
              p.extension().string(),
          std::stol(stem.substr(start, end - start))};
}

// lightning-pose's get_context_img_paths without the centre: the first run of digits
// of the name, n, replaced (every occurrence, as str.replace does) by max(n + d, 0)
// zero-padded to the run's width, for d = -2, -1, 1, 2. Empty for a name without digits.
std::vector<std::string> lp_context_paths(const std::string& frame_path) {
  const fs::path p(frame_path);
  const std::string stem = p.stem().string();
  std::size_t start = 0;
  while (start < stem.size() && !std::isdigit(static_cast<unsigned char>(stem[start]))) ++start;
  std::size_t end = start;
  while (end < stem.size() && std::isdigit(static_cast<unsigned char>(stem[end]))) ++end;
  if (start == end || end - start > 9) return {};
  const std::string centre = stem.substr(start, end - start);
  const long n = std::stol(centre);
  std::vector<std::string> out;
  for (int d : {-2, -1, 1, 2}) {
    std::string number = std::to_string(std::max(n + d, 0L));
    if (number.size() < centre.size()) number.insert(0, centre.size() - number.size(), '0');
    std::string name;
    for (std::size_t at = 0;;) {
      const std::size_t hit = stem.find(centre, at);
      if (hit == std::string::npos) {
        name += stem.substr(at);
        break;
      }
      name += stem.substr(at, hit - at) + number;
      at = hit + centre.size();
    }
    out.push_back((p.parent_path() / (name + p.extension().string())).string());
  }
  return out;
}

struct ContextOnlyFrame {
  fs::path full;      // on disk
  std::string rel;    // as the label file would name it (relative to the root)
  std::string where;  // which labelled frame needs it, for messages
};

}  // namespace

ImportSummary import_label_tables(const std::vector<LabeledFolder>& folders, const ImportOptions& o) {
  if (o.out.empty()) throw UserError("import: --out is required", "run `trainer import --help`");
  if (folders.empty()) throw UserError("import: no labeled frames to import");
  const LabelTable& first = folders.front().table;
  for (const auto& f : folders) {
    if (f.table.keypoint_names != first.keypoint_names)
      throw UserError("the keypoints of " + f.table.source + " differ from those of " + first.source,
                      "every labeled folder of a project must label the same bodyparts in the same order");
  }
  // (folder, row) of every frame, in order.
  std::vector<std::pair<std::size_t, std::size_t>> frames;
  for (std::size_t f = 0; f < folders.size(); ++f)
    for (std::size_t r = 0; r < folders[f].table.num_frames(); ++r) frames.emplace_back(f, r);
  const size_t n = frames.size();
  if (n == 0) throw UserError("import: " + first.source + " has no labeled frames");
  // Pass 1: sizes and channels of every frame (errors before anything is written).
  int channels = 1;
  int h0 = 0, w0 = 0;
  size_t first_mismatch = n;
  for (size_t i = 0; i < n; ++i) {
    const auto& [f, r] = frames[i];
    const cv::Mat img = read_frame(folders[f].table, r, folders[f].root);
    if (img.channels() == 3) channels = 3;
    if (i == 0) {
      h0 = img.rows;
      w0 = img.cols;
    } else if ((img.rows != h0 || img.cols != w0) && first_mismatch == n) {
      first_mismatch = i;
      if (o.resize_height == 0) {
        const LabelTable& table = folders[f].table;
        throw UserError("frames differ in size: " + first.frame_paths[0] + " is " + std::to_string(h0) + "x" +
                            std::to_string(w0) + " but " + table.frame_paths[r] + " (" + table.source + ":" +
                            std::to_string(table.lines[r]) + ") is " + std::to_string(img.rows) + "x" +
                            std::to_string(img.cols) + " (HxW)",
                        "pass --resize HxW to bring every frame (and its keypoints) to one size");
      }
    }
  }
  // Pass 1b: lightning-pose loads a labelled frame's neighbours t-2..t+2 (its
  // get_context_img_paths) from the same folder whether they are labelled or not; the
  // ones that exist and are not labelled are stored as context-only frames.
  std::vector<ContextOnlyFrame> context_only;
  {
    std::set<std::string> labelled;
    for (const auto& [f, r] : frames)
      labelled.insert((fs::path(folders[f].root) / folders[f].table.frame_paths[r]).lexically_normal().string());
    std::set<std::string> added;
    for (const auto& [f, r] : frames) {
      const LabelTable& table = folders[f].table;
      for (const std::string& rel : lp_context_paths(table.frame_paths[r])) {
        const fs::path full = (fs::path(folders[f].root) / rel).lexically_normal();
        std::error_code ec;
        if (labelled.count(full.string()) || added.count(full.string()) || !fs::is_regular_file(full, ec)) continue;
        added.insert(full.string());
        const std::string where = table.source + ":" + std::to_string(table.lines[r]) + " (context frame of " +
                                  table.frame_paths[r] + ")";
        const cv::Mat img = read_image_file(full, where);
        if ((img.rows != h0 || img.cols != w0) && o.resize_height == 0)
          throw UserError("frames differ in size: " + first.frame_paths[0] + " is " + std::to_string(h0) + "x" +
                              std::to_string(w0) + " but " + full.string() + ", " + where + ", is " +
                              std::to_string(img.rows) + "x" + std::to_string(img.cols) + " (HxW)",
                          "pass --resize HxW to bring every frame (and its keypoints) to one size");
        if (img.channels() == 3) channels = 3;
        context_only.push_back({full, rel, where});
      }
    }
  }
  const bool resize = o.resize_height > 0 && o.resize_width > 0;
  DatasetShape shape;
  shape.num_frames = static_cast<std::int64_t>(n);
  shape.height = resize ? o.resize_height : h0;
  shape.width = resize ? o.resize_width : w0;
  shape.channels = channels;
  shape.keypoint_names = first.keypoint_names;
  WriterOptions wo;
  wo.deflate_level = o.deflate_level;
  wo.with_video_info = true;
  wo.source = fs::absolute(o.csv.empty() ? first.source : o.csv).string();
  // One label file's folder of images: lightning-pose's data.data_dir for this CSV.
  if (folders.size() == 1) wo.image_root = fs::absolute(folders.front().root).lexically_normal().string();
  // lightning-pose's visible flags, when any label table has the column (the frames of
  // one without it get none: they follow uniform_heatmaps_for_nan_keypoints).
  for (const auto& f : folders) wo.with_visibility = wo.with_visibility || !f.table.visibility.empty();
  DatasetWriter writer(o.out, shape, wo);

  // Pass 2: convert and write.
  const size_t K = first.num_keypoints();
  std::vector<float> kp(K * 2);
  std::map<std::string, int> video_ids;
  for (size_t i = 0; i < n; ++i) {
    const auto& [f, r] = frames[i];
    const LabelTable& table = folders[f].table;
    cv::Mat img = read_frame(table, r, folders[f].root);
    if (channels == 3 && img.channels() == 1) cv::cvtColor(img, img, cv::COLOR_GRAY2RGB);
    const float* src = table.keypoints.data() + r * K * 2;
    const double sx = static_cast<double>(shape.width) / img.cols, sy = static_cast<double>(shape.height) / img.rows;
    if (img.rows != shape.height || img.cols != shape.width) {
      cv::Mat resized;
      const bool shrink = shape.height < img.rows && shape.width < img.cols;
      cv::resize(img, resized, cv::Size(shape.width, shape.height), 0, 0, shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
      img = resized;
    }
    for (size_t k = 0; k < K; ++k) {
      kp[2 * k] = static_cast<float>(src[2 * k] * sx);  // NaN stays NaN
      kp[2 * k + 1] = static_cast<float>(src[2 * k + 1] * sy);
    }
    if (!img.isContinuous()) img = img.clone();
    // Context frames (heatmap_mhcrnn): which frames neighbour which, by lightning-pose's naming rule.
    const FrameKey key = frame_key_of(fs::path(folders[f].root.empty() ? "." : folders[f].root).append(table.frame_paths[r]).lexically_normal().string());
    const int video = video_ids.emplace(key.video, static_cast<int>(video_ids.size())).first->second;
    const std::uint8_t* flags = table.visibility.empty() ? nullptr : table.visibility.data() + r * K;
    writer.write_frame(static_cast<std::int64_t>(i), img.ptr<std::uint8_t>(), kp.data(), table.frame_paths[r], video,
                       static_cast<int>(key.number), flags);
  }
  for (const ContextOnlyFrame& c : context_only) {
    cv::Mat img = read_image_file(c.full, c.where);
    if (channels == 3 && img.channels() == 1) cv::cvtColor(img, img, cv::COLOR_GRAY2RGB);
    if (img.rows != shape.height || img.cols != shape.width) {
      cv::Mat resized;
      const bool shrink = shape.height < img.rows && shape.width < img.cols;
      cv::resize(img, resized, cv::Size(shape.width, shape.height), 0, 0, shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
      img = resized;
    }
    if (!img.isContinuous()) img = img.clone();
    const FrameKey key = frame_key_of(c.full.string());
    const int video = video_ids.emplace(key.video, static_cast<int>(video_ids.size())).first->second;
    writer.write_context_frame(img.ptr<std::uint8_t>(), c.rel, video, static_cast<int>(key.number));
  }
  writer.finish();

  ImportSummary s;
  s.context_frames = static_cast<std::int64_t>(context_only.size());
  s.frames = shape.num_frames;
  s.height = shape.height;
  s.width = shape.width;
  s.channels = channels;
  s.keypoints = static_cast<int>(K);
  for (const auto& folder : folders)
    for (const auto& c : folder.table.skipped_coords)
      if (std::find(s.skipped_coords.begin(), s.skipped_coords.end(), c) == s.skipped_coords.end())
        s.skipped_coords.push_back(c);
  s.resized = resize;
  s.visibility = wo.with_visibility;
  return s;
}

}  // namespace trainer::data
