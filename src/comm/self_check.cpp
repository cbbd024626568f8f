#include "comm/self_check.hpp"

#include <cmath>    // std::fabs
#include <memory>   // std::unique_ptr
#include <ostream>  // std::ostream
#include <string>   // std::string
#include <vector>   // std::vector

#include "comm/host_stream.hpp"  // HostStream

namespace trainer::comm {

namespace {

// Values are small integers (exact in float) so sums are exact in any order.
float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * 10 + static_cast<int>(i % 7)); }

struct Checker {
  Communicator& comm;
  std::ostream& log;
  int failures = 0;
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    ++failures;
    log << "check failed on rank " << comm.rank() << ": " << what << "\n";
  }
};

void check_all_reduce(Checker& c, compute::Stream& stream, std::size_t count, ReduceOp op) {
  const int n = c.comm.size();
  std::vector<float> data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = value(c.comm.rank(), i);
  c.comm.all_reduce(data.data(), count, op, stream, "check all_reduce float");
  bool ok = true;
  for (std::size_t i = 0; i < count && ok; ++i) {
    double expected = 0;
    for (int r = 0; r < n; ++r) expected += value(r, i);
    if (op == ReduceOp::avg) expected /= n;
    ok = std::fabs(data[i] - expected) <= 1e-6 * std::fabs(expected);
  }
  c.expect(ok, std::string("all_reduce float ") + (op == ReduceOp::sum ? "sum" : "avg") + " of " +
                   std::to_string(count));

  std::vector<double> d(count);
  for (std::size_t i = 0; i < count; ++i) d[i] = value(c.comm.rank(), i) + 0.25;
  c.comm.all_reduce(d.data(), count, op, stream, "check all_reduce double");
  ok = true;
  for (std::size_t i = 0; i < count && ok; ++i) {
    double expected = 0;
    for (int r = 0; r < n; ++r) expected += value(r, i) + 0.25;
    if (op == ReduceOp::avg) expected /= n;
    ok = std::fabs(d[i] - expected) <= 1e-12 * std::fabs(expected);
  }
  c.expect(ok, "all_reduce double of " + std::to_string(count));
}

}  // namespace

int run_self_check(Communicator& comm, std::ostream& log) {
  HostStream stream;
  Checker c{comm, log};
  const int n = comm.size();
  const int me = comm.rank();

  for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(17), std::size_t(1000003)}) {
    check_all_reduce(c, stream, count, ReduceOp::sum);
    check_all_reduce(c, stream, count, ReduceOp::avg);
  }

  for (int root = 0; root < n; ++root) {
    std::vector<float> data(33, static_cast<float>(me == root ? 1000 + root : -1));
    comm.broadcast(data.data(), data.size(), root, stream, "check broadcast");
    bool ok = true;
    for (float v : data) ok = ok && v == static_cast<float>(1000 + root);
    c.expect(ok, "broadcast from root " + std::to_string(root));
  }

  {
    const std::size_t per_rank = 5;
    std::vector<float> send(per_rank), recv(per_rank * n, -1.f);
    for (std::size_t i = 0; i < per_rank; ++i) send[i] = value(me, i);
    comm.all_gather(send.data(), recv.data(), per_rank, stream, "check all_gather");
    bool ok = true;
    for (int r = 0; r < n; ++r)
      for (std::size_t i = 0; i < per_rank; ++i) ok = ok && recv[r * per_rank + i] == value(r, i);
    c.expect(ok, "all_gather of 5 per rank");
  }

  {
    // Several buckets in flight at once, waited for in order, as the reducer does.
    const int buckets = 6;
    std::vector<std::vector<float>> data(buckets);
    std::vector<std::unique_ptr<Work>> work;
    for (int b = 0; b < buckets; ++b) {
      data[b].assign(1000 * (b + 1), static_cast<float>(me + b));
      work.push_back(comm.all_reduce_async(data[b].data(), data[b].size(), ReduceOp::avg, stream,
                                           "check async bucket"));
    }
    bool ok = true;
    for (int b = 0; b < buckets; ++b) {
      work[b]->wait(stream);
      const float expected = static_cast<float>((n - 1) / 2.0 + b);
      for (float v : data[b]) ok = ok && std::fabs(v - expected) <= 1e-6f * std::fabs(expected) + 1e-6f;
    }
    c.expect(ok, "6 asynchronous all-reduces in flight");
  }

  comm.barrier("check barrier");

  double failures = c.failures;
  comm.all_reduce(&failures, 1, ReduceOp::sum, stream, "check verdict");
  return static_cast<int>(failures);
}

}  // namespace trainer::comm
