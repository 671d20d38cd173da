// The distributed-table pass: lookup_tables with is_distributed read a table the pservers hold.
#pragma once

#include "transpiler/plan.h"

namespace oar {

/// Whether `op` is a lookup_table of a distributed table (is_distributed).
bool isDistributedLookup(const proto::Op &op);
/// Whether `main` looks anything up in a distributed table.
bool hasDistributedTables(const proto::Program &main);

/// Rewrites `main` (a copy of the single-machine program) so that no op reads a distributed
/// table W:
///  - each lookup_table of W becomes distributed_lookup_table: the batch's keys, each once, are
///    pulled from the pservers that own them and scattered back in the lookup's order;
///  - each lookup_table_grad of W becomes distributed_push_sparse: the gradient rows of each key
///    are summed and pushed, one row per key, to its pserver;
///  - the sum of those gradients and W's optimizer op go (the pservers apply the update).
/// Returns each table's plan (its optimizer, and its initialiser read from `startup`). Errors
/// name the op that reads W or its gradient any other way, and a table the pservers cannot hold.
llvm::Expected<std::vector<TablePlan>> distributeTables(proto::Program &main,
                                                        const proto::Program &startup,
                                                        const DistributeConfig &config);

} // namespace oar
