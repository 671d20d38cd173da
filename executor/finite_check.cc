// NaN/inf checks.
#include "executor/finite_check.h"

#include <cmath>

#include "support/error.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

template <typename T> static std::optional<int64_t> firstNonFiniteOf(const T *p, int64_t n) {
  // Sum-of-products trick: x * 0 is 0 for finite x and NaN for NaN/inf, so one vectorisable
  // pass decides, and only a bad tensor pays for finding the index.
  T acc = 0;
  for (int64_t i = 0; i < n; ++i)
    acc += p[i] * T(0);
  if (acc == T(0))
    return std::nullopt;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i]))
      return i;
  return std::nullopt;
}

std::optional<int64_t> firstNonFinite(const Tensor &onDevice) {
  if (!onDevice.initialized())
    return std::nullopt;
  Tensor t = onHost(onDevice);
  if (t.dtype() == proto::F32)
    return firstNonFiniteOf(t.data<float>(), t.numel());
  if (t.dtype() == proto::F64)
    return firstNonFiniteOf(t.data<double>(), t.numel());
  return std::nullopt;
}

std::optional<int64_t> firstNonFinite(const void *data, DType dtype, int64_t n) {
  if (dtype == proto::F32)
    return firstNonFiniteOf(static_cast<const float *>(data), n);
  if (dtype == proto::F64)
    return firstNonFiniteOf(static_cast<const double *>(data), n);
  return std::nullopt;
}

static double elementAt(const Tensor &onDevice, int64_t i) {
  Tensor t = onHost(onDevice);
  return t.dtype() == proto::F64 ? t.data<double>()[i] : t.data<float>()[i];
}

llvm::Error checkFinite(const Tensor &t, llvm::StringRef what) {
  std::optional<int64_t> bad = firstNonFinite(t);
  if (!bad)
    return llvm::Error::success();
  return makeError("{0}: element {1} of {2}{3} is {4}; the values must be finite", what, *bad,
                   dtypeName(t.dtype()), dimsString(t.dims()), elementAt(t, *bad));
}

std::string describeFirstNonFinite(const proto::Block &block, const Scope &scope) {
  auto bad = [&](const std::string &name) {
    const Tensor *t = scope.find(name);
    return t && firstNonFinite(*t).has_value();
  };
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::Op &op = block.ops(i);
    for (const std::string &out : allOutputNames(op)) {
      if (!bad(out))
        continue;
      std::vector<std::string> badInputs;
      for (const std::string &in : allInputNames(op))
        if (in != out && bad(in) && !llvm::is_contained(badInputs, in))
          badInputs.push_back(in);
      std::string text = llvm::formatv("{0} (written by op #{1} {2}", out, i, op.type()).str();
      if (!badInputs.empty())
        text += llvm::formatv(", whose input{0} {1} {2} non-finite too",
                              badInputs.size() > 1 ? "s" : "", llvm::join(badInputs, ", "),
                              badInputs.size() > 1 ? "are" : "is")
                    .str();
      return text + ")";
    }
  }
  return "";
}

} // namespace oar
