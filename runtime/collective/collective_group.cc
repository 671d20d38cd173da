// Joining a collective group through the rendezvous, and its collectives through Gloo.
#include "runtime/collective/collective_group.h"

#include <condition_variable>
#include <csignal>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "runtime/collective/closed_pairs.h"
#include "runtime/collective/rendezvous_server.h"
#include "runtime/collective/rendezvous_store.h"
#include "runtime/collective/shared_segment.h"
#include "runtime/transport/channel.h"
#include "runtime/wire/peer_memory.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

/// "rank 2 is gone (connection closed)", "ranks 1, 2 are gone (connection closed)".
static std::string describeGone(const std::vector<int> &gone) {
  std::vector<std::string> names;
  for (int r : gone)
    names.push_back(std::to_string(r));
  return (gone.size() == 1 ? "rank " : "ranks ") + llvm::join(names, ", ") +
         (gone.size() == 1 ? " is gone" : " are gone") + " (connection closed)";
}

struct CollectiveGroup::Impl {
  CollectiveOptions opts;
  std::unique_ptr<RendezvousServer> server; ///< rank 0's, while the ranks join
  /// One Gloo context (its own device: TCP pairs and I/O thread) a stream; the first runs
  /// everything but the parts of a large all-reduce that go to the others.
  std::vector<std::shared_ptr<gloo::transport::Device>> devices;
  std::vector<std::shared_ptr<gloo::rendezvous::Context>> contexts;
  std::shared_ptr<gloo::rendezvous::Context> context;
  /// Made once joined; destroyed before the context it probes.
  std::unique_ptr<ClosedPairs> closedPairs;
  /// Set when every rank runs on this host: all-reduces go through it.
  std::unique_ptr<SharedSegment> segment;
  uint32_t nextTag = 0;
  /// After a failed collective the pairs are in an unknown state: every later one fails too.
  std::string broken;
  /// The watchdog: while a collective runs past kStuckAfter, it asks whether a rank's connection
  /// closed, and says so once (CollectiveOptions::onStuckWithPeerGone).
  std::mutex watchLock;
  std::condition_variable watchWake;
  std::optional<std::chrono::steady_clock::time_point> runningSince;
  bool stopWatching = false, reported = false;
  std::thread watchdog;

  void watch() {
    std::unique_lock<std::mutex> hold(watchLock);
    while (!stopWatching) {
      watchWake.wait_for(hold, std::chrono::milliseconds(250));
      if (stopWatching || reported || !runningSince ||
          std::chrono::steady_clock::now() - *runningSince < CollectiveOptions::kStuckAfter)
        continue;
      hold.unlock();
      std::vector<int> gone = closedPairs->list();
      hold.lock();
      if (gone.empty() || !runningSince)
        continue;
      reported = true;
      std::string what = llvm::formatv("{0}: a collective has waited {1} ms and {2}", who(),
                                       CollectiveOptions::kStuckAfter.count(), describeGone(gone))
                             .str();
      hold.unlock();
      opts.onStuckWithPeerGone(what);
      hold.lock();
    }
  }

