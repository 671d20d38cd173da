// The pserver role's settings, declared once.
#include "runtime/pserver/pserver_options.h"

#include "support/option_table.h"

namespace oar::runtime {

void PserverOptions::declare(OptionTable &t) {
  t.custom("table-memory-mb", "MB",
           "pservers: the most memory their distributed tables' rows and admission counters may "
           "hold, in MiB (0: no limit)",
           std::to_string(tableBudget.bytes >> 20), [this](llvm::StringRef v) -> llvm::Error {
             int64_t mb = 0;
             if (v.getAsInteger(10, mb) || mb < 0 || mb > (int64_t(1) << 30))
               return OptionTable::refusal("table-memory-mb", v, "must be 0 (no limit) to 2^30");
             tableBudget.bytes = mb << 20;
             return llvm::Error::success();
           });
  t.choice("table-full", tableBudget.whenFull,
           {{"evict", TableFull::Evict}, {"refuse", TableFull::Refuse}},
           "pservers: what a full table does with a new key: evict (the least recently pushed "
           "rows) | refuse (no row; its pushes are dropped and counted)");
  t.choice("nonfinite-grads", skipNonFinite, {{"refuse", false}, {"skip", true}},
           "pservers: a gradient or table rows holding NaN or inf: refuse (the trainer hears why "
           "and a sync job ends) | skip (that update is not applied for that step; the log counts "
           "the skips)");
  t.add("broken-job-grace-ms", brokenJobGrace,
        "pservers of a hybrid job: how long a job that lost a trainer waits for the other "
        "trainers to hear why before it ends, naming the silent ones");
}

} // namespace oar::runtime
