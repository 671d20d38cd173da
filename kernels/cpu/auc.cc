// CPU kernel of auc.
#include <cstring>

#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

/// Whether row `r`'s label is a positive (nonzero), for a label of any dtype.
static bool isPositive(const Tensor &label, int64_t r) {
  switch (label.dtype()) {
  case proto::F32:
    return label.data<float>()[r] != 0;
  case proto::F64:
    return label.data<double>()[r] != 0;
  case proto::I32:
    return label.data<int32_t>()[r] != 0;
  default:
    return label.data<int64_t>()[r] != 0;
  }
}

/// The AUC of two histograms: walk the buckets from the highest probability down, adding the
/// trapezoid each bucket adds to the ROC curve (pairs within one bucket count half).
static double aucOfHistograms(const int64_t *pos, const int64_t *neg, int64_t buckets) {
  double totPos = 0, totNeg = 0, area = 0;
  for (int64_t b = buckets - 1; b >= 0; --b) {
    double prevPos = totPos, prevNeg = totNeg;
    totPos += static_cast<double>(pos[b]);
    totNeg += static_cast<double>(neg[b]);
    area += (totNeg - prevNeg) * (totPos + prevPos) / 2;
  }
  return totPos > 0 && totNeg > 0 ? area / (totPos * totNeg) : 0.0;
}

template <typename T> static llvm::Error auc(KernelContext &ctx) {
  const Tensor &pred = ctx.input("Predict"), &label = ctx.input("Label");
  int64_t thresholds = ctx.attrs().getInt("num_thresholds"), buckets = thresholds + 1;
  Tensor &posOut = ctx.output("StatPosOut"), &negOut = ctx.output("StatNegOut");
  // The state is normally updated in place; a separate output starts from the input's counts.
  for (auto [in, out] : {std::pair{"StatPos", &posOut}, std::pair{"StatNeg", &negOut}})
    if (out->raw() != ctx.input(in).raw())
      std::memcpy(out->raw(), ctx.input(in).raw(), ctx.input(in).bytes());
  int64_t *pos = posOut.data<int64_t>(), *neg = negOut.data<int64_t>();
  int64_t rows = pred.dim(0), width = pred.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    double p = static_cast<double>(pred.data<T>()[r * width + width - 1]);
    p = p > 0 ? std::min(p, 1.0) : 0.0; // NaN too goes to bucket 0
    int64_t bucket = std::min(static_cast<int64_t>(p * thresholds), thresholds);
    ++(isPositive(label, r) ? pos : neg)[bucket];
  }
  ctx.output("AUC").data<T>()[0] = static_cast<T>(aucOfHistograms(pos, neg, buckets));
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(auc, auc);

} // namespace oar::cpu
