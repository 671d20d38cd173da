// Collective groups of ranks on threads of this process (each its own Gloo device and pairs,
// over real TCP): all-reduce and broadcast, and the failures that must end in an error naming
// the rank, never a hang.
#include <cstring>
#include <future>
#include <regex>
#include <thread>

#include "runtime/collective/collective_group.h"
#include "runtime/collective/rendezvous_server.h"
#include "runtime/collective/rendezvous_store.h"
#include "support/error.h"
#include "test/helpers/expect.h"
#include "test/helpers/ports.h"
#include "llvm/Support/FormatVariadic.h"

using namespace oar;
using namespace oar::runtime;
using Catch::Matchers::Contains;
using std::chrono::milliseconds;

namespace {

CollectiveOptions optionsFor(int rank, int ranks, const std::string &rendezvous,
                             std::shared_ptr<HeldPort> held, milliseconds timeout) {
  CollectiveOptions o;
  o.rank = rank, o.ranks = ranks, o.rendezvous = rendezvous, o.jobId = "job-1";
  o.timeout = timeout;
  if (rank == 0)
    o.heldPort = std::move(held);
  return o;
}

/// Runs `body(group)` on `ranks` threads, one rank each; returns each rank's error text ("" when
/// it succeeded).
/// How the ranks all-reduce: Gloo's TCP ring with 1 or 3 connections a pair, or the shared
/// memory segment of ranks on one host (in rounds of 64 KiB here, so that buffers take several).
enum class Path { Tcp, Tcp3Streams, SharedMemory };

CollectiveOptions withPath(CollectiveOptions o, Path path) {
  o.streams = path == Path::Tcp3Streams ? 3 : 1;
  o.sameHostMemory = path == Path::SharedMemory;
  o.segmentChunkBytes = 64 << 10;
  return o;
}

std::vector<std::string> onRanks(int ranks,
                                 const std::function<llvm::Error(CollectiveGroup &)> &body,
                                 milliseconds timeout = milliseconds(20000),
                                 Path path = Path::SharedMemory) {
  std::shared_ptr<HeldPort> port = holdPort();
  std::string rendezvous = endpointOf(*port);
  std::vector<std::future<std::string>> results;
  for (int r = 0; r < ranks; ++r)
    results.push_back(std::async(std::launch::async, [&, r] {
      CollectiveOptions o = withPath(optionsFor(r, ranks, rendezvous, port, timeout), path);
      auto group = CollectiveGroup::join(o);
      if (!group)
        return llvm::toString(group.takeError());
      llvm::Error err = body(**group);
      return err ? llvm::toString(std::move(err)) : std::string();
    }));
  std::vector<std::string> errors;
  for (auto &f : results)
    errors.push_back(f.get());
  return errors;
}

} // namespace

TEST_CASE("ranks all-reduce buffers of every size to the same bits, the sum of theirs",
          "[runtime][collective]") {
  int ranks = GENERATE(2, 4);
  // 3 connections a pair cut the largest buffer in 3 parts.
  Path path = GENERATE(Path::Tcp, Path::Tcp3Streams, Path::SharedMemory);
  CAPTURE(ranks, path);
  // Sizes: one element, fewer than the ranks, not a multiple of them, past Gloo's 1 MiB segment
  // (and many rounds of the shared segment), past the size that is split among streams.
  std::vector<size_t> sizes{1, 3, 1001, (size_t(1) << 20) / 4 * 3 + 7,
                            CollectiveOptions::kMinStreamedBytes / 4 + 13};
  std::vector<std::vector<std::vector<float>>> results(ranks);
  auto errors = onRanks(
      ranks,
      [&](CollectiveGroup &group) -> llvm::Error {
        if (group.sharesMemory() != (path == Path::SharedMemory))
          return makeError("rank {0} shares memory: {1}", group.rank(), group.sharesMemory());
        for (size_t n : sizes) {
          std::vector<float> data(n);
          for (size_t i = 0; i < n; ++i) // fractions whose sum rounds differently in each order
            data[i] =
                0.1f * static_cast<float>(group.rank() + 1) + 1e-3f * static_cast<float>(i % 97);
          if (llvm::Error err = group.allreduceSum(data.data(), n))
            return err;
          results[group.rank()].push_back(std::move(data));
        }
        return llvm::Error::success();
      },
      milliseconds(20000), path);
  for (const std::string &e : errors)
    REQUIRE(e == "");
  for (size_t s = 0; s < sizes.size(); ++s) {
    const std::vector<float> &first = results[0][s];
    for (int r = 1; r < ranks; ++r) // the same bits everywhere
      CHECK(std::memcmp(first.data(), results[r][s].data(), first.size() * sizeof(float)) == 0);
    for (size_t i = 0; i < first.size(); i += 1 + first.size() / 50) {
      double expected = 0;
      for (int r = 0; r < ranks; ++r)
        expected += 0.1 * (r + 1) + 1e-3 * (i % 97);
      CHECK(first[i] == Approx(expected).epsilon(1e-5));
    }
  }
}

