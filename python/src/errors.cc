#include "python/src/errors.h"

namespace oar::python {

void throwIfError(llvm::Error err) {
  if (err)
    throw OarError(llvm::toString(std::move(err)));
}

void bindErrors(pybind11::module_ &module) {
  pybind11::register_exception<OarError>(module, "Error", PyExc_RuntimeError);
}

} // namespace oar::python
