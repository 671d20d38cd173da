// Save directories held by one job at a time.
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
