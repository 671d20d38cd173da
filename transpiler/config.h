// The distributed job's configuration: one struct, the same names as oar-transpile's flags.
#pragma once

#include <string>
#include <vector>

#include "ir/distributed_mode.h"
#include "llvm/Support/Error.h"

namespace oar {

class OptionTable; // support/option_table.h

struct DistributeConfig {
  int64_t trainerId = 0;
  int64_t trainers = 1;
  std::vector<std::string> pservers; // host:port, in endpoint order
  Mode mode = Mode::Sync;
  int64_t geoKSteps = 100;
  bool sliceVarUp = true;
  int64_t minBlockSize = 8192;             // elements
  std::string splitMethod = "round_robin"; // round_robin | hash_name
  int64_t tableShards = 1000;              // virtual shards of each distributed table
  /// Hybrid jobs (`--mode hybrid`): distributed tables on the pservers in `mode` (sync or async),
  /// every dense param all-reduced among the trainers, which run its optimizer themselves.
  bool hybrid = false;
  /// Collective and hybrid jobs: dense gradients all-reduced in buckets of at least this many
  /// bytes (the first one firstBucketBytes), each started as soon as backward is done with it
  /// (transpiler/gradient_buckets.h); 0: one all-reduce of them all after backward.
  int64_t firstBucketBytes = int64_t(1) << 20;
  int64_t bucketBytes = int64_t(25) << 20;

  /// One-line errors naming the bad field and its value.
  llvm::Error validate() const;

  /// Declares the plan's settings (config_options.cc): --mode and --hybrid-tables
  /// (declareMode), --geo-k-steps, --slice-var-up, --min-block-size, --split-method and the
  /// gradient buckets. Their defaults are this struct's.
  void declare(OptionTable &table);
  /// --mode and --hybrid-tables only, for a tool that passes the rest on (oar-launch).
  void declareMode(OptionTable &table);
};

/// Sets `config`'s mode from the --mode flag's value: sync, async, geo, collective, or hybrid
/// with its tables' mode `hybridTables` (sync or async; given only with hybrid).
llvm::Error setModeFromFlags(DistributeConfig &config, llvm::StringRef mode,
                             llvm::StringRef hybridTables);
/// Sets `config`'s gradient buckets from the --first-bucket-mb and --bucket-mb flags (MiB).
llvm::Error setBucketsFromFlags(DistributeConfig &config, double firstBucketMb, double bucketMb);
/// The --mode flag's value for `config`: "hybrid" for a hybrid job, else its mode's name.
std::string modeFlag(const DistributeConfig &config);

/// Splits "h1:p1,h2:p2" into endpoints (no validation).
std::vector<std::string> splitEndpoints(llvm::StringRef list);
/// Checks one host:port endpoint.
llvm::Error checkEndpoint(llvm::StringRef endpoint);

} // namespace oar
