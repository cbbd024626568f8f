#include "comm/gloo_collectives.hpp"

#include <unistd.h>  // gethostname

#include <algorithm>  // std::max
#include <chrono>     // std::chrono::milliseconds
#include <cstring>    // std::memcpy
#include <string>     // std::string

#include <gloo/allgather.h>              // gloo::allgather
#include <gloo/allreduce.h>              // gloo::allreduce
#include <gloo/barrier.h>                // gloo::barrier
#include <gloo/broadcast.h>              // gloo::broadcast
#include <gloo/common/error.h>           // gloo::IoException
#include <gloo/common/logging.h>         // gloo::EnforceNotMet
#include <gloo/math.h>                   // gloo::sum
#include <gloo/rendezvous/context.h>     // gloo::rendezvous::Context
#include <gloo/transport/tcp/device.h>   // gloo::transport::tcp::CreateDevice

#include "comm/gloo_mpi_store.hpp"  // GlooMpiStore
#include "util/error.hpp"           // MPI_CHECK, SystemError, UserError

namespace trainer::comm {

namespace {

using Millis = std::chrono::milliseconds;

// Time left until the deadline, or zero when it has passed.
Millis remaining(const Deadline& deadline) {
  const auto left = std::chrono::duration_cast<Millis>(deadline.at - std::chrono::steady_clock::now());
  return std::max(left, Millis(0));
}

// Runs one Gloo collective: false when it timed out, SystemError for other failures.
template <typename Fn>
bool run_gloo(const char* call, const Deadline& deadline, Fn fn) {
  if (remaining(deadline).count() <= 0) return false;
  try {
    fn(remaining(deadline));
    return true;
  } catch (const gloo::IoException& e) {
    if (std::chrono::steady_clock::now() >= deadline.at - Millis(50)) return false;
    throw SystemError(std::string("Gloo call failed: ") + call + ": " + e.what());
  } catch (const gloo::EnforceNotMet& e) {
    throw SystemError(std::string("Gloo call failed: ") + call + ": " + e.what());
  }
}

std::string host_name() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace

GlooCollectives::GlooCollectives(MPI_Comm world, double timeout_s, const std::string& socket_ifname) {
  MPI_CHECK(MPI_Comm_rank(world, &rank_));
  MPI_CHECK(MPI_Comm_size(world, &size_));
  gloo::transport::tcp::attr attr;
  if (!socket_ifname.empty()) {
    attr.iface = socket_ifname;
    endpoint_ = "interface " + socket_ifname + " (GLOO_SOCKET_IFNAME)";
  } else {
    attr.hostname = host_name();
    endpoint_ = "hostname " + attr.hostname;
  }
  if (size_ == 1) return;  // nothing to connect; every collective is local
  std::shared_ptr<gloo::transport::Device> device;
  try {
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw UserError("gloo: cannot open a TCP device on " + endpoint_ + ": " + e.what(),
                    "set GLOO_SOCKET_IFNAME to a network interface every rank can reach (see `ip addr`)");
  }
  auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
  context->setTimeout(Millis(static_cast<long long>(timeout_s * 1000.0)));
  GlooMpiStore store(world);
  try {
    context->connectFullMesh(store, device);
  } catch (const gloo::Exception& e) {
    throw SystemError("gloo: connecting the ranks over TCP (" + endpoint_ + ") failed: " + e.what() +
                      "; set GLOO_SOCKET_IFNAME to an interface every rank can reach");
  } catch (const gloo::EnforceNotMet& e) {
    throw SystemError("gloo: connecting the ranks over TCP (" + endpoint_ + ") failed: " + e.what());
  }
  context_ = std::move(context);
}

GlooCollectives::~GlooCollectives() = default;

template <typename T>
bool GlooCollectives::sum_impl(T* data, std::size_t count, const Deadline& deadline) {
  if (!context_ || count == 0) return true;
  return run_gloo("allreduce", deadline, [&](Millis timeout) {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(data, count);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<T>));
    opts.setTag(tag_++);
    opts.setTimeout(timeout);
    gloo::allreduce(opts);
  });
}

bool GlooCollectives::sum(float* data, std::size_t count, const Deadline& deadline) {
  return sum_impl(data, count, deadline);
}

bool GlooCollectives::sum(double* data, std::size_t count, const Deadline& deadline) {
  return sum_impl(data, count, deadline);
}

bool GlooCollectives::broadcast(float* data, std::size_t count, int root, const Deadline& deadline) {
  if (!context_ || count == 0) return true;
  return run_gloo("broadcast", deadline, [&](Millis timeout) {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(data, count);
    opts.setRoot(root);
    opts.setTag(tag_++);
    opts.setTimeout(timeout);
    gloo::broadcast(opts);
  });
}

bool GlooCollectives::all_gather(const float* send, float* recv, std::size_t count, const Deadline& deadline) {
  if (!context_) {
    std::memcpy(recv, send, count * sizeof(float));
    return true;
  }
  if (count == 0) return true;
  return run_gloo("allgather", deadline, [&](Millis timeout) {
    gloo::AllgatherOptions opts(context_);
    opts.setInput(const_cast<float*>(send), count);  // Gloo only reads the input
    opts.setOutput(recv, count * static_cast<std::size_t>(size_));
    opts.setTag(tag_++);
    opts.setTimeout(timeout);
    gloo::allgather(opts);
  });
}

bool GlooCollectives::barrier(const Deadline& deadline) {
  if (!context_) return true;
  return run_gloo("barrier", deadline, [&](Millis timeout) {
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag_++);
    opts.setTimeout(timeout);
    gloo::barrier(opts);
  });
}

}  // namespace trainer::comm
