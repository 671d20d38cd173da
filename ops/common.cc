// Shape-inference helpers.
#include "ops/common.h"

namespace oar::ops {

llvm::Error inferSameAsX(InferContext &ctx) {
  ctx.setOutput("Out", ctx.input("X"));
  return llvm::Error::success();
}

llvm::Error inferGradsLikeInputs(InferContext &ctx) {
  for (const proto::Slot &slot : ctx.op().outputs()) {
    auto base = gradOf(slot.slot());
    assert(base && "grad op outputs are named <slot>@GRAD");
    for (int i = 0; i < slot.names_size(); ++i)
      if (ctx.hasOutput(slot.slot(), i))
        ctx.setOutput(slot.slot(), ctx.input(*base, i), i);
  }
  return llvm::Error::success();
}

llvm::Error requireFloat(const InferContext &ctx, llvm::StringRef slot) {
  DType d = ctx.input(slot).dtype;
  if (d != proto::F32 && d != proto::F64)
    return makeError("{0} must be f32 or f64", ctx.describe(slot));
  return llvm::Error::success();
}

int64_t dimProduct(llvm::ArrayRef<int64_t> dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) {
    if (dims[i] < 0)
      return -1;
    n *= dims[i];
  }
  return n;
}

} // namespace oar::ops
