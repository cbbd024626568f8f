// `trainer bench allreduce`: all-reduce time, algbw and busbw per message size,
// as nccl-tests prints them, so users can check a cluster's interconnect before
// training. Run under mpirun/srun (or with --nprocs N on one machine). `--check`
// instead verifies every collective of the communicator against known answers (a
// quick test of a cluster's MPI or Gloo set-up; the tests use it too).
#include <algorithm>  // std::max, std::min
#include <chrono>     // std::chrono::steady_clock
#include <cstdio>     // std::snprintf
#include <iostream>   // std::cout, std::cerr
#include <string>     // std::string
#include <vector>     // std::vector

#include <boost/program_options.hpp>  // command-line options

#include "app/commands.hpp"            // bench_allreduce, Args
#include "comm/bandwidth.hpp"          // algbw_gbps, busbw_gbps
#include "compute/backend.hpp"         // compute::make_cpu_backend, make_cuda_backend, DeviceBuffer
#include "comm/host_stream.hpp"        // HostStream
#include "comm/make_communicator.hpp"  // make_communicator
#include "comm/self_check.hpp"         // run_self_check
#include "util/env.hpp"             // capture_environment
#include "runtime/mpi_session.hpp"     // runtime::MpiSession
#include "runtime/visible_gpus.hpp"    // runtime::visible_gpu_count
#include "util/error.hpp"              // UserError

namespace po = boost::program_options;

namespace trainer::app {

namespace {

std::size_t parse_bytes(const std::string& text) {
  std::size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double factor = 1;
  if (unit == "K" || unit == "KB" || unit == "k") factor = 1024.0;
  else if (unit == "M" || unit == "MB") factor = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB") factor = 1024.0 * 1024 * 1024;
  else if (!unit.empty() || used == 0) throw UserError("bench allreduce: '" + text + "' is not a size", "e.g. 4K, 256M, 1G");
  if (number <= 0) throw UserError("bench allreduce: size '" + text + "' must be positive");
  return static_cast<std::size_t>(number * factor);
}

std::string human_bytes(std::size_t bytes) {
  char buf[32];
  if (bytes >= (1u << 20)) std::snprintf(buf, sizeof buf, "%zuM", bytes >> 20);
  else if (bytes >= (1u << 10)) std::snprintf(buf, sizeof buf, "%zuK", bytes >> 10);
  else std::snprintf(buf, sizeof buf, "%zu", bytes);
  return buf;
}

}  // namespace

int bench_allreduce(const Args& args) {
  std::string backend = "mpi";
  std::string min_bytes = "4K";
  std::string max_bytes = "256M";
  int iters = 20;
  int warmup = 5;
  double timeout_s = 600.0;
  int nprocs = 1;
  po::options_description visible(
      "usage: [mpirun -np N] trainer bench allreduce [options]\n"
      "All-reduce (sum, float32, in place) time per message size, doubling from\n"
      "--min-bytes to --max-bytes, with algbw = bytes/time and\n"
      "busbw = algbw * 2(n-1)/n as nccl-tests defines them. Rank 0 prints the table.\n\n"
      "options");
  visible.add_options()
      ("help,h", "print this help")
      ("backend", po::value(&backend)->default_value(backend), "communicator: mpi | gloo | nccl")
      ("min-bytes", po::value(&min_bytes)->default_value(min_bytes), "smallest message (e.g. 4K)")
      ("max-bytes", po::value(&max_bytes)->default_value(max_bytes), "largest message (e.g. 256M)")
      ("iters", po::value(&iters)->default_value(iters), "timed iterations per size (fewer above 4 MB)")
      ("warmup", po::value(&warmup)->default_value(warmup), "untimed iterations per size")
      ("timeout", po::value(&timeout_s)->default_value(timeout_s), "collective timeout in seconds")
      ("nprocs", po::value(&nprocs)->default_value(nprocs), "start N ranks on this machine without mpirun")
      ("check", "verify the communicator's collectives (sums, broadcasts, gathers, barriers; mpi and gloo) "
                "against known answers instead of timing them: exit 0 when every rank agrees they passed");
  po::options_description all;
  all.add(visible);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UserError(std::string("bench allreduce: ") + e.what(), "see `trainer bench allreduce --help`");
  }
  if (vm.count("help")) {
    std::cout << visible << "\n";
    return 0;
  }
  if (iters < 1 || warmup < 0) throw UserError("bench allreduce: --iters must be >= 1 and --warmup >= 0");
  const std::size_t lo = parse_bytes(min_bytes), hi = parse_bytes(max_bytes);
  if (lo > hi) throw UserError("bench allreduce: --min-bytes is larger than --max-bytes");

