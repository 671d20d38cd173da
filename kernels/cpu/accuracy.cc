// CPU kernel of accuracy.
#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

template <typename T> static llvm::Error accuracy(KernelContext &ctx) {
  const Tensor &scores = ctx.input("Out");
  const int64_t *labels = ctx.input("Label").data<int64_t>();
  int64_t rows = scores.dim(0), c = scores.dim(1), correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = scores.data<T>() + r * c;
    int64_t best = std::max_element(row, row + c) - row;
    correct += best == labels[r];
  }
  ctx.output("Accuracy").data<T>()[0] = rows ? T(correct) / T(rows) : T(0);
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(accuracy, accuracy);

} // namespace oar::cpu
