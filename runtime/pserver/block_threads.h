// Which of a pserver's service threads owns each optimize block, each var those blocks write and
// each distributed table.
#pragma once

#include <memory>
#include <vector>

#include "executor/tensor.h"
#include "ir/program.pb.h"
#include "runtime/pserver/pserver_plan.h"
#include "runtime/pserver/service_threads.h"

namespace oar::runtime {

class BlockThreads {
public:
  /// Starts `threads` service threads (0: tasks run on the caller) and gives each optimize block
  /// of `program` one for life. Blocks that write a common var (even through a chain of others)
  /// share a thread, so no var is ever written by two threads; the `tables` come after, round
  /// robin. Every var a block writes, and every gradient, is created in `scope` here: service
  /// threads only look vars up, and the scope's map never changes under them.
  void assign(const proto::Program &program, const PserverPlan &plan, size_t tables, int threads,
              Scope &scope);

  ServiceThreads &workers() { return *workers_; }
  int ofBlock(int block) const { return blockThread_[block]; }
  /// The thread that updates `var` (0 for a var no block writes).
  int ofVar(llvm::StringRef var) const;
  int ofTable(size_t table) const { return tableThread_[table]; }

private:
  std::unique_ptr<ServiceThreads> workers_;
  std::vector<int> blockThread_; ///< by block index
  llvm::StringMap<int> varThread_;
  std::vector<int> tableThread_;
};

} // namespace oar::runtime
