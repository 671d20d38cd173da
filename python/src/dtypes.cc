#include "python/src/dtypes.h"

#include "python/src/errors.h"

namespace oar::python {

DType dtypeFromName(const std::string &name) {
  if (name == "float32" || name == "f32")
    return proto::F32;
  if (name == "float64" || name == "f64")
    return proto::F64;
  if (name == "int32" || name == "i32")
    return proto::I32;
  if (name == "int64" || name == "i64")
    return proto::I64;
  throw OarError("unknown dtype \"" + name + "\" (use float32, float64, int32 or int64)");
}

std::string numpyName(DType dtype) {
  switch (dtype) {
  case proto::F32:
    return "float32";
  case proto::F64:
    return "float64";
  case proto::I32:
    return "int32";
  case proto::I64:
    return "int64";
  default:
    throw OarError("dtype " + dtypeName(dtype).str() + " has no NumPy equivalent");
  }
}

} // namespace oar::python
