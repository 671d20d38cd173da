// oar's dtypes by the names Python code uses: "float32", "int64", ... (and oar's own "f32").
#pragma once

#include <string>

#include "ir/program.h"

namespace oar::python {

/// The dtype `name` names (float32 | float64 | int32 | int64, or f32 | f64 | i32 | i64); oar.Error
/// for any other.
DType dtypeFromName(const std::string &name);
/// NumPy's name of `dtype`: float32, float64, int32, int64.
std::string numpyName(DType dtype);

} // namespace oar::python
