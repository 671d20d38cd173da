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
/// oar.Error unless `t` fits `var`'s declaration: its dtype, its rank and every dim that is not
/// -1. `what` names it.
void checkAgainstDeclared(const Tensor &t, const proto::Var &var, const std::string &what);
/// An array over `t`'s buffer (host copy first for a device tensor), keeping the buffer alive.
/// The caller hands over a tensor nobody else writes (a clone).
pybind11::array arrayOver(Tensor t);
/// "float32[64, 784]": an array's dtype and shape for messages.
std::string describeArray(const pybind11::array &array);

} // namespace oar::python
