// pybind11 conversions for the LLVM types oar's API takes: a str as llvm::StringRef and a
// sequence of ints as llvm::ArrayRef<int64_t>, each valid for the call it is passed to.
#pragma once

#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace pybind11::detail {

template <> struct type_caster<llvm::StringRef> {
  PYBIND11_TYPE_CASTER(llvm::StringRef, const_name("str"));
  bool load(handle src, bool convert) {
    make_caster<std::string> str;
    if (!str.load(src, convert))
      return false;
    held = cast_op<std::string &&>(std::move(str));
    value = held;
    return true;
  }
  static handle cast(llvm::StringRef s, return_value_policy, handle) {
    return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
  }

private:
  std::string held;
};

template <> struct type_caster<llvm::ArrayRef<int64_t>> {
  PYBIND11_TYPE_CASTER(llvm::ArrayRef<int64_t>, const_name("list[int]"));
  bool load(handle src, bool convert) {
    make_caster<std::vector<int64_t>> ints;
    if (!ints.load(src, convert))
      return false;
    held = cast_op<std::vector<int64_t> &&>(std::move(ints));
    value = held;
    return true;
  }
  static handle cast(llvm::ArrayRef<int64_t> a, return_value_policy policy, handle parent) {
    return make_caster<std::vector<int64_t>>::cast(std::vector<int64_t>(a.begin(), a.end()),
                                                   policy, parent);
  }

private:
  std::vector<int64_t> held;
};

} // namespace pybind11::detail