  void startWatching() {
    if (opts.onStuckWithPeerGone)
      watchdog = std::thread([this] { watch(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> hold(watchLock);
      stopWatching = true;
    }
    watchWake.notify_all();
    if (watchdog.joinable())
      watchdog.join();
  }

  std::string who() const {
    return "rank " + std::to_string(opts.rank) + " of " + std::to_string(opts.ranks);
  }

  /// Runs one collective, turning Gloo's exceptions into an error naming `what`.
  template <typename Run> llvm::Error collective(const char *what, Run run) {
    if (!broken.empty())
      return makeError("{0}: {1} after an earlier collective failed: {2}", who(), what, broken);
    struct Running { // the watchdog's view of this collective, for as long as it runs
      Impl &impl;
      explicit Running(Impl &i) : impl(i) {
        std::lock_guard<std::mutex> hold(impl.watchLock);
        impl.runningSince = std::chrono::steady_clock::now();
      }
      ~Running() {
        std::lock_guard<std::mutex> hold(impl.watchLock);
        impl.runningSince.reset();
      }
    } running(*this);
    try {
      run();
      return llvm::Error::success();
    } catch (const SharedSegmentPeerGone &e) { // it names the ranks itself
      broken = e.what();
      return makeError("{0}: {1} failed: {2}", who(), what, e.what());
    } catch (const std::exception &e) {
      broken = e.what();
      return makeError("{0}: {1} failed: {2} ({3})", who(), what, whoFailed(e.what()), e.what());
    }
  }

  /// Who ended the collective: the ranks whose connection closed, else a stall. A wait that
  /// timed out closes every pair of the context (Gloo does so), so nothing is probed then: the
  /// other ranks see this one's connections close, and name it.
  std::string whoFailed(llvm::StringRef why) {
    std::vector<int> gone;
    if (!why.contains("Timed out"))
      gone = closedPairs->list();
    if (gone.empty())
      return llvm::formatv("no rank was heard from within {0} ms: a rank is stalled",
                           opts.timeout.count());
    return describeGone(gone);
  }

  /// The ring all-reduce of `count` elements at `data` on stream `s`.
  template <typename T> void ring(size_t s, T *data, size_t count, uint32_t tag) {
    gloo::AllreduceOptions o(contexts[s]);
    o.setOutput(data, count);
    o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    o.setReduceFunction(
        static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<T>));
    o.setTag(tag);
    o.setTimeout(opts.timeout);
    gloo::allreduce(o);
  }

  /// Each stream sums its own contiguous part, the same parts on every rank, so every rank
  /// still ends with the same bits.
  template <typename T> llvm::Error allreduce(T *data, size_t count) {
    if (count == 0)
      return llvm::Error::success();
    if (segment)
      return collective("all-reduce", [&] {
        llvm::MutableArrayRef<T> whole(data, count);
        segment->allreduce(llvm::makeArrayRef(whole), T(1), opts.timeout);
      });
    size_t streams = count * sizeof(T) >= CollectiveOptions::kMinStreamedBytes
                         ? std::min(contexts.size(), count)
                         : 1;
    uint32_t tag = nextTag++;
    return collective("all-reduce", [&] {
      std::vector<std::future<void>> others;
      auto part = [&](size_t s) { return count * s / streams; };
      for (size_t s = 1; s < streams; ++s)
        others.push_back(std::async(
            std::launch::async, [&, s] { ring(s, data + part(s), part(s + 1) - part(s), tag); }));
      std::exception_ptr failed;
      try {
        ring(0, data, part(1), tag);
      } catch (...) {
        failed = std::current_exception();
      }
      for (auto &f : others) // every part ends (at the timeout at worst) before data goes
        try {
          f.get();
        } catch (...) {
          if (!failed)
            failed = std::current_exception();
        }
      if (failed)
        std::rethrow_exception(failed);
    });
  }

  /// allreduceMean's buffer on TCP, kept from call to call.
  std::vector<float> bucketF32;
  std::vector<double> bucketF64;
  std::vector<float> &bucket(float *) { return bucketF32; }
  std::vector<double> &bucket(double *) { return bucketF64; }

  template <typename T> llvm::Error allreduceMean(llvm::ArrayRef<llvm::MutableArrayRef<T>> parts) {
    T scale = T(1) / static_cast<T>(opts.ranks);
    if (segment)
      return collective("all-reduce", [&] { segment->allreduce(parts, scale, opts.timeout); });
    std::vector<T> &all = bucket(static_cast<T *>(nullptr));
    all.clear();
    for (llvm::MutableArrayRef<T> part : parts)
      all.insert(all.end(), part.begin(), part.end());
    if (llvm::Error err = allreduce(all.data(), all.size()))
      return err;
    const T *sums = all.data();
    for (llvm::MutableArrayRef<T> part : parts)
      for (T &x : part)
        x = *sums++ * scale;
    return llvm::Error::success();
  }

  /// Sets `segment` when every rank runs on this host and the same-host path is on: rank 0
  /// creates it and names it in the store, the others open it. Every rank uses it or none (one
  /// that could not open it says why in the log): they agree in one all-reduce on TCP.
  void shareSegmentOnOneHost(gloo::rendezvous::Store &store) {
    if (opts.ranks < 2)
      return;
    std::string key = opts.sameHostMemory && peerMemoryEnabled() ? sameHostKey() : "";
    std::string own = std::to_string(opts.rank);
    store.set("host_" + own, std::vector<char>(key.begin(), key.end()));
    std::string name, failure;
    if (opts.rank == 0) {
      bool oneHost = !key.empty();
      for (int r = 1; r < opts.ranks && oneHost; ++r) {
        std::vector<char> theirs = store.get("host_" + std::to_string(r));
        oneHost = std::string(theirs.begin(), theirs.end()) == key;
      }
      if (oneHost) {
        if (auto made = SharedSegment::create(opts.ranks, opts.segmentChunkBytes))
          segment = std::move(*made);
        else
          failure = llvm::toString(made.takeError());
      }
      name = segment ? segment->name() : "";
      store.set("segment_0", std::vector<char>(name.begin(), name.end()));
    } else {
      std::vector<char> published = store.get("segment_0");
      name.assign(published.begin(), published.end());
      if (!name.empty()) {
        if (auto opened = SharedSegment::open(name, opts.rank, opts.ranks, opts.segmentChunkBytes))
          segment = std::move(*opened);
        else
          failure = llvm::toString(opened.takeError());
      }
    }
    int32_t ready = segment ? 1 : 0;
    ring(0, &ready, 1, nextTag++);
    if (segment && opts.rank == 0)
      segment->unlink(); // every rank has it open, or gave up on it
    if (ready != opts.ranks)
      segment.reset();
    if (!failure.empty() && opts.log)
      opts.log(who() + ": all-reduces go through TCP: " + failure);
  }
};

CollectiveGroup::CollectiveGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CollectiveGroup::~CollectiveGroup() = default;

/// Gloo writes to its pairs' sockets without MSG_NOSIGNAL: a write to a peer that just died
/// raises SIGPIPE, whose default action ends the process silently, where the collective should
/// fail with EPIPE naming the rank. So SIGPIPE is ignored, unless the program set its own handler.
static void ignoreSigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
}

