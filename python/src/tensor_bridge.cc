#include "python/src/tensor_bridge.h"

#include "python/src/dtypes.h"
#include "python/src/errors.h"

namespace py = pybind11;

namespace oar::python {

namespace {

/// The oar dtype of `array`'s elements, if oar has it (native byte order only).
std::optional<DType> dtypeOfArray(const py::array &array) {
  if (py::isinstance<py::array_t<float>>(array))
    return proto::F32;
  if (py::isinstance<py::array_t<double>>(array))
    return proto::F64;
  if (py::isinstance<py::array_t<int32_t>>(array))
    return proto::I32;
  if (py::isinstance<py::array_t<int64_t>>(array))
    return proto::I64;
  return std::nullopt;
}

/// Owns one reference to a Python object for a tensor's buffer; drops it under the GIL, from
/// whichever thread releases the last tensor.
struct PyReference {
  PyObject *object;
  void operator()(std::byte *) const {
    if (!Py_IsInitialized())
      return; // the interpreter is gone, and the object with it
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(object);
    PyGILState_Release(state);
  }
};

} // namespace

std::string describeArray(const py::array &array) {
  std::string shape;
  for (py::ssize_t i = 0; i < array.ndim(); ++i)
    shape += (i ? ", " : "") + std::to_string(array.shape(i));
  return std::string(py::str(array.dtype())) + "[" + shape + "]";
}

Tensor viewOf(const py::array &array, const std::string &what) {
  std::optional<DType> dtype = dtypeOfArray(array);
  if (!dtype)
    throw OarError(what + ": an array of " + describeArray(array) +
                   "; oar reads float32, float64, int32 or int64 in the machine's byte order");
  if (!(array.flags() & py::array::c_style))
    throw OarError(what + ": the array (" + describeArray(array) +
                   ") is not C-contiguous; pass numpy.ascontiguousarray(...) of it");
  if (!(array.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    throw OarError(what + ": the array (" + describeArray(array) + ") is not aligned");
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  PyObject *owner = array.ptr();
  Py_INCREF(owner);
  // The tensor points at the array's own first element: no copy.
  auto *first = static_cast<std::byte *>(const_cast<void *>(array.data()));
  Tensor t;
  t.adopt(*dtype, dims, std::shared_ptr<std::byte>(first, PyReference{owner}));
  return t;
}

void checkAgainstDeclared(const Tensor &t, DType dtype, llvm::ArrayRef<int64_t> dims,
                          const std::string &name, const std::string &what) {
  bool fits = t.dtype() == dtype && t.rank() == dims.size();
  for (size_t i = 0; fits && i < dims.size(); ++i)
    fits = dims[i] == -1 || dims[i] == t.dim(i);
  if (!fits)
    throw OarError(what + ": got " + numpyName(t.dtype()) + dimsString(t.dims()) + ", but " +
                   name + " is declared " + dtypeName(dtype).str() + dimsString(dims));
}

Tensor ownCopy(const Tensor &t) { return t.device() == Device::Cpu ? t.clone() : onHost(t); }

py::array arrayOver(Tensor t) {
  auto *owner = new Tensor(std::move(t));
  py::capsule keep(owner, [](void *p) { delete static_cast<Tensor *>(p); });
  std::vector<py::ssize_t> shape(owner->dims().begin(), owner->dims().end());
  return py::array(py::dtype(numpyName(owner->dtype())), shape, owner->raw(), keep);
}

} // namespace oar::python