  Args spawn_args{"bench", "allreduce"};
  spawn_args.insert(spawn_args.end(), args.begin(), args.end());
  runtime::MpiSession session(spawn_args, nprocs, capture_environment(), timeout_s);
  // NCCL: one GPU per rank on a node, the rank's local index (in a build that has it).
  if (backend == "nccl") comm::require_nccl_build();
  const int device = backend == "nccl" ? session.world().local_rank : -1;
  if (backend == "nccl" && runtime::visible_gpu_count() <= device)
    throw UserError("bench allreduce --backend nccl needs one GPU per rank on a node, but local rank " +
                        std::to_string(device) + " sees " + std::to_string(runtime::visible_gpu_count()) + " GPU(s)",
                    "use --backend mpi or gloo on CPU nodes, or start at most as many ranks per node as GPUs");
  auto comm = [&] {
    const auto stage = session.watchdog().stage("start-up: " + backend + " communicator set-up");
    return comm::make_communicator(backend, session.comm(), timeout_s, device);
  }();
  const bool root = comm->rank() == 0;

  if (vm.count("check")) {
    if (comm->uses_device_buffers())
      throw UserError("bench allreduce --check runs on host buffers", "use --backend mpi or gloo");
    const int failures = comm::run_self_check(*comm, std::cerr);
    if (root) {
      std::cout << "communicator check (" << comm->name() << ", " << comm->size() << " ranks): "
                << (failures == 0 ? "passed" : std::to_string(failures) + " failures") << std::endl;
    }
    return failures == 0 ? 0 : kExitFailure;
  }

  // Buffers where the communicator wants them: GPU memory for NCCL, host otherwise.
  std::unique_ptr<compute::Backend> memory;
  std::unique_ptr<comm::Communicator> host_comm;  // NCCL: the timing reduction runs on the host
  if (comm->uses_device_buffers()) {
#ifdef TRAINER_WITH_CUDA
    memory = compute::make_cuda_backend(device);
    host_comm = comm::make_communicator("mpi", session.comm(), timeout_s);
#endif
  } else {
    memory = compute::make_cpu_backend(1);
  }
  TRAINER_ASSERT(memory, "no memory backend for the " << backend << " communicator");
  comm::Communicator& scalars = host_comm ? *host_comm : *comm;
  compute::Stream& stream = memory->default_stream();
  comm::HostStream host_stream;

  if (root) {
    std::cout << "# all-reduce benchmark: backend " << comm->name() << ", " << comm->size()
              << " ranks, float32 sum in place, time averaged over iterations and ranks\n";
    std::printf("# %10s %12s %6s %12s %10s %10s\n", "size", "count", "iters", "time(us)", "algbw(GB/s)",
                "busbw(GB/s)");
    std::fflush(stdout);
  }
  compute::DeviceBuffer buffer(*memory, std::max<std::size_t>(1, hi / sizeof(float)));
  for (std::size_t bytes = lo; bytes <= hi; bytes *= 2) {
    const std::size_t count = std::max<std::size_t>(1, bytes / sizeof(float));
    // Deterministic on every rank: the same number of collectives everywhere.
    const int n_iters = std::max(2, static_cast<int>(std::min<std::size_t>(
                                        iters, std::size_t(iters) * (4u << 20) / std::max<std::size_t>(bytes, 1))));
    // Ones: repeated in-place sums grow as n^iterations, which stays finite here.
    memory->fill(buffer.data(), 1.0f, count, stream);
    for (int i = 0; i < warmup; ++i)
      comm->all_reduce(buffer.data(), count, comm::ReduceOp::sum, stream, "bench warm-up");
    stream.synchronize();
    comm->barrier("bench barrier");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n_iters; ++i)
      comm->all_reduce(buffer.data(), count, comm::ReduceOp::sum, stream, "bench all_reduce");
    stream.synchronize();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n_iters;
    scalars.all_reduce(&seconds, 1, comm::ReduceOp::avg, host_stream, "bench timing");
    if (root) {
      const std::size_t real_bytes = count * sizeof(float);
      std::printf("  %10s %12zu %6d %12.1f %10.3f %10.3f\n", human_bytes(real_bytes).c_str(), count, n_iters,
                  seconds * 1e6, comm::algbw_gbps(real_bytes, seconds),
                  comm::busbw_gbps(real_bytes, seconds, comm->size()));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace trainer::app
