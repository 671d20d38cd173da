#include "python/src/dtypes.h"

#include "python/src/errors.h"

namespace oar::python {

DType dtypeFromName(const std::string &name) {
  for (DType d : {proto::F32, proto::F64, proto::I32, proto::I64})
    if (name == numpyName(d) || name == dtypeName(d))
      return d;
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
