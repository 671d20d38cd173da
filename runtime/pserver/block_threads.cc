// Dealing a pserver's optimize blocks and tables to its service threads.
#include "runtime/pserver/block_threads.h"

#include <map>

#include "llvm/ADT/EquivalenceClasses.h"

namespace oar::runtime {

void BlockThreads::assign(const proto::Program &program, const PserverPlan &plan, size_t tables,
                          int threads, Scope &scope) {
  threads = std::max(0, threads);
  workers_ = std::make_unique<ServiceThreads>(threads);
  auto forEachOutput = [&](int block, auto fn) {
    for (const proto::Op &op : program.blocks(block).ops())
      for (const proto::Slot &slot : op.outputs())
        for (const std::string &var : slot.names())
          fn(var);
  };
  llvm::EquivalenceClasses<int> groups;
  llvm::StringMap<int> firstWriter;
  for (int b = 1; b < program.blocks_size(); ++b) {
    groups.insert(b);
    forEachOutput(b, [&](const std::string &var) {
      auto [it, fresh] = firstWriter.try_emplace(var, b);
      if (!fresh)
        groups.unionSets(it->getValue(), b);
    });
  }
  blockThread_.assign(program.blocks_size(), 0);
  std::map<int, int> groupThread; // group leader -> thread, dealt round robin
  for (int b = 1; b < program.blocks_size(); ++b) {
    int leader = groups.getLeaderValue(b);
    auto [it, fresh] = groupThread.try_emplace(leader, 0);
    if (fresh && threads > 0)
      it->second = static_cast<int>(groupThread.size() - 1) % threads;
    blockThread_[b] = it->second;
    forEachOutput(b, [&](const std::string &var) {
      varThread_[var] = blockThread_[b];
      scope.get(var);
    });
  }
  for (const auto &entry : plan.gradToBlock) // async gradients are received on service threads
    scope.get(entry.getKey());
  for (size_t i = 0; i < tables; ++i) // after the blocks' groups, round robin
    tableThread_.push_back(threads > 0 ? static_cast<int>((groupThread.size() + i) % threads) : 0);
}

int BlockThreads::ofVar(llvm::StringRef var) const {
  auto it = varThread_.find(var);
  return it == varThread_.end() ? 0 : it->getValue();
}

} // namespace oar::runtime
