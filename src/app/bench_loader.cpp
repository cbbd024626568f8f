// `trainer bench loader`: frames/s of the data loader (read + resize + augment +
// normalize) per worker and in total, plus a per-stage breakdown on one thread.
#include <boost/program_options.hpp>  // options_description, command_line_parser
#include <time.h>                     // clock_gettime
#include <unistd.h>                   // getpid

#include <chrono>      // std::chrono::steady_clock
#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem::temp_directory_path, remove
#include <fstream>     // std::ifstream
#include <iostream>    // std::cout
#include <sstream>     // std::istringstream
#include <thread>      // std::thread::hardware_concurrency

#include "app/commands.hpp"    // bench_loader, Args
#include "data/augment.hpp"    // imgaug_names, parse_imgaug, make_transform, warp_image, normalize_to_planes
#include "data/unlabeled_augment.hpp"  // augments_unlabeled_frames
#include "data/dataset.hpp"    // Dataset
#include "data/loader.hpp"     // Loader
#include "data/sampler.hpp"    // distributed_rows
#include "data/synth.hpp"      // write_synthetic_dataset
#include "data/unlabeled_frames.hpp"  // UnlabeledFrames
#include "data/video_batches.hpp"     // VideoBatches
#include "data/video_reader.hpp"      // list_videos
#include "util/error.hpp"      // UserError
#include "util/name_list.hpp"  // join_names

namespace trainer::app {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU seconds used by the whole process: frames per CPU second is the per-core
// throughput even when other jobs share the cores (wall-clock rates then drop).
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The 1-minute load average (Linux), to tell a busy machine from a slow loader.
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string first;
  in >> first;
  return first.empty() ? "unknown" : first;
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      out.push_back(std::stoi(item));
    } catch (const std::exception&) {
      throw UserError("bench loader: --workers '" + text + "' is not a comma-separated list of integers");
    }
    if (out.back() < 0) throw UserError("bench loader: worker counts must be >= 0");
  }
  if (out.empty()) throw UserError("bench loader: --workers is empty");
  return out;
}

// Removes the benchmark's generated dataset on every exit path.
struct TempFile {
  std::string path;
  ~TempFile() {
    if (!path.empty()) {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  }
};

// Unlabelled video frames (the semi-supervised steps' second batch): decode +
// resize + normalize of consecutive sequences, as UnlabeledFrames delivers them.
void bench_unlabeled(const std::string& videos, const std::vector<int>& worker_counts, int sequence, int height,
                     int width, int channels, const std::string& imgaug, double seconds) {
  const std::vector<std::string> files = data::list_videos(videos);
  const data::Augmentation aug = data::parse_imgaug(imgaug);
  std::printf("unlabelled frames: %zu video(s) of %s, sequences of %d consecutive frames decoded as %s -> %dx%d "
              "float NCHW, %s, load average %s\n",
              files.size(), videos.c_str(), sequence, channels == 1 ? "gray" : "RGB", height, width,
              data::augments_unlabeled_frames(aug) ? ("augmented (imgaug " + imgaug + ")").c_str()
                                                   : "not augmented",
              load_average().c_str());
  std::printf("%8s %14s %18s %22s\n", "workers", "frames/s", "frames/s/worker", "frames/CPU-second");
  for (int w : worker_counts) {
    data::UnlabeledOptions o;
    o.videos = files;
    o.frames_per_rank = sequence;
    o.height = height;
    o.width = width;
    o.channels = channels;
    o.imgaug = aug;
    o.num_workers = std::max(1, w);
    data::UnlabeledFrames frames(o);
    frames.start_epoch(0, 0);
    frames.next();  // warm-up: thread start, decoder opens
    long done = 0, step = 1;
    const auto t0 = Clock::now();
    const double cpu0 = process_cpu_seconds();
    while (seconds_since(t0) < seconds) {
      done += frames.next().size;
      if (++step % frames.windows() == 0) frames.start_epoch(int(step / frames.windows()), 0);
    }
    const double elapsed = seconds_since(t0);
    const double cpu = process_cpu_seconds() - cpu0;
    const double rate = done / elapsed;
    std::printf("%8d %14.0f %18.0f %22.0f\n", std::max(1, w), rate, rate / std::max(1, w), done / cpu);
    std::fflush(stdout);
  }
}

// Video prediction's batches (`trainer predict --video`): the whole video decoded,
// resized and normalized by VideoBatches' workers, in frame order, once per worker count.
void bench_video(const std::string& video, const std::vector<int>& worker_counts, int batch, int height, int width,
                 int channels) {
  const data::VideoReader probe(video);  // a missing or unreadable video: its error, before the table
  std::printf("video prediction batches: %s decoded as %s -> %dx%d float NCHW, batch %d, load average %s\n",
              video.c_str(), channels == 1 ? "gray" : "RGB", height, width, batch, load_average().c_str());
  std::printf("%8s %8s %14s %22s %8s\n", "workers", "frames", "frames/s", "frames/CPU-second", "seeks");
  for (int w : worker_counts) {
    data::VideoBatchOptions o;
    o.batch_size = batch;
    o.height = height;
    o.width = width;
    o.channels = channels;
    o.num_workers = std::max(1, w);
    const auto t0 = Clock::now();
    const double cpu0 = process_cpu_seconds();
    data::VideoBatches batches(video, 0, -1, o);
    long done = 0;
    while (const data::Batch* b = batches.next()) done += b->size;
    const double elapsed = seconds_since(t0);
    const double cpu = process_cpu_seconds() - cpu0;
    std::printf("%8d %8ld %14.0f %22.0f %8ld\n", std::max(1, w), done, done / elapsed, done / cpu, batches.seeks());
    std::fflush(stdout);
  }
}

}  // namespace

