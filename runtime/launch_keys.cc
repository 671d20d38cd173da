// oar-launch's keys.
#include "runtime/launch_keys.h"

#include <cstdlib>
#include <fstream>

#include "ir/error.h"
#include "runtime/curve.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

llvm::Expected<std::unique_ptr<LaunchKeys>> LaunchKeys::create(int trainers) {
  llvm::SmallString<128> tmp;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, tmp);
  llvm::sys::path::append(tmp, "oar-launch-keys-XXXXXX");
  std::string pattern = tmp.str().str();
  if (!mkdtemp(pattern.data())) // mode 0700
    return makeError("cannot make a directory for the job's keys ({0}): {1}", pattern,
                     strerror(errno));
  std::unique_ptr<LaunchKeys> keys(new LaunchKeys(pattern));
  auto write = [&](const std::string &stem) -> llvm::Expected<std::string> {
    auto pair = newCurveKeyPair();
    if (!pair)
      return pair.takeError();
    if (llvm::Error err = writeCurveKeyPair(*pair, keys->dir_ + "/" + stem))
      return err;
    return pair->publicKey;
  };
  if (auto server = write("pserver"); !server)
    return server.takeError();
  std::string allowList = "# the trainers of this launch\n";
  for (int i = 0; i < trainers; ++i) {
    auto pub = write("trainer." + std::to_string(i));
    if (!pub)
      return pub.takeError();
    allowList += *pub + "\n";
  }
  std::ofstream allow(keys->dir_ + "/trainers.allow");
  allow << allowList;
  if (!allow.flush())
    return makeError("{0}/trainers.allow: cannot write", keys->dir_);
  return keys;
}

LaunchKeys::~LaunchKeys() { llvm::sys::fs::remove_directories(dir_); }

std::vector<std::string> LaunchKeys::pserverArgs() const {
  return {"--curve-secret", dir_ + "/pserver.key", "--curve-allow", dir_ + "/trainers.allow"};
}

std::vector<std::string> LaunchKeys::trainerArgs(int trainerId) const {
  return {"--curve-secret", dir_ + "/trainer." + std::to_string(trainerId) + ".key",
          "--curve-server-key", dir_ + "/pserver.pub"};
}

} // namespace oar::runtime
