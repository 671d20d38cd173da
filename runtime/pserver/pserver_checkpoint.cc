// Pserver checkpoints.
#include "runtime/pserver/pserver_checkpoint.h"

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/pserver_blocks.h"
#include "runtime/pserver/pserver_tables.h"
#include "support/error.h"
#include "train/training_loop.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

namespace {

/// A pserver's blocks at one moment: the BLOCKS index and a copy of each persistable var. Taken
/// on the loop's thread: the program is not read again (a sync pserver rewrites its averaging
/// scales when trainers leave).
struct BlocksCopy {
  std::string index;
  std::vector<std::pair<std::string, Tensor>> vars;
};

llvm::Expected<BlocksCopy> copyBlocks(const proto::Program &program, const Scope &scope) {
  auto blocks = pserverBlocks(program);
  if (!blocks)
    return blocks.takeError();
  BlocksCopy copy;
  copy.index = blockIndexText(*blocks);
  for (const proto::Var &v : program.blocks(0).vars())
    if (const Tensor *t = v.persistable() ? scope.find(v.name()) : nullptr; t && t->initialized())
      copy.vars.emplace_back(v.name(), onHost(*t).clone());
  return copy;
}

llvm::Error stageBlocks(const BlocksCopy &copy, llvm::StringRef dir, SaveSet &files) {
  if (llvm::Error err = files.addText((dir + "/" + kBlockIndexFile).str(), copy.index))
    return err;
  for (const auto &[name, t] : copy.vars)
    if (llvm::Error err = files.add((dir + "/" + name + ".npy").str(), t))
      return err;
  return llvm::Error::success();
}

} // namespace

llvm::Error stagePserverBlocks(const proto::Program &program, const Scope &scope,
                               llvm::StringRef dir, SaveSet &files) {
  auto copy = copyBlocks(program, scope);
  if (!copy)
    return copy.takeError();
  return stageBlocks(*copy, dir, files);
}

llvm::Error PserverCheckpoints::write(int64_t step, const proto::Program &program,
                                      const Scope &scope, const PserverTables &tables,
                                      const std::map<std::string, std::string> &fields,
                                      std::function<void()> written) {
  // The copy is taken here, between updates; the files are written while training goes on.
  auto blocks = copyBlocks(program, scope);
  if (!blocks)
    return blocks.takeError();
  auto vars = std::make_shared<BlocksCopy>(std::move(*blocks));
  auto rows = std::make_shared<PserverTables::Snapshot>(tables.snapshot());
  return writer_.start([this, vars, rows, step, fields, written]() -> llvm::Error {
    llvm::Error err = steps_.write(
        step,
        [&](const std::string &dir) -> llvm::Error {
          SaveSet files(dir); // in a fresh directory: the set's renames only drop the suffixes
          if (llvm::Error err = stageBlocks(*vars, dir, files))
            return err;
          if (!rows->tables.empty())
            if (llvm::Error err = rows->stage(dir + "/tables", files))
              return err;
          return files.commit();
        },
        fields);
    if (!err && written)
      written();
    return err;
  });
}

llvm::Error PserverCheckpoints::load(int64_t step, const proto::Program &program, Scope &scope,
                                     PserverTables &tables) {
  writer_.join(); // a checkpoint being written is read whole, or not at all
  std::string path = pathOf(step);
  if (!steps_.manifest(step))
    return makeError("{0}: no complete checkpoint of step {1} for this job", path, step);
  if (llvm::Error err = verifyCheckpointFiles(path))
    return err;
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
