// The shared-memory all-reduce: the segment, its barrier (a futex with a deadline) and the
// rounds that sum the ranks' buffers.
#include "runtime/collective/shared_segment.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <linux/futex.h>
#include <new>
#include <optional>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include "runtime/wire/peer_memory.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

constexpr uint64_t kMagic = 0x316d68732d72616fULL; // "oar-shm1"
constexpr size_t kHeaderBytes = 8192;
/// Pause loops before a waiting rank sleeps on the futex: a rank that arrives within a few
/// microseconds is met without two system calls.
constexpr int kSpins = 2000;
constexpr std::chrono::milliseconds kLookAround{50}; ///< how often a waiting rank checks peers

std::string readLink(const char *path) {
  char buf[256];
  ssize_t n = readlink(path, buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::string readFirstLine(const char *path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return "";
  char buf[128];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n <= 0)
    return "";
  std::string s(buf, static_cast<size_t>(n));
  return s.substr(0, s.find('\n'));
}

void futexWait(std::atomic<uint32_t> &word, uint32_t expected, std::chrono::nanoseconds wait) {
  timespec ts{static_cast<time_t>(wait.count() / 1000000000),
              static_cast<long>(wait.count() % 1000000000)};
  // Not FUTEX_PRIVATE_FLAG: the word is in memory other processes map.
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t> &word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

llvm::Expected<std::string> randomName() {
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
    return makeError("cannot read random bytes for a shared memory name: {0}",
                     std::strerror(errno));
  return "/oar-collective-" + llvm::toHex(llvm::ArrayRef<uint8_t>(bytes, sizeof bytes), true);
}

size_t segmentBytes(int ranks, size_t chunkBytes) {
  return kHeaderBytes + static_cast<size_t>(ranks + 1) * chunkBytes;
}

} // namespace

struct SharedSegment::Layout {
  uint64_t magic;
  uint32_t ranks;
  uint32_t unused;
  uint64_t chunkBytes;
  std::atomic<uint32_t> arrived;    ///< ranks at the current barrier
  std::atomic<uint32_t> generation; ///< barriers passed: the futex word waiters sleep on
  std::atomic<uint32_t> gone[kMaxRanks];
  std::atomic<int32_t> pid[kMaxRanks];
};
static_assert(sizeof(SharedSegment::Layout) <= kHeaderBytes);
static_assert(std::atomic<uint32_t>::is_always_lock_free,
              "the barrier is shared between processes");

struct SharedSegment::Watches {
  std::vector<std::optional<ProcessWatch>> of; ///< by rank; none for ranks of this process
};

std::string sameHostKey() {
  std::string boot = readFirstLine("/proc/sys/kernel/random/boot_id");
  std::string net = readLink("/proc/self/ns/net"), pid = readLink("/proc/self/ns/pid");
  if (boot.empty() || net.empty() || pid.empty())
    return ""; // unknown: no rank shares with this one
  return boot + "/" + net + "/" + pid + "/uid " + std::to_string(geteuid());
}

SharedSegment::SharedSegment(std::string name, int rank, int ranks, size_t chunkBytes, void *base,
                             size_t bytes)
    : name_(std::move(name)), rank_(rank), ranks_(ranks), chunkBytes_(chunkBytes), base_(base),
      bytes_(bytes) {}

SharedSegment::~SharedSegment() {
  auto *l = static_cast<Layout *>(base_);
  l->gone[rank_].store(1, std::memory_order_release);
  futexWakeAll(l->generation); // a rank waiting for this one looks now
  if (rank_ == 0)
    unlink();
  munmap(base_, bytes_);
}

void SharedSegment::unlink() {
  if (linked_)
    shm_unlink(name_.c_str());
  linked_ = false;
}

llvm::Expected<std::unique_ptr<SharedSegment>> SharedSegment::create(int ranks, size_t chunkBytes) {
  if (ranks < 1 || ranks > kMaxRanks || chunkBytes == 0 || chunkBytes % 64 != 0)
    return makeError("a shared segment takes 1 to {0} ranks and a chunk of a multiple of 64 "
                     "bytes, not {1} ranks of {2} bytes",
                     kMaxRanks, ranks, chunkBytes);
  auto name = randomName();
  if (!name)
    return name.takeError();
  size_t bytes = segmentBytes(ranks, chunkBytes);
  int fd = shm_open(name->c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return makeError("cannot create shared memory {0}: {1}", *name, std::strerror(errno));
  // Reserved now: a tmpfs page that cannot be had when first touched would end the process
  // with SIGBUS.
  int reserved = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  void *base =
      reserved == 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  int mapError = errno;
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(name->c_str());
    return makeError("cannot reserve {0} bytes of shared memory in {1}: {2}", bytes, *name,
                     std::strerror(reserved != 0 ? reserved : mapError));
  }
  auto *l = new (base) Layout{};
  l->magic = kMagic, l->ranks = static_cast<uint32_t>(ranks), l->chunkBytes = chunkBytes;
  l->pid[0].store(getpid(), std::memory_order_release);
  return std::unique_ptr<SharedSegment>(
      new SharedSegment(std::move(*name), 0, ranks, chunkBytes, base, bytes));
}

llvm::Expected<std::unique_ptr<SharedSegment>>
SharedSegment::open(const std::string &name, int rank, int ranks, size_t chunkBytes) {
  if (rank < 1 || rank >= ranks || ranks > kMaxRanks)
    return makeError("rank {0} of {1} cannot open a shared segment", rank, ranks);
  if (!llvm::StringRef(name).startswith("/oar-collective-"))
    return makeError("{0} is not the name of a collective's shared segment", name);
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return makeError("cannot open shared memory {0}: {1}", name, std::strerror(errno));
  struct stat st {};
  size_t bytes = segmentBytes(ranks, chunkBytes);
  // shm_open creates files as the effective user: that is whose segment it must be.
  bool ours = fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 0077) == 0 &&
              static_cast<size_t>(st.st_size) == bytes;
  void *base = ours ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  int mapError = errno; // before close() may change it
  close(fd);
  if (!ours)
    return makeError("shared memory {0} is not a segment of this user for {1} ranks", name, ranks);
  if (base == MAP_FAILED)
    return makeError("cannot map shared memory {0}: {1}", name, std::strerror(mapError));
  auto *l = static_cast<Layout *>(base);
  if (l->magic != kMagic || l->ranks != static_cast<uint32_t>(ranks) ||
      l->chunkBytes != chunkBytes) {
    munmap(base, bytes);
    return makeError("shared memory {0} is not a segment for {1} ranks of {2} bytes", name, ranks,
                     chunkBytes);
  }
  l->pid[rank].store(getpid(), std::memory_order_release);
  auto segment =
      std::unique_ptr<SharedSegment>(new SharedSegment(name, rank, ranks, chunkBytes, base, bytes));
  segment->linked_ = false; // rank 0's name to remove
  return segment;
}

