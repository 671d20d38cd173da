// CUDA kernel of auc.
#include "kernels/cuda/cuda_util.h"

namespace oar::cuda {

namespace {

/// Adds each row to the positive or negative histogram by its last column's probability; the
/// label (nonzero: positive) may be of any dtype.
template <typename T, typename L>
__global__ void aucHistogram(const T *pred, const L *label, int64_t *pos, int64_t *neg,
                             int64_t rows, int64_t width, int64_t thresholds) {
  OAR_CUDA_LOOP(r, rows) {
    double p = static_cast<double>(pred[r * width + width - 1]);
    p = p > 0 ? (1.0 < p ? 1.0 : p) : 0.0; // NaN too goes to bucket 0
    int64_t bucket = static_cast<int64_t>(p * thresholds);
    bucket = bucket < thresholds ? bucket : thresholds;
    int64_t *hist = label[r] != L(0) ? pos : neg;
    atomicAdd(reinterpret_cast<unsigned long long *>(hist + bucket), 1ull);
  }
}

/// The AUC of two histograms, by one thread: walk the buckets from the highest probability
/// down, adding the trapezoid each bucket adds to the ROC curve (pairs within one bucket count
/// half).
template <typename T>
__global__ void aucOfHistograms(const int64_t *pos, const int64_t *neg, int64_t buckets, T *auc) {
  double totPos = 0, totNeg = 0, area = 0;
  for (int64_t b = buckets - 1; b >= 0; --b) {
    double prevPos = totPos, prevNeg = totNeg;
    totPos += static_cast<double>(pos[b]);
    totNeg += static_cast<double>(neg[b]);
    area += (totNeg - prevNeg) * (totPos + prevPos) / 2;
  }
  auc[0] = static_cast<T>(totPos > 0 && totNeg > 0 ? area / (totPos * totNeg) : 0.0);
}

template <typename T, typename L>
void launchHistogram(const Tensor &pred, const Tensor &label, int64_t *pos, int64_t *neg,
                     int64_t thresholds) {
  int64_t rows = pred.dim(0);
  OAR_CUDA_LAUNCH((aucHistogram<T, L>), rows, pred.data<T>(), label.data<L>(), pos, neg, rows,
                  pred.dim(1), thresholds);
}

} // namespace

template <typename T> static llvm::Error auc(KernelContext &ctx) {
  const Tensor &pred = ctx.input("Predict"), &label = ctx.input("Label");
  int64_t thresholds = ctx.attrs().getInt("num_thresholds"), buckets = thresholds + 1;
  Tensor &posOut = ctx.output("StatPosOut"), &negOut = ctx.output("StatNegOut");
  // The state is normally updated in place; a separate output starts from the input's counts.
  for (auto [in, out] : {std::pair{"StatPos", &posOut}, std::pair{"StatNeg", &negOut}})
    if (out->raw() != ctx.input(in).raw())
      if (auto err = check(cudaMemcpyAsync(out->raw(), ctx.input(in).raw(), ctx.input(in).bytes(),
                                           cudaMemcpyDeviceToDevice, stream()),
                           "auc"))
        return err;
  int64_t *pos = posOut.data<int64_t>(), *neg = negOut.data<int64_t>();
  switch (label.dtype()) {
  case proto::F32:
    launchHistogram<T, float>(pred, label, pos, neg, thresholds);
    break;
  case proto::F64:
    launchHistogram<T, double>(pred, label, pos, neg, thresholds);
    break;
  case proto::I32:
    launchHistogram<T, int32_t>(pred, label, pos, neg, thresholds);
    break;
  default:
    launchHistogram<T, int64_t>(pred, label, pos, neg, thresholds);
  }
  aucOfHistograms<T><<<1, 1, 0, stream()>>>(pos, neg, buckets, ctx.output("AUC").data<T>());
  return launched("auc");
}
OAR_CUDA_FLOAT_KERNELS(auc, auc);

} // namespace oar::cuda
