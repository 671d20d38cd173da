// The DistributePlan: which block of which parameter lives on which pserver endpoint.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/job_hash.h"
#include "ir/program.h"
#include "transpiler/config.h"

namespace oar {

/// One contiguous slice of a parameter (whole rows when the rank is >= 2).
struct VarBlock {
  unsigned index = 0;
  std::string name;             // `<param>.block<i>` when split, else the param's name
  std::string gradName;         // the matching grad block
  int64_t begin = 0, numel = 0; // element range within the flattened param
  std::vector<int64_t> dims;    // the block's shape
  std::string endpoint;
  size_t endpointIndex = 0;
};

/// How an optimizer op's state maps onto a param's blocks.
struct OptimizerInfo {
  size_t opIndex = 0; // in the single-machine block 0
  std::string type;
  std::vector<std::pair<std::string, std::string>> paramShaped; // (input slot, var): sliced
  std::vector<std::pair<std::string, std::string>>
      perParam;                                            // (input slot, var): [1], one per block
  std::vector<std::pair<std::string, std::string>> shared; // (input slot, var): whole, shared
};

struct ParamPlan {
  std::string param, grad;
  DType dtype = proto::F32;
  std::vector<int64_t> dims;
  std::vector<VarBlock> blocks;
  OptimizerInfo optimizer;
  bool split() const { return blocks.size() > 1; }
  int64_t rowWidth() const;
  /// Rows of each block, in block order.
  std::vector<int64_t> blockRows() const;
};

/// A distributed table (the W of lookup_tables with is_distributed): its rows live on every
/// pserver, by virtual shard (see runtime/tables/sparse_routing.h); it never exists whole anywhere.
struct TablePlan {
  std::string table, grad;
  int64_t height = 0, width = 1;          // height only bounds ids
  proto::Op optimizer;                    // the table's update op in the single-machine program
  proto::Op initializer;                  // the startup op that initialises it there
  std::string learningRate;               // the optimizer's LearningRate var
  int64_t admitAfter = 1, evictAfter = 0; // the lookups' admission and eviction attrs
  float admitProbability = 1.0f;
};

struct DistributePlan {
  DistributeConfig config;
  std::vector<ParamPlan> params; // sorted by name
  std::vector<TablePlan> tables; // sorted by name
  /// Bytes of parameter blocks per endpoint, in endpoint order.
  std::vector<int64_t> endpointBytes() const;
  /// A stable hash of everything trainers and pservers must agree on.
  /// A hash of the plan; `withEndpoints` false leaves out where the pservers are (their number
  /// stays), for what must survive a relaunch on other ports or hosts.
  std::string digest(bool withEndpoints = true) const;
  /// The human-readable plan: each block with rows, elements, bytes and endpoint; load per
  /// endpoint.
  std::string text() const;
};

/// The first name in each input slot of `slots` of op #`index` of the main block, in order, or
/// an error naming the op and the first empty slot (a hand-edited program may have emptied it).
llvm::Expected<std::vector<std::string>> firstInputs(const proto::Op &op, size_t index,
                                                     llvm::ArrayRef<const char *> slots);

/// The error for op #`index` reading `var` in input `slot` when `var` is not declared.
llvm::Error undeclaredInput(const proto::Op &op, size_t index, llvm::StringRef slot,
                            llvm::StringRef var);

/// The identity a trainer and a pserver compare: the plan's digest over the whole single-machine
/// job it was made from (`jobHash`: every op and attr, so the optimizer and its learning rate,
/// and the data feed), so a trainer of another job with the same architecture is refused.
std::string jobDigest(const DistributePlan &plan, uint64_t jobHash, bool withEndpoints);

/// Reads (param, grad, optimizer) from the OPTIMIZE ops of `main`, slices and places the params;
/// `tables` (what the distributed-table pass took out of `main`) join the plan as they are.
/// Errors name an optimizer op the transpiler does not know, or a distributed lookup table left
/// in `main`.
llvm::Expected<DistributePlan> makePlan(const proto::Program &main, const DistributeConfig &config,
                                        std::vector<TablePlan> tables = {});

/// The block sizes (in elements) of a var of `dims` cut for `numPservers` endpoints.
std::vector<int64_t> sliceSizes(llvm::ArrayRef<int64_t> dims, int64_t numPservers,
                                int64_t minBlockSize);

} // namespace oar