void SharedSegment::watchPeers() {
  auto *l = static_cast<Layout *>(base_);
  watches_ = std::make_unique<Watches>();
  watches_->of.resize(static_cast<size_t>(ranks_));
  for (int r = 0; r < ranks_; ++r) {
    pid_t pid = l->pid[r].load(std::memory_order_acquire);
    if (r == rank_ || pid <= 0 || pid == getpid()) // ranks on threads of this process leave
      continue;                                    // by their flag
    watches_->of[r].emplace(pid);
    if (!watches_->of[r]->watchable()) // no pidfd here: the flag and the deadline tell
      watches_->of[r].reset();
  }
}

void SharedSegment::checkPeers() {
  auto *l = static_cast<Layout *>(base_);
  std::vector<std::string> ranks, why;
  for (int r = 0; r < ranks_; ++r) {
    if (r == rank_)
      continue;
    const char *reason = nullptr;
    if (watches_->of[r] && !watches_->of[r]->running())
      reason = "its process ended";
    else if (l->gone[r].load(std::memory_order_acquire))
      reason = "it left the group";
    if (reason) {
      ranks.push_back(std::to_string(r));
      why.push_back(ranks.back() + ": " + reason);
    }
  }
  if (ranks.size() == 1) // "rank 2 is gone (it left the group)"
    throw SharedSegmentPeerGone("rank " + ranks[0] + " is gone (" +
                                why[0].substr(ranks[0].size() + 2) + ")");
  if (!ranks.empty())
    throw SharedSegmentPeerGone("ranks " + llvm::join(ranks, ", ") + " are gone (" +
                                llvm::join(why, ", ") + ")");
}