TEST_CASE("a mean of several parts is each element's sum times 1/ranks, parts across rounds",
          "[runtime][collective]") {
  int ranks = GENERATE(2, 3);
  Path path = GENERATE(Path::Tcp, Path::SharedMemory);
  CAPTURE(ranks, path);
  // 64 KiB rounds hold 16384 floats: parts that start and end inside rounds, and span them.
  std::vector<size_t> sizes{10000, 1, 30000, 7, 0, 20000};
  std::vector<std::string> mismatches(ranks);
  auto errors = onRanks(
      ranks,
      [&](CollectiveGroup &group) -> llvm::Error {
        std::vector<std::vector<float>> parts;
        std::vector<float> sums; // the parts end to end, summed as one buffer
        for (size_t s = 0; s < sizes.size(); ++s) {
          parts.emplace_back(sizes[s]);
          for (size_t i = 0; i < sizes[s]; ++i)
            parts[s][i] = 0.3f * static_cast<float>(group.rank() + 1) +
                          1e-4f * static_cast<float>(i % 89 + s);
          sums.insert(sums.end(), parts[s].begin(), parts[s].end());
        }
        if (llvm::Error err = group.allreduceSum(sums.data(), sums.size()))
          return err;
        std::vector<llvm::MutableArrayRef<float>> views(parts.begin(), parts.end());
        if (llvm::Error err = group.allreduceMean(views))
          return err;
        float scale = 1.0f / static_cast<float>(ranks);
        const float *sum = sums.data();
        for (size_t s = 0; s < sizes.size(); ++s)
          for (size_t i = 0; i < sizes[s]; ++i, ++sum)
            if (parts[s][i] != *sum * scale) {
              mismatches[group.rank()] =
                  llvm::formatv("part {0} [{1}]: {2} != {3} x {4}", s, i, parts[s][i], *sum, scale);
              return llvm::Error::success();
            }
        return llvm::Error::success();
      },
      milliseconds(20000), path);
  for (int r = 0; r < ranks; ++r) {
    CHECK(errors[r] == "");
    CHECK(mismatches[r] == "");
  }
}

TEST_CASE("a broadcast copies the root's bytes to every rank", "[runtime][collective]") {
  std::vector<std::vector<double>> got(3);
  auto errors = onRanks(3, [&](CollectiveGroup &group) -> llvm::Error {
    std::vector<double> params(5000, group.rank() == 1 ? 2.5 : -1.0);
    if (llvm::Error err = group.broadcast(params.data(), params.size() * sizeof(double), 1))
      return err;
    got[group.rank()] = params;
    return llvm::Error::success();
  });
  for (const std::string &e : errors)
    REQUIRE(e == "");
  for (const auto &params : got)
    CHECK(params == std::vector<double>(5000, 2.5));
}