int bench_loader(const Args& args) {
  namespace po = boost::program_options;
  std::string data_file, workers_text, imgaug = "dlc", unlabeled, video;
  int sequence = 32;
  std::int64_t frames = 256;
  int size = 256, height = 256, width = 256, batch = 16, channels = 3, deflate = 0;
  double seconds = 3.0;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  workers_text = "0,1";
  for (unsigned w = 2; w <= cores; w *= 2) workers_text += "," + std::to_string(w);
  po::options_description desc(
      "usage: trainer bench loader [options]\n"
      "Loader throughput: frames/s in total and per worker for each worker count, plus a one-thread\n"
      "breakdown (HDF5 read, resize+augment warp, normalize). Without --data, a synthetic dataset is\n"
      "generated in the temp folder and removed afterwards.\n"
      "options");
  desc.add_options()
      ("help,h", "show this help")
      ("data", po::value(&data_file)->default_value(""), "HDF5 dataset to read (default: synthetic)")
      ("frames", po::value(&frames)->default_value(frames), "synthetic frames")
      ("size", po::value(&size)->default_value(size), "synthetic frame size (square)")
      ("channels", po::value(&channels)->default_value(channels),
       "synthetic frame channels, or with --unlabeled the decoded ones (1 or 3: the labelled frames')")
      ("deflate", po::value(&deflate)->default_value(deflate), "gzip level of the synthetic frames")
      ("height", po::value(&height)->default_value(height), "network input height (image_resize_dims)")
      ("width", po::value(&width)->default_value(width), "network input width")
      ("batch", po::value(&batch)->default_value(batch), "batch size")
      ("imgaug", po::value(&imgaug)->default_value(imgaug),
       ("one of " + join_names(data::imgaug_names()) + " (training.imgaug; default: resize only; with --unlabeled, dlc and dlc-top-down augment as "
        "lightning-pose's DALI pipeline)").c_str())
      ("workers", po::value(&workers_text)->default_value(workers_text),
       "comma-separated worker counts to measure (0: load in the calling thread)")
      ("seconds", po::value(&seconds)->default_value(seconds), "measuring time per worker count")
      ("unlabeled", po::value(&unlabeled)->default_value(""),
       "a video or folder of videos: measure the unlabelled frames of semi-supervised training instead "
       "(decode + resize + normalize, per worker and per CPU-second)")
      ("sequence", po::value(&sequence)->default_value(sequence), "with --unlabeled: consecutive frames per step")
      ("video", po::value(&video)->default_value(""),
       "a video: measure video prediction's batches instead (`trainer predict --video`: the whole video decoded, "
       "resized and normalized in frame order, per worker count, with the decoder's seeks)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UserError(std::string("bench loader: ") + e.what(), "run `trainer bench loader --help`");
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  const std::vector<int> worker_counts = parse_list(workers_text);
  const data::Augmentation aug = data::parse_imgaug(imgaug);
  if (batch < 1 || height < 1 || width < 1 || seconds <= 0) throw UserError("bench loader: sizes and time must be positive");

  if (!video.empty()) {
    if (channels != 1 && channels != 3) throw UserError("bench loader: --channels is 1 or 3");
    bench_video(video, worker_counts, batch, height, width, channels);
    return 0;
  }
  if (!unlabeled.empty()) {
    if (sequence < 1) throw UserError("bench loader: --sequence must be at least 1");
    if (channels != 1 && channels != 3) throw UserError("bench loader: --channels is 1 or 3");
    bench_unlabeled(unlabeled, worker_counts, sequence, height, width, channels, imgaug, seconds);
    return 0;
  }

  TempFile temp;
  if (data_file.empty()) {
    temp.path = (std::filesystem::temp_directory_path() / ("trainer-bench-loader-" + std::to_string(::getpid()) + ".h5")).string();
    data::SynthOptions so;
    so.frames = frames;
    so.size = size;
    so.channels = channels;
    so.deflate_level = deflate;
    data::write_synthetic_dataset(temp.path, so);
    data_file = temp.path;
  }
  const data::Dataset ds = data::Dataset::open({data_file});
  std::vector<std::int64_t> all(static_cast<size_t>(ds.size()));
  for (std::int64_t i = 0; i < ds.size(); ++i) all[static_cast<size_t>(i)] = i;

  std::printf("loader benchmark: %s, %lld frames %dx%dx%d -> %dx%d float NCHW, imgaug %s, batch %d, %u hardware threads, load average %s\n",
              temp.path.empty() ? data_file.c_str() : "synthetic data", static_cast<long long>(ds.size()), ds.height(),
              ds.width(), ds.channels(), height, width, imgaug.c_str(), batch, cores, load_average().c_str());

  // One-thread breakdown of the stages.
  {
    std::vector<std::uint8_t> raw(ds.frame_bytes()), warped(static_cast<size_t>(height) * width * ds.channels());
    std::vector<float> planes(static_cast<size_t>(3) * height * width);
    const int n = static_cast<int>(std::min<std::int64_t>(ds.size(), 200));
    double t_read = 0, t_warp = 0, t_norm = 0;
    for (int i = 0; i < n; ++i) {
      auto t0 = Clock::now();
      ds.read_image(i, raw.data());
      t_read += seconds_since(t0);
      const data::FrameTransform t = data::make_transform(ds.height(), ds.width(), height, width, aug, 1, 0, i);
      t0 = Clock::now();
      data::warp_image(t, raw.data(), ds.height(), ds.width(), ds.channels(), warped.data(), height, width);
      t_warp += seconds_since(t0);
      t0 = Clock::now();
      data::normalize_to_planes(t, warped.data(), height, width, ds.channels(), planes.data());
      t_norm += seconds_since(t0);
    }
    std::printf("one thread, per frame: read %.3f ms, warp %.3f ms, normalize %.3f ms (%.0f frames/s)\n",
                1e3 * t_read / n, 1e3 * t_warp / n, 1e3 * t_norm / n, n / (t_read + t_warp + t_norm));
  }

  std::printf("%8s %14s %18s %22s\n", "workers", "frames/s", "frames/s/worker", "frames/CPU-second");
  for (int w : worker_counts) {
    data::LoaderOptions o;
    o.batch_size = batch;
    o.height = height;
    o.width = width;
    o.augmentation = aug;
    o.num_workers = w;
    o.prefetch_batches = std::max(2, w);
    data::Loader loader(ds, o);
    data::SamplerOptions so;
    std::int64_t done = 0;
    int epoch = 0;
    // Warm-up: one batch (thread start, first HDF5 opens).
    loader.start_epoch(epoch, data::distributed_rows(all, so, epoch));
    loader.next();
    const auto t0 = Clock::now();
    const double cpu0 = process_cpu_seconds();
    while (seconds_since(t0) < seconds) {
      const data::Batch* b = loader.next();
      if (!b) {
        ++epoch;
        loader.start_epoch(epoch, data::distributed_rows(all, so, epoch));
        continue;
      }
      done += b->size;
    }
    const double elapsed = seconds_since(t0);
    const double cpu = process_cpu_seconds() - cpu0;
    const double rate = done / elapsed;
    std::printf("%8d %14.0f %18.0f %22.0f\n", w, rate, rate / std::max(1, w), done / cpu);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace trainer::app
