// A single machine's save.
#include "checkpoint/save_model.h"

#include "train/training_loop.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar {

llvm::Error saveSingleMachine(const proto::Program &main, const Scope &scope, llvm::StringRef dir) {
  if (llvm::Error err = savePersistables(main, scope, dir))
    return err;
  for (const proto::Var &v : main.blocks(0).vars())
    if (v.persistable())
      llvm::sys::fs::remove_directories((dir + "/tables/" + v.name()).str());
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::sys::path::filename(it->path()).startswith("pserver."))
      llvm::sys::fs::remove_directories(it->path());
  return llvm::Error::success();
}

} // namespace oar
