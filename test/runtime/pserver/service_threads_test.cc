// The pserver's service threads and its per-peer reply order.
#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/pserver/ordered_replies.h"
#include "runtime/pserver/service_threads.h"
#include "support/error.h"
#include "test/helpers/expect.h"

using namespace oar;
using namespace oar::runtime;

namespace {
llvm::Error ok() { return llvm::Error::success(); }

/// Spins until `flag` is set or two seconds pass; true when it was set.
bool waitFor(const std::atomic<bool> &flag) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!flag && std::chrono::steady_clock::now() < until)
    std::this_thread::yield();
  return flag;
}
} // namespace

TEST_CASE("a service thread runs its tasks in the order they were posted", "[runtime]") {
  ServiceThreads threads(3);
  std::vector<int> order; // written only by thread 1
  for (int i = 0; i < 100; ++i)
    threads.post(1, [&order, i] {
      order.push_back(i);
      return ok();
    });
  REQUIRE_OK(threads.drain());
  REQUIRE(order.size() == 100);
  for (int i = 0; i < 100; ++i)
    CHECK(order[i] == i);
}

TEST_CASE("tasks on different service threads run at once", "[runtime]") {
  // Each task waits for the other to start: they finish only if they run side by side.
  ServiceThreads threads(2);
  std::atomic<bool> first{false}, second{false};
  std::atomic<int> met{0};
  threads.post(0, [&] {
    first = true;
    met += waitFor(second);
    return ok();
  });
  threads.post(1, [&] {
    second = true;
    met += waitFor(first);
    return ok();
  });
  REQUIRE_OK(threads.drain());
  CHECK(met == 2);
}

TEST_CASE("a service thread's error is kept and returned by drain", "[runtime]") {
  for (int n : {0, 2}) {
    ServiceThreads threads(n);
    threads.post(0, [] { return makeError("optimize block 3 failed"); });
    threads.post(1, ok);
    CHECK(errorText(threads.drain()) == "optimize block 3 failed");
    CHECK(threads.failure().value_or("") == "optimize block 3 failed");
  }
}

TEST_CASE("with no service threads a task runs inside post", "[runtime]") {
  ServiceThreads threads(0);
  bool ran = false;
  threads.post(5, [&] {
    ran = true;
    return ok();
  });
  CHECK(ran);
}

TEST_CASE("replies reach each peer in request order, whichever thread made them", "[runtime]") {
  std::vector<std::string> sent; // "peer:var"
  OrderedReplies replies([&](const std::string &peer, const proto::MsgHeader &h, const Tensor *) {
    sent.push_back(peer + ":" + h.var());
  });
  REQUIRE(replies.valid());
  auto header = [](const char *var) {
    proto::MsgHeader h;
    h.set_var(var);
    return h;
  };
  std::shared_ptr<OrderedReplies::Slot> a = replies.reserve("p1");
  std::shared_ptr<OrderedReplies::Slot> b = replies.reserve("p1");
  replies.send("p1", header("ok1"), nullptr); // owed behind a and b
  replies.send("p2", header("ok2"), nullptr); // another peer: nothing owed, sent now
  CHECK(sent == std::vector<std::string>{"p2:ok2"});
  std::thread([&] { replies.fill(b, header("b"), Tensor()); }).join();
  replies.flush(); // b is ready but a is not: nothing for p1 yet
  CHECK(sent == std::vector<std::string>{"p2:ok2"});
  CHECK(replies.owing());
  std::thread([&] { replies.fill(a, header("a"), Tensor()); }).join();
  replies.flush();
  CHECK(sent == std::vector<std::string>{"p2:ok2", "p1:a", "p1:b", "p1:ok1"});
  CHECK_FALSE(replies.owing());
}
