// NumPy arrays and oar tensors, both ways. An array of oar's dtype and C layout becomes a tensor
// over its own buffer (no copy); anything else is refused, never converted.
#pragma once

#include <string>

#include <pybind11/numpy.h>

#include "executor/tensor.h"

namespace oar::python {

/// A tensor over `array`'s buffer that keeps `array` alive. `array` must be C-contiguous, aligned
/// and native-endian float32, float64, int32 or int64; else oar.Error naming `what` ("feed x"),
/// its dtype and shape.
Tensor viewOf(const pybind11::array &array, const std::string &what);
/// oar.Error unless `t` fits the declaration of var `name` (`dtype`, `dims`): the dtype, the rank
/// and every dim that is not -1. `what` names it.
void checkAgainstDeclared(const Tensor &t, DType dtype, llvm::ArrayRef<int64_t> dims,
                          const std::string &name, const std::string &what);
/// A host copy of `t` that shares no buffer: one copy whether `t` is on the CPU or a device.
Tensor ownCopy(const Tensor &t);
/// An array over the host tensor `t`'s buffer, keeping the buffer alive. The caller hands over a
/// tensor nobody else writes (ownCopy's, or one it made).
pybind11::array arrayOver(Tensor t);
/// "float32[64, 784]": an array's dtype and shape for messages.
std::string describeArray(const pybind11::array &array);

} // namespace oar::python
