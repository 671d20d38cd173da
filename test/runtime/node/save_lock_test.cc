// Save directories held by one job at a time.
#include <future>

#include "runtime/node/save_lock.h"
#include "test/helpers/expect.h"
#include "llvm/Support/FileSystem.h"

using namespace oar::runtime;
using Catch::Matchers::Contains;

TEST_CASE("a save directory is shared by one job's nodes and refused to another running job",
          "[runtime][save]") {
  std::string dir = scratchDir("save_lock") + "/model";
  {
    SaveLock trainer = requireValue(lockSaveDir(dir, "job-a"));
    SaveLock pserver = requireValue(lockSaveDir(dir, "job-a")); // a second node of the job
    std::string why = errorText(lockSaveDir(dir, "job-b"));
    CHECK_THAT(why, Contains("--save directory " + dir +
                             " is in use by another running job "
                             "(job-a, " +
                             dir + "/.oar-save.job-a.lock)"));
    // The refused job leaves nothing behind that would block job a's nodes.
    SaveLock third = requireValue(lockSaveDir(dir, "job-a"));
  }
  // Job a ended (its holds went with it): job b takes the directory and clears a's file.
  SaveLock b = requireValue(lockSaveDir(dir, "job-b"));
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/.oar-save.job-a.lock"));
  CHECK(llvm::sys::fs::exists(dir + "/.oar-save.job-b.lock"));
  CHECK_THAT(errorText(lockSaveDir(dir, "job/../c")), Contains("(job-b,"));
  SaveLock none = requireValue(lockSaveDir("", "job-c")); // nothing to save: nothing held
}

TEST_CASE("the nodes of a job started after a killed one all take its directory at once",
          "[runtime][save]") {
  // A killed job leaves its lock file. Every node of the next job checks it at the same moment,
  // and each check holds it exclusively for an instant: a node that meets another's check must
  // not take it for a running job. (Threads: flock(2) holds of separate opens conflict as
  // processes' do.)
  std::string dir = scratchDir("save_lock_restart");
  for (int round = 0; round < 40; ++round) {
    std::string model = dir + "/model" + std::to_string(round);
    { SaveLock killed = requireValue(lockSaveDir(model, "killed")); } // its file stays
    REQUIRE(llvm::sys::fs::exists(model + "/.oar-save.killed.lock"));
    std::vector<std::future<llvm::Expected<SaveLock>>> nodes; // each holds on while others check
    for (int n = 0; n < 6; ++n)
      nodes.push_back(std::async(std::launch::async, [&] { return lockSaveDir(model, "next"); }));
    std::vector<llvm::Expected<SaveLock>> locks;
    for (auto &n : nodes)
      locks.push_back(n.get());
    for (auto &lock : locks) {
      INFO("round " << round);
      CHECK((lock ? std::string() : llvm::toString(lock.takeError())) == "");
    }
  }
}