void SharedSegment::barrier(std::chrono::steady_clock::time_point deadline) {
  Layout &l = *static_cast<Layout *>(base_);
  uint32_t generation = l.generation.load(std::memory_order_acquire);
  if (l.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(ranks_)) {
    // The last to arrive opens the next barrier before it lets the others go.
    l.arrived.store(0, std::memory_order_relaxed);
    l.generation.fetch_add(1, std::memory_order_release);
    futexWakeAll(l.generation);
    return;
  }
  for (int spin = 0;; ++spin) {
    if (l.generation.load(std::memory_order_acquire) != generation)
      return;
    if (spin < kSpins) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      continue;
    }
    try {
      checkPeers();
    } catch (const SharedSegmentPeerGone &) {
      // A rank that opened this barrier and then left is not gone from it: its `gone` store
      // comes after its increment.
      if (l.generation.load(std::memory_order_acquire) != generation)
        return;
      throw;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      throw std::runtime_error("Timed out waiting for the other ranks at the shared memory "
                               "segment " +
                               name_);
    futexWait(l.generation, generation,
              std::min<std::chrono::nanoseconds>(kLookAround, deadline - now));
  }
}

namespace {

/// Calls `each(part, from, n, at)` for the pieces of elements [at, at + n) of `parts` laid end
/// to end: `n` elements from `part[from]`, which sit at `at` in that range.
template <typename T, typename Each>
void forRange(llvm::ArrayRef<llvm::MutableArrayRef<T>> parts, size_t at, size_t n, Each each) {
  size_t start = 0, done = 0;
  for (llvm::MutableArrayRef<T> part : parts) {
    size_t end = start + part.size();
    if (end > at + done && done < n) {
      size_t from = at + done - start, take = std::min(part.size() - from, n - done);
      each(part.data() + from, take, done);
      done += take;
    }
    start = end;
  }
}

} // namespace

template <typename T>
void SharedSegment::allreduce(llvm::ArrayRef<llvm::MutableArrayRef<T>> parts, T scale,
                              std::chrono::milliseconds waitTimeout) {
  auto deadline = [&] { return std::chrono::steady_clock::now() + waitTimeout; };
  if (!watches_)
    watchPeers(); // every rank wrote its pid before the group agreed to use the segment
  auto *bytes = static_cast<std::byte *>(base_) + kHeaderBytes;
  auto slot = [&](int r) {
    return reinterpret_cast<T *>(bytes + static_cast<size_t>(r) * chunkBytes_);
  };
  T *out = slot(ranks_);
  size_t count = 0, perRound = chunkBytes_ / sizeof(T);
  for (llvm::MutableArrayRef<T> part : parts)
    count += part.size();
  try {
    for (size_t at = 0; at < count; at += perRound) {
      size_t n = std::min(perRound, count - at);
      forRange(parts, at, n, [&](T *from, size_t len, size_t to) {
        std::memcpy(slot(rank_) + to, from, len * sizeof(T));
      });
      barrier(deadline()); // every rank's share is in
      size_t lo = n * static_cast<size_t>(rank_) / static_cast<size_t>(ranks_);
      size_t hi = n * static_cast<size_t>(rank_ + 1) / static_cast<size_t>(ranks_);
      T *__restrict sum = out + lo;
      std::memcpy(sum, slot(0) + lo, (hi - lo) * sizeof(T));
      for (int r = 1; r < ranks_; ++r) { // in rank order: one order for each element, any rank
        const T *__restrict part = slot(r) + lo;
        for (size_t i = 0; i < hi - lo; ++i)
          sum[i] += part[i];
      }
      barrier(deadline()); // every slice is summed; nobody writes `out` before all copied it
      forRange(parts, at, n, [&](T *to, size_t len, size_t from) {
        const T *__restrict sums = out + from;
        if (scale == T(1))
          std::memcpy(to, sums, len * sizeof(T));
        else
          for (size_t i = 0; i < len; ++i)
            to[i] = sums[i] * scale;
      });
    }
  } catch (...) { // the others hear at once that this rank gave up, not at their timeout
    static_cast<Layout *>(base_)->gone[rank_].store(1, std::memory_order_release);
    futexWakeAll(static_cast<Layout *>(base_)->generation);
    throw;
  }
}

template void SharedSegment::allreduce<float>(llvm::ArrayRef<llvm::MutableArrayRef<float>>, float,
                                              std::chrono::milliseconds);
template void SharedSegment::allreduce<double>(llvm::ArrayRef<llvm::MutableArrayRef<double>>,
                                               double, std::chrono::milliseconds);

} // namespace oar::runtime
