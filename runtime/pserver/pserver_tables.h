// The distributed tables a pserver holds rows of, and a sync step's pushes until its barrier.
#pragma once

#include <memory>

#include "checkpoint/load_model.h"
#include "executor/tensor.h"
#include "runtime/tables/sparse_routing.h"
#include "runtime/tables/sparse_table.h"
#include "runtime/tables/table_budget.h"
#include "runtime/wire/protocol.h"
#include "llvm/ADT/StringMap.h"

namespace oar::runtime {

/// Largest number of keys one PULL_ROWS or PUSH_ROWS may carry.
inline constexpr int64_t kMaxKeysPerMessage = int64_t(1) << 20;

class PserverTables {
public:
  /// Reads the sparse_table ops of `program`'s block 0; `scope` holds their learning rates.
  /// With a limited `budget`, every table may hold as many rows as the budget allows each.
  llvm::Error init(const proto::Program &program, Scope &scope, int64_t fanin,
                   const TableBudget &budget = {});
  /// The rows each table may hold (0: no limit) and what the limit has done, over all tables.
  int64_t rowsPerTable() const { return rowsPerTable_; }
  RoomCounts roomCounts() const;
  size_t size() const { return held_.size(); }

  /// Checks a PULL_ROWS or PUSH_ROWS: a table this pserver holds, at most kMaxKeysPerMessage
  /// keys, each owned by this pserver, and for a push one f32 row of the table's width per key.
  /// Returns the table's index.
  llvm::Expected<size_t> check(const Message &m) const;
  /// The rows of a PULL_ROWS's keys, [keys, width].
  Tensor pull(size_t table, const proto::MsgHeader &h) const;
  /// Async: applies one push now.
  void apply(size_t table, const Message &push);
  /// Sync: keeps trainer `t`'s push until the step's barrier.
  void keep(size_t table, int64_t t, std::shared_ptr<Message> push);
  /// Sync: sums the kept pushes of each key (trainers in order, live ones only), applies their
  /// average over the live trainers, and forgets them. The order of the sum does not depend on
  /// arrival or on how many pservers share the table, so neither does the result.
  void applyStep(size_t table, const std::vector<bool> &live);
  /// Why a checked PUSH_ROWS's rows cannot be applied (NaN or inf, naming the key), or "".
  std::string nonFiniteRows(const Message &push) const;
  /// Sync: a step whose pushes of `table` are not applied (--nonfinite-grads=skip): the kept
  /// pushes go and the table's clock moves on.
  void skipStep(size_t table) {
    for (auto &pushes : held_[table].kept)
      pushes.clear();
    held_[table].table->endStep();
  }
  /// Sync: drops every kept push (a rollback: the trainers send their step again).
  void forgetKept() {
    for (Held &h : held_)
      for (auto &pushes : h.kept)
        pushes.clear();
  }
  /// The largest frame a push of any table may need.
  int64_t largestMessage() const;
  /// Every table's rows as they are now: what a checkpoint holds of them, written while the
  /// tables change (a copy of the rows).
  struct Snapshot {
    std::vector<std::pair<TableInfo, TableRows>> tables;
    int64_t index = 0, count = 1; ///< this pserver's part of each table
    /// Stages each table's part under DIR/<table>/ into `files`.
    llvm::Error stage(llvm::StringRef dir, SaveSet &files) const;
  };
  Snapshot snapshot() const;
  /// Writes this pserver's part of every table's rows under DIR/<table>/, replaced together
  /// (see table_checkpoint.h).
  llvm::Error save(llvm::StringRef dir) const;
  /// Reads the rows this pserver owns of every table from `ckpt`; with `ownPartOnly`, a save
  /// by as many pservers as this job has needs only this pserver's part.
  llvm::Error load(const CheckpointReader &ckpt, bool ownPartOnly, LoadReport &report);
  /// Rows and bytes held, over all tables.
  size_t rows() const;
  size_t bytesHeld() const;

private:
  struct Held {
    std::unique_ptr<SparseTable> table;
    const Tensor *learningRate = nullptr;
    std::vector<std::vector<std::shared_ptr<Message>>> kept; ///< by trainer
    /// The single-machine optimizer's state vars by slot (sparse_table's state_vars): where a
    /// dense checkpoint of the table keeps its rows' state.
    std::map<std::string, std::string> stateVars;
    int64_t asyncPushes = 0;
  };
  float learningRate(const Held &h) const { return h.learningRate->data<float>()[0]; }

  std::vector<Held> held_;
  llvm::StringMap<size_t> index_;
  SparseRouting routing_;
  int64_t pserverIndex_ = 0;
  int64_t rowsPerTable_ = 0;
};

} // namespace oar::runtime
