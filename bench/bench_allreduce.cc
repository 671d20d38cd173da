// All-reduce benchmark: N ranks as processes of this host, each a CollectiveGroup (Gloo's ring
// over TCP pairs), summing float32 buffers of 64 KiB, 1, 16 and 64 MiB. Beside each figure, the
// limit: a raw TCP ring between the same processes, each rank streaming to the next while it
// reads from the one before (plain sockets, no collective). Figures as nccl-tests defines them:
// algbw = bytes / time; busbw = algbw x 2(N-1)/N, which is what each rank's link carries, so it
// compares with the raw ring's per-link rate.
// Usage: bench_allreduce RANKS [SIZE_BYTES...]; prints one line per size (rank 0's timing).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/collective/collective_group.h"
#include "runtime/transport/held_port.h"
#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace oar;
using namespace oar::runtime;
using Clock = std::chrono::steady_clock;
static llvm::ExitOnError exitOnErr("bench_allreduce: ");

namespace {

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Runs `op` until 0.5 s have passed (at least 5 times, after 2 warm-ups); the median time.
/// Every rank runs it the same number of times: rank 0 decides and broadcasts the count.
template <typename Op> double medianSeconds(CollectiveGroup &group, Op op) {
  for (int i = 0; i < 2; ++i)
    op();
  auto t = Clock::now();
  op();
  double once = secondsSince(t);
  double count = std::clamp(0.5 / std::max(once, 1e-6), 5.0, 500.0);
  exitOnErr(group.broadcast(&count, sizeof(count), 0));
  std::vector<double> times;
  for (int i = 0; i < static_cast<int>(count); ++i) {
    t = Clock::now();
    op();
    times.push_back(secondsSince(t));
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

int listenOnLoopback(int &port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&a), len) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0)
    exitOnErr(makeError("cannot listen for the raw ring: {0}", std::strerror(errno)));
  port = ntohs(a.sin_port);
  return fd;
}

void writeAll(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0)
      exitOnErr(makeError("raw ring write: {0}", std::strerror(errno)));
    p += w, n -= static_cast<size_t>(w);
  }
}

void readAll(int fd, char *p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r <= 0)
      exitOnErr(makeError("raw ring read: {0}", r == 0 ? "closed" : std::strerror(errno)));
    p += r, n -= static_cast<size_t>(r);
  }
}

/// The raw TCP ring: its sockets to the next rank and from the one before.
struct RawRing {
  int toNext = -1, fromPrevious = -1;
  /// Sends `bytes` to the next rank while reading as many from the one before.
  void exchange(std::vector<char> &out, std::vector<char> &in) {
    std::thread sender([&] { writeAll(toNext, out.data(), out.size()); });
    readAll(fromPrevious, in.data(), in.size());
    sender.join();
  }
};

RawRing connectRing(CollectiveGroup &group) {
  int port = 0, listener = listenOnLoopback(port);
  // Every rank's port, through the group itself: rank r writes slot r, the sum fills them all.
  std::vector<double> ports(group.ranks(), 0.0);
  ports[group.rank()] = port;
  exitOnErr(group.allreduceSum(ports.data(), ports.size()));
  RawRing ring;
  ring.toNext = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(ports[(group.rank() + 1) % group.ranks()]));
  if (connect(ring.toNext, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0)
    exitOnErr(makeError("raw ring connect: {0}", std::strerror(errno)));
  ring.fromPrevious = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (ring.fromPrevious < 0)
    exitOnErr(makeError("raw ring accept: {0}", std::strerror(errno)));
  close(listener);
  int one = 1;
  setsockopt(ring.toNext, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return ring;
}

void runRank(int rank, int ranks, const std::string &rendezvous, std::shared_ptr<HeldPort> held,
             const std::vector<size_t> &sizes) {
  CollectiveOptions o;
  o.rank = rank, o.ranks = ranks, o.rendezvous = rendezvous, o.jobId = "bench";
  o.heldPort = rank == 0 ? std::move(held) : nullptr;
  if (const char *streams = std::getenv("OAR_BENCH_STREAMS")) // connections per pair
    o.streams = std::atoi(streams);
  if (const char *shared = std::getenv("OAR_BENCH_SHARED_MEMORY")) // 0: Gloo's TCP ring
    o.sameHostMemory = std::strcmp(shared, "0") != 0;
  auto group = exitOnErr(CollectiveGroup::join(o));
  RawRing ring = connectRing(*group);
  if (rank == 0)
    llvm::outs() << llvm::formatv("{0} ranks (processes), float32 sum through {5}, median of each "
                                  "size's runs\n"
                                  "{1,10} {2,14} {3,14} {4,18}\n",
                                  ranks, "bytes", "algbw GB/s", "busbw GB/s", "raw TCP ring GB/s",
                                  group->sharesMemory()
                                      ? "shared memory"
                                      : "TCP, " + std::to_string(o.streams) + " connection(s) a pair");
  for (size_t bytes : sizes) {
    std::vector<float> data(bytes / sizeof(float), 1.0f);
    double t =
        medianSeconds(*group, [&] { exitOnErr(group->allreduceSum(data.data(), data.size())); });
    // The raw ring carries what each link carries in a ring all-reduce: 2(N-1)/N of the buffer.
    size_t perLink = bytes * 2 * (ranks - 1) / ranks;
    std::vector<char> out(perLink, 'x'), in(perLink);
    double raw = medianSeconds(*group, [&] { ring.exchange(out, in); });
    double algbw = bytes / t / 1e9, busbw = algbw * 2.0 * (ranks - 1) / ranks;
    if (rank == 0)
      llvm::outs() << llvm::formatv("{0,10} {1,14:f3} {2,14:f3} {3,18:f3}\n", bytes, algbw, busbw,
                                    perLink / raw / 1e9);
    llvm::outs().flush();
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    exitOnErr(makeError("usage: bench_allreduce RANKS [SIZE_BYTES...]"));
  int ranks = std::atoi(argv[1]);
  if (ranks < 2)
    exitOnErr(makeError("RANKS must be at least 2"));
  std::vector<size_t> sizes;
  for (int i = 2; i < argc; ++i)
    sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty())
    sizes = {size_t(64) << 10, size_t(1) << 20, size_t(16) << 20, size_t(64) << 20};
  auto held = std::make_shared<HeldPort>(std::move(exitOnErr(HeldPort::onLoopback(1)).front()));
  std::string rendezvous = "127.0.0.1:" + std::to_string(held->port());
  llvm::outs().flush();
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) { // before any thread of this process starts
    pid_t pid = fork();
    if (pid < 0)
      exitOnErr(makeError("cannot fork rank {0}: {1}", r, std::strerror(errno)));
    if (pid == 0) {
      runRank(r, ranks, rendezvous, held, sizes);
      llvm::outs().flush();
      _exit(0);
    }
    children.push_back(pid);
  }
  held.reset();
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed ? 1 : 0;
}
