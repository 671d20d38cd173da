// The plan's settings, declared once: every tool that plans a job takes them from here.
#include <cmath>
#include <memory>

#include "support/option_table.h"
#include "transpiler/config.h"

namespace oar {

void DistributeConfig::declareMode(OptionTable &t) {
  // --mode and --hybrid-tables decide mode and hybrid together, once both are read.
  struct ModeFlags {
    std::string mode, hybridTables;
    bool given = false;
  };
  auto f = std::make_shared<ModeFlags>();
  f->mode = modeFlag(*this);
  t.custom("mode", "MODE", "sync | async | geo | collective | hybrid", f->mode,
           [f](llvm::StringRef v) {
             f->mode = v.str(), f->given = true;
             return llvm::Error::success();
           });
  t.custom("hybrid-tables", "MODE",
           "--mode hybrid: the distributed tables train sync (at each step's barrier, the "
           "default) or async (applied on arrival)",
           "", [f](llvm::StringRef v) {
             f->hybridTables = v.str(), f->given = true;
             return llvm::Error::success();
           });
  t.check([this, f]() {
    return f->given ? setModeFromFlags(*this, f->mode, f->hybridTables) : llvm::Error::success();
  });
}

void DistributeConfig::declare(OptionTable &t) {
  declareMode(t);
  t.add("geo-k-steps", geoKSteps, "GEO: steps between syncs");
  t.add("slice-var-up", sliceVarUp, "cut big params into blocks");
  t.add("min-block-size", minBlockSize, "smallest block, in elements");
  t.add("split-method", splitMethod, "NAME", "round_robin | hash_name");
  // The buckets are bytes here and MiB on the command line; both sizes are checked together.
  struct BucketFlags {
    double firstMb, otherMb;
    bool given = false;
  };
  auto b = std::make_shared<BucketFlags>();
  b->firstMb = static_cast<double>(firstBucketBytes) / 1048576;
  b->otherMb = static_cast<double>(bucketBytes) / 1048576;
  auto mb = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  auto number = [b](double &into, llvm::StringRef name) {
    return [b, &into, name = name.str()](llvm::StringRef v) -> llvm::Error {
      if (v.getAsDouble(into) || !std::isfinite(into))
        return OptionTable::refusal(name, v, "not a number");
      b->given = true;
      return llvm::Error::success();
    };
  };
  t.custom("first-bucket-mb", "MB",
           "collective jobs: the first gradient bucket, in MiB: its all-reduce starts once "
           "backward has finished that many bytes of gradients (PyTorch DDP's 1; hybrid jobs sum "
           "their gradients after backward)",
           mb(b->firstMb), number(b->firstMb, "first-bucket-mb"));
  t.custom("bucket-mb", "MB",
           "collective jobs: the other gradient buckets, in MiB (DDP's 25); 0: one all-reduce of "
           "every gradient after backward",
           mb(b->otherMb), number(b->otherMb, "bucket-mb"));
  t.check([this, b]() {
    return b->given ? setBucketsFromFlags(*this, b->firstMb, b->otherMb) : llvm::Error::success();
  });
}

} // namespace oar
