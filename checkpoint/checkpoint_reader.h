// Any checkpoint, read var by var: one machine's save, a distributed job's save (trainer 0's
// params, each pserver's blocks, the tables' parts), a checkpoint directory of one machine or of
// every pserver, or an export. Loaders (load.h) and oar-export read through it, so a checkpoint
// of any layout loads anywhere.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "checkpoint/pserver_blocks.h"
#include "checkpoint/table_files.h"
#include "executor/tensor.h"
#include "llvm/ADT/StringMap.h"

namespace oar {

class CheckpointReader {
public:
  /// Opens `dir` and works out its layout:
  /// - an export (inference.pb): params/<var>.npy and tables/;
  /// - a checkpoint directory of one machine (step-<N>/): its newest complete step;
  /// - a checkpoint directory of a job's pservers (pserver.<i>/step-<N>/): the newest step that
  ///   every pserver holds complete;
  /// - a save: <var>.npy, pserver.<i>/ (blocks with their BLOCKS index) and tables/.
  /// With `step`, a checkpoint directory's step-<step> instead of the newest (complete on every
  /// pserver); refused for a save or an export, which have no steps.
  /// Errors name the directory; nothing is read but indexes until a var is asked for.
  static llvm::Expected<CheckpointReader> open(llvm::StringRef dir,
                                               std::optional<int64_t> step = std::nullopt);

  /// The directory given to open().
  const std::string &dir() const { return dir_; }
  /// In words, for logs: "the save DIR", "checkpoint step 300 of 2 pservers in DIR".
  const std::string &describe() const { return what_; }
  /// A checkpoint's step, and its MANIFEST's fields (epoch); none for a save or an export.
  std::optional<int64_t> step() const { return step_; }
  const std::map<std::string, std::string> &fields() const { return fields_; }

  /// The whole dense var `name`: its file, or put together from the pservers' blocks of it. With
  /// `declared`, the tensor must match the declaration (dtype, dims). None when the checkpoint
  /// holds nothing for it; errors name the file.
  llvm::Expected<std::optional<Tensor>> dense(llvm::StringRef name,
                                              const proto::Var *declared = nullptr) const;
  /// Whether dense(name) finds something.
  bool holdsDense(llvm::StringRef name) const;
  /// The parts of table `name` (checked to be one save's); none when it holds no such table.
  llvm::Expected<std::optional<std::vector<TablePartFiles>>> table(llvm::StringRef name) const;
  /// The same unchecked (nullptr: no such table).
  const std::vector<TablePartFiles> *tableParts(llvm::StringRef name) const {
    auto it = tables_.find(name);
    return it == tables_.end() ? nullptr : &it->second;
  }
  /// The tables it holds, by name.
  std::vector<std::string> tableNames() const;

private:
  struct PserverDir {
    std::string dir;
    std::vector<SavedBlock> blocks;
  };
  /// Adds the tables under `tablesDir` (tables/<T>/...).
  llvm::Error addTables(const std::string &tablesDir);
  llvm::Error addPserverDir(const std::string &dir);

  std::string dir_, what_;
  std::optional<int64_t> step_;
  std::map<std::string, std::string> fields_;
  std::string flatDir_; ///< where <var>.npy files are; empty for a pserver checkpoint directory
  std::vector<PserverDir> pservers_;
  llvm::StringMap<std::vector<TablePartFiles>> tables_;
};

} // namespace oar