TEST_CASE("a rank that never comes: the others give up at their timeout naming it",
          "[runtime][collective]") {
  std::shared_ptr<HeldPort> port = holdPort();
  std::string rendezvous = endpointOf(*port);
  // Ranks 0 and 1 of 3 join; rank 2 never starts.
  auto rank1 = std::async(std::launch::async, [&] {
    return errorText(
        CollectiveGroup::join(optionsFor(1, 3, rendezvous, nullptr, milliseconds(1500))));
  });
  std::string rank0 =
      errorText(CollectiveGroup::join(optionsFor(0, 3, rendezvous, port, milliseconds(1500))));
  CHECK_THAT(rank0,
             Contains("rank 0 of 3: cannot join the group through the rendezvous " + rendezvous) &&
                 Contains("rank 2 has not joined"));
  CHECK_THAT(rank1.get(), Contains("rank 1 of 3") && Contains("rank 2 has not joined"));
}

TEST_CASE("a rank of another job, or past the group's size, is refused at the rendezvous",
          "[runtime][collective]") {
  std::shared_ptr<HeldPort> port = holdPort();
  std::string rendezvous = endpointOf(*port);
  auto rank0 = std::async(std::launch::async, [&] {
    return errorText(CollectiveGroup::join(optionsFor(0, 2, rendezvous, port, milliseconds(3000))));
  });
  CollectiveOptions stranger = optionsFor(1, 2, rendezvous, nullptr, milliseconds(3000));
  stranger.jobId = "job-2";
  CHECK_THAT(errorText(CollectiveGroup::join(stranger)),
             Contains("refused rank 1: a rank of another job (job-2; this one is job-1)"));
  CollectiveOptions past = optionsFor(5, 9, rendezvous, nullptr, milliseconds(3000));
  CHECK_THAT(errorText(CollectiveGroup::join(past)),
             Contains("refused rank 5: rank 5 is not in a job of 2 ranks"));
  CHECK_THAT(rank0.get(), Contains("rank 1 has not joined"));
}

TEST_CASE("a rank gone after joining: the other's next all-reduce fails, it does not hang",
          "[runtime][collective]") {
  Path path = GENERATE(Path::Tcp, Path::SharedMemory);
  CAPTURE(path);
  std::shared_ptr<HeldPort> port = holdPort();
  std::string rendezvous = endpointOf(*port);
  std::promise<void> zeroJoined;
  auto leaving = std::async(std::launch::async, [&] {
    auto group = CollectiveGroup::join(
        withPath(optionsFor(1, 2, rendezvous, nullptr, milliseconds(3000)), path));
    zeroJoined.get_future().wait_for(std::chrono::seconds(10));       // rank 0 is up: now go
    return group ? std::string() : llvm::toString(group.takeError()); // its group ends here
  });
  auto group = requireValue(CollectiveGroup::join(
      withPath(optionsFor(0, 2, rendezvous, port, milliseconds(3000)), path)));
  zeroJoined.set_value();
  REQUIRE(leaving.get() == "");
  std::vector<float> data(1000, 1.0f);
  auto started = std::chrono::steady_clock::now();
  CHECK_THAT(errorText(group->allreduceSum(data.data(), data.size())),
             Contains(path == Path::Tcp
                          ? "rank 0 of 2: all-reduce failed: rank 1 is gone (connection closed)"
                          : "rank 0 of 2: all-reduce failed: rank 1 is gone (it left the group)"));
  CHECK(std::chrono::steady_clock::now() - started < milliseconds(2500)); // not the 3 s timeout
  // The pairs are broken now: the next one says so at once.
  CHECK_THAT(errorText(group->allreduceSum(data.data(), data.size())),
             Contains("after an earlier collective failed"));
}

