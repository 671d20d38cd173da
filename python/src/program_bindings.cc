// Programs: the protobuf an oar model is, read, written, shown and compared from Python.
#include <pybind11/stl.h>

#include "ir/program.h"
#include "ops/test_mode.h"
#include "ops/verify.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/program_vars.h"
#include "python/src/dtypes.h"
#include "support/error.h"

namespace py = pybind11;

namespace oar::python {

static py::bytes programBytes(const proto::Program &prog) {
  std::string bytes;
  if (!appendProgramBytes(prog, bytes))
    throw OarError("the program is over protobuf's 2 GiB limit");
  return py::bytes(bytes);
}

static proto::Program parseProgramBytes(const py::bytes &bytes) {
  proto::Program prog;
  std::string data = bytes;
  if (!prog.ParseFromString(data))
    throw OarError("the bytes are not a serialized oar Program");
  return prog;
}

/// A copy of `prog` that runs as a served model would: forward ops only, batch norm on its
/// running statistics, no dropout (Paddle's clone(for_test=True)).
static proto::Program forTest(const proto::Program &prog) {
  proto::Program test = prog;
  if (ops::hasTrainingBehaviour(test))
    ops::setTestMode(test);
  for (proto::Block &block : *test.mutable_blocks()) {
    auto *ops = block.mutable_ops();
    ops->erase(std::remove_if(ops->begin(), ops->end(),
                              [](const proto::Op &op) { return op.role() != proto::FORWARD; }),
               ops->end());
  }
  return test;
}

/// Block 0's var `name`, or oar.Error naming it.
static const proto::Var &blockVar(const proto::Program &prog, const std::string &name) {
  const proto::Var *var = mainBlockVar(prog, name);
  if (!var)
    throw OarError("the program has no var \"" + name + "\"");
  return *var;
}

void bindPrograms(py::module_ &m) {
  py::class_<proto::Program>(m, "ProgramDesc", "An oar program (ir/program.proto)")
      .def(py::init(&newProgram))
      .def("serialize", &programBytes, "the program's bytes, the same for the same program")
      .def_static("parse", &parseProgramBytes)
      .def("text", &programText, "protobuf text, as oar-show prints it")
      .def("save",
           [](const proto::Program &p, const std::string &path, const std::string &origin) {
             throwIfError(saveProgram(p, path, origin));
           },
           py::arg("path"), py::arg("origin") = "written by oar (Python)")
      .def_static("load", [](const std::string &path) { return unwrap(loadVerifiedProgram(path)); })
      .def("verify",
           [](const proto::Program &p, const std::string &what) {
             throwIfError(verifyProgram(p, what));
           },
           py::arg("what") = "program")
      .def("clone", [](const proto::Program &p) { return proto::Program(p); })
      .def("clone_for_test", &forTest)
      .def_property_readonly("loss", [](const proto::Program &p) { return p.loss(); })
      .def_property_readonly("metrics",
                             [](const proto::Program &p) {
                               return std::vector<std::string>(p.metrics().begin(),
                                                               p.metrics().end());
                             })
      .def_property_readonly("predictions",
                             [](const proto::Program &p) {
                               return std::vector<std::string>(p.predictions().begin(),
                                                               p.predictions().end());
                             })
      .def("op_types",
           [](const proto::Program &p) {
             std::vector<std::string> types;
             for (const proto::Block &b : p.blocks())
               for (const proto::Op &op : b.ops())
                 types.push_back(op.type());
             return types;
           })
      .def("var_names",
           [](const proto::Program &p) {
             std::vector<std::string> names;
             if (p.blocks_size())
               for (const proto::Var &v : p.blocks(0).vars())
                 names.push_back(v.name());
             return names;
           })
      .def("has_var",
           [](const proto::Program &p, const std::string &name) {
             return mainBlockVar(p, name) != nullptr;
           })
      .def("var_dims",
           [](const proto::Program &p, const std::string &name) {
             auto dims = dimsOf(blockVar(p, name).type());
             return std::vector<int64_t>(dims.begin(), dims.end());
           })
      .def("var_dtype",
           [](const proto::Program &p, const std::string &name) {
             DType d = blockVar(p, name).type().dtype();
             return d == proto::BF16 ? std::string("bfloat16") : numpyName(d); // bf16: storage only
           })
      .def("var_persistable", [](const proto::Program &p, const std::string &name) {
        return blockVar(p, name).persistable();
      });
}

} // namespace oar::python
