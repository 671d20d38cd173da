// Pserver checkpoints.
#include "runtime/pserver_checkpoint.h"

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/pserver_blocks.h"
#include "executor/trainer.h"
#include "ir/error.h"
#include "runtime/pserver_tables.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

llvm::Error stagePserverBlocks(const proto::Program &program, const Scope &scope,
                               llvm::StringRef dir, SaveSet &files) {
  auto blocks = pserverBlocks(program);
  if (!blocks)
    return blocks.takeError();
  if (llvm::Error err = files.addText((dir + "/" + kBlockIndexFile).str(), blockIndexText(*blocks)))
    return err;
  for (const proto::Var &v : program.blocks(0).vars()) {
    const Tensor *t = scope.find(v.name());
    if (!v.persistable() || !t || !t->initialized())
      continue;
    if (llvm::Error err = files.add((dir + "/" + v.name() + ".npy").str(), onHost(*t)))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error PserverCheckpoints::write(int64_t step, const proto::Program &program,
                                      const Scope &scope, const PserverTables &tables,
                                      const std::map<std::string, std::string> &fields) const {
  return steps_.write(
      step,
      [&](const std::string &dir) -> llvm::Error {
        SaveSet files(dir); // in a fresh directory: the set's renames only drop the suffixes
        if (llvm::Error err = stagePserverBlocks(program, scope, dir, files))
          return err;
        if (tables.size() > 0)
          if (llvm::Error err = tables.stage(dir + "/tables", files))
            return err;
        return files.commit();
      },
      fields);
}

llvm::Error PserverCheckpoints::load(int64_t step, const proto::Program &program, Scope &scope,
                                     PserverTables &tables) const {
  std::string path = pathOf(step);
  if (!steps_.manifest(step))
    return makeError("{0}: no complete checkpoint of step {1} for this job", path, step);
  // Its own checkpoint: the blocks by their names here, the tables' part of this pserver.
  if (auto loaded = loadPersistables(program, scope, path); !loaded)
    return loaded.takeError();
  if (tables.size() == 0)
    return llvm::Error::success();
  auto ckpt = CheckpointReader::open(path);
  if (!ckpt)
    return ckpt.takeError();
  LoadReport report;
  return tables.load(*ckpt, /*ownPartOnly=*/true, report);
}

} // namespace oar::runtime