llvm::Expected<std::unique_ptr<CollectiveGroup>> CollectiveGroup::join(CollectiveOptions options) {
  ignoreSigpipe();
  auto impl = std::make_unique<Impl>();
  impl->opts = std::move(options);
  const CollectiveOptions &o = impl->opts;
  if (o.ranks < 1 || o.rank < 0 || o.rank >= o.ranks)
    return makeError("rank {0} is not in a group of {1} ranks", o.rank, o.ranks);
  if (o.rank == 0) {
    RendezvousOptions r;
    r.endpoint = o.rendezvous, r.bind = o.bind, r.jobId = o.jobId, r.ranks = o.ranks;
    r.curve = o.curve, r.heldPort = o.heldPort, r.log = o.log;
    auto server = RendezvousServer::start(std::move(r));
    if (!server)
      return makeError("{0}: {1}", impl->who(), llvm::toString(server.takeError()));
    impl->server = std::move(*server);
  }
  // The store is needed only to meet: its channel (and libzmq's context) end with join().
  ClientContext client;
  DealerOptions dealer;
  dealer.curve = o.curve;
  dealer.maxMessageBytes = RendezvousServer::kMaxValueBytes + 4096;
  dealer.shouldStop = o.shouldStop;
  auto channel = openDealer(client, o.rendezvous, dealer);
  if (!channel)
    return makeError("{0}: {1}", impl->who(), llvm::toString(channel.takeError()));
  RendezvousStore store(std::move(*channel), o.rendezvous, o.jobId, o.rank, o.timeout,
                        o.shouldStop);
  if (o.streams < 1 || o.streams > CollectiveOptions::kMaxStreams)
    return makeError("{0}: {1} streams (connections per pair); 1 to {2}", impl->who(), o.streams,
                     CollectiveOptions::kMaxStreams);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = o.host;
    for (int s = 0; s < o.streams; ++s) { // stream s > 0 keeps its keys under "s<s>/"
      impl->devices.push_back(gloo::transport::tcp::CreateDevice(attr));
      impl->contexts.push_back(std::make_shared<gloo::rendezvous::Context>(o.rank, o.ranks));
      impl->contexts.back()->setTimeout(o.timeout);
      if (s == 0) {
        impl->contexts.back()->connectFullMesh(store, impl->devices.back());
      } else {
        gloo::rendezvous::PrefixStore prefixed("s" + std::to_string(s), store);
        impl->contexts.back()->connectFullMesh(prefixed, impl->devices.back());
      }
    }
    impl->context = impl->contexts.front();
    impl->shareSegmentOnOneHost(store);
    // Every rank is connected once all pass this barrier: none reads the store again, and rank 0
    // lets the rendezvous go (its port and thread).
    gloo::BarrierOptions barrier(impl->context);
    barrier.setTimeout(o.timeout);
    gloo::barrier(barrier);
    impl->server.reset();
    impl->closedPairs = std::make_unique<ClosedPairs>(*impl->context);
    impl->startWatching();
  } catch (const std::exception &e) {
    return makeError("{0}: cannot join the group through the rendezvous {1}: {2}", impl->who(),
                     o.rendezvous, e.what());
  }
  if (o.log)
    o.log(impl->who() + ": joined the group (Gloo over TCP, pairs on " + o.host +
          (impl->segment ? "; all-reduces through shared memory, every rank on this host)" : ")"));
  return std::unique_ptr<CollectiveGroup>(new CollectiveGroup(std::move(impl)));
}

int CollectiveGroup::rank() const { return impl_->opts.rank; }
int CollectiveGroup::ranks() const { return impl_->opts.ranks; }
bool CollectiveGroup::sharesMemory() const { return impl_->segment != nullptr; }

llvm::Error CollectiveGroup::allreduceSum(float *data, size_t count) {
  return impl_->allreduce(data, count);
}
llvm::Error CollectiveGroup::allreduceSum(double *data, size_t count) {
  return impl_->allreduce(data, count);
}

llvm::Error CollectiveGroup::allreduceMean(llvm::ArrayRef<llvm::MutableArrayRef<float>> parts) {
  return impl_->allreduceMean(parts);
}
llvm::Error CollectiveGroup::allreduceMean(llvm::ArrayRef<llvm::MutableArrayRef<double>> parts) {
  return impl_->allreduceMean(parts);
}

llvm::Error CollectiveGroup::broadcast(void *data, size_t bytes, int root) {
  if (root < 0 || root >= impl_->opts.ranks)
    return makeError("{0}: broadcast from rank {1}, which is not in the group", impl_->who(), root);
  if (bytes == 0)
    return llvm::Error::success();
  return impl_->collective("broadcast", [&] {
    gloo::BroadcastOptions o(impl_->context);
    o.setOutput(static_cast<uint8_t *>(data), bytes);
    o.setRoot(root);
    o.setTag(impl_->nextTag++);
    o.setTimeout(impl_->opts.timeout);
    gloo::broadcast(o);
  });
}

} // namespace oar::runtime