TEST_CASE("ranks on one host share a segment: a stalled rank ends the others' all-reduce at "
          "their timeout",
          "[runtime][collective]") {
  std::shared_ptr<HeldPort> port = holdPort();
  std::string rendezvous = endpointOf(*port);
  std::promise<void> done;
  std::shared_future<void> over = done.get_future().share();
  auto stalled = std::async(std::launch::async, [&] { // joins, then never all-reduces
    auto group = CollectiveGroup::join(optionsFor(1, 2, rendezvous, nullptr, milliseconds(1500)));
    over.wait_for(std::chrono::seconds(20));
    return group ? std::string() : llvm::toString(group.takeError());
  });
  auto group =
      requireValue(CollectiveGroup::join(optionsFor(0, 2, rendezvous, port, milliseconds(1500))));
  CHECK(group->sharesMemory());
  std::vector<double> data(1000, 1.0);
  auto started = std::chrono::steady_clock::now();
  CHECK_THAT(errorText(group->allreduceSum(data.data(), data.size())),
             Contains("rank 0 of 2: all-reduce failed: no rank was heard from within 1500 ms"));
  CHECK(std::chrono::steady_clock::now() - started >= milliseconds(1500));
  done.set_value();
  CHECK(stalled.get() == "");
}

TEST_CASE("at the rendezvous a rank writes only its own keys, each once", "[runtime][collective]") {
  std::shared_ptr<HeldPort> port = holdPort();
  RendezvousOptions r;
  r.endpoint = endpointOf(*port), r.jobId = "job-1", r.ranks = 2, r.heldPort = port;
  auto server = requireValue(RendezvousServer::start(r));
  ClientContext context;
  RendezvousStore store(requireValue(openDealer(context, r.endpoint, {})), r.endpoint, "job-1", 1,
                        milliseconds(3000), {});
  store.set("rank_1", {'a'});
  store.set("1", {'b'});
  store.set("s2/rank_1", {'c'}); // a second stream's keys
  CHECK(store.get("s2/rank_1") == std::vector<char>{'c'});
  CHECK(store.get("1") == std::vector<char>{'b'});
  // Rank 1 taking rank 0's place would send rank 0's pairs to its own address.
  auto refusal = [&](const std::string &key, char value) {
    try {
      store.set(key, {value});
    } catch (const StoreFailure &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(refusal("0", 'x'), Contains("refused rank 1: rank 1 may write only its own keys"));
  CHECK_THAT(refusal("s2/rank_0", 'x'), Contains("may write only its own keys"));
  // Its own keys, once: the same value again is a resend; another value is refused.
  store.set("1", {'b'});
  CHECK_THAT(refusal("1", 'y'), Contains("\"1\" is written already"));
  CHECK(store.get("1") == std::vector<char>{'b'});
}

TEST_CASE("a rank gone in a group of 4: every other rank's error names it, neighbour in the ring "
          "or not",
          "[runtime][collective]") {
  std::shared_ptr<HeldPort> port = holdPort();
  std::string rendezvous = endpointOf(*port);
  std::vector<std::future<std::string>> results;
  for (int r = 0; r < 4; ++r)
    results.push_back(std::async(std::launch::async, [&, r] {
      auto group = CollectiveGroup::join(optionsFor(r, 4, rendezvous, port, milliseconds(20000)));
      if (!group)
        return llvm::toString(group.takeError());
      if (r == 2) // leaves once joined: its pairs close with its group
        return std::string("left");
      std::vector<float> data(100000, 1.0f);
      return errorText((*group)->allreduceSum(data.data(), data.size()));
    }));
  std::vector<std::string> errors;
  for (auto &f : results)
    errors.push_back(f.get());
  CHECK(errors[2] == "left");
  // Ranks 1 and 3 (its neighbours) see it at once; rank 0 sees it when they end, naming every
  // rank gone by then, rank 2 among them, long before the 20 s timeout.
  for (int r : {0, 1, 3}) {
    CAPTURE(r, errors[r]);
    CHECK_THAT(errors[r], Contains("all-reduce failed: rank"));
    CHECK(std::regex_search(errors[r], std::regex("ranks? ([0-9], )*2(, [0-9])* (is|are) gone")));
  }
}
