// Async pserver updates beside a param version a trainer still reads
// (runtime/pserver/param_versions.h): the version read keeps its bytes, and the update's result
// has the bits of an update in place.
#include <cstring>

#include "executor/executor.h"
#include "executor/selected_rows.h"
#include "ir/names.h"
#include "runtime/pserver/param_versions.h"
#include "test/helpers/expect.h"

using namespace oar;
using namespace oar::runtime;

namespace {
const std::vector<float> kParam = {1.0f, -2.0f, 3.5f, 0.25f, -0.75f, 2.0f};
const std::vector<float> kGrad = {0.5f, 0.125f, -1.0f, 2.0f, -0.25f, 0.0625f};

/// A pserver program whose block 1 holds `ops` (block 0 serves; it runs nothing here).
proto::Program pserverProgram(const std::vector<proto::Op> &ops) {
  proto::Program program;
  program.add_blocks();
  proto::Block &block = *program.add_blocks();
  for (const proto::Op &op : ops)
    *block.add_ops() = op;
  return program;
}

/// `p` [3, 2], its dense gradient `g`, the learning rate and each optimizer's state.
Scope startScope() {
  Scope scope;
  scope.get("p") = Tensor::fromVector<float>({3, 2}, kParam);
  scope.get("g") = Tensor::fromVector<float>({3, 2}, kGrad);
  scope.get("lr") = Tensor::fromVector<float>({1}, {0.1f});
  for (const char *state : {"v", "m1", "m2", "m"})
    scope.get(state) = Tensor::fromVector<float>({3, 2}, std::vector<float>(6, 0.5f));
  scope.get("b1p") = Tensor::fromVector<float>({1}, {0.9f});
  scope.get("b2p") = Tensor::fromVector<float>({1}, {0.999f});
  return scope;
}

/// The optimize ops an async or GEO pserver runs, each updating `p` in place as transpiled.
std::vector<proto::Op> updateOps() {
  return {
      makeOp("sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
             {{"ParamOut", {"p"}}}, {}, proto::OPTIMIZE),
      makeOp("momentum",
             {{"Param", {"p"}}, {"Grad", {"g"}}, {"Velocity", {"v"}}, {"LearningRate", {"lr"}}},
             {{"ParamOut", {"p"}}, {"VelocityOut", {"v"}}}, {{"mu", 0.9f}}, proto::OPTIMIZE),
      makeOp("adam",
             {{"Param", {"p"}},
              {"Grad", {"g"}},
              {"LearningRate", {"lr"}},
              {"Moment1", {"m1"}},
              {"Moment2", {"m2"}},
              {"Beta1Pow", {"b1p"}},
              {"Beta2Pow", {"b2p"}}},
             {{"ParamOut", {"p"}},
              {"Moment1Out", {"m1"}},
              {"Moment2Out", {"m2"}},
              {"Beta1PowOut", {"b1p"}},
              {"Beta2PowOut", {"b2p"}}},
             {}, proto::OPTIMIZE),
      makeOp("adagrad",
             {{"Param", {"p"}}, {"Grad", {"g"}}, {"Moment", {"m"}}, {"LearningRate", {"lr"}}},
             {{"ParamOut", {"p"}}, {"MomentOut", {"m"}}}, {{"epsilon", 1e-6f}}, proto::OPTIMIZE),
      makeOp("elementwise_add", {{"X", {"p"}}, {"Y", {"g"}}}, {{"Out", {"p"}}}, {},
             proto::OPTIMIZE),
  };
}

bool sameBits(const Tensor &a, const Tensor &b) {
  return a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}
} // namespace

TEST_CASE("an update beside a version a trainer reads writes a new one, with in-place bits",
          "[runtime]") {
  for (const proto::Op &op : updateOps()) {
    INFO(op.type());
    proto::Program program = pserverProgram({op});
    Scope inPlace = startScope();
    Executor exec;
    REQUIRE_OK(exec.run(program, inPlace, 1));

    Scope scope = startScope();
    ParamVersions versions;
    versions.init(program, {"p"}, scope);
    Tensor read = *scope.find("p"); // a fetch shares the version
    REQUIRE_OK(versions.apply(exec, program, 1, scope));
    CHECK(read.toVector<float>() == kParam);
    CHECK(scope.find("p")->raw() != read.raw());
    CHECK(sameBits(*scope.find("p"), *inPlace.find("p")));
    for (const char *state : {"v", "m1", "m2", "m", "b1p", "b2p"})
      CHECK(sameBits(*scope.find(state), *inPlace.find(state)));
    CHECK(versions.freshVersions() == 1);
    CHECK(versions.copiedVersions() == 0);
    CHECK_FALSE(scope.find(previousVersionName("p"))->initialized()); // nothing kept past it
  }
}

TEST_CASE("an update no one else reads runs in place", "[runtime]") {
  proto::Program program = pserverProgram({updateOps()[0]});
  Scope scope = startScope();
  ParamVersions versions;
  versions.init(program, {"p"}, scope);
  const void *buffer = scope.find("p")->raw();
  Executor exec;
  REQUIRE_OK(versions.apply(exec, program, 1, scope));
  CHECK(scope.find("p")->raw() == buffer);
  CHECK(versions.freshVersions() + versions.copiedVersions() == 0);
}

TEST_CASE("a selected-rows update copies the version being read, then updates its rows",
          "[runtime]") {
  // The sparse kernel writes only the gradient's rows: a fresh buffer would leave the rest unset.
  proto::Program program = pserverProgram({updateOps()[0]});
  Scope scope = startScope();
  SelectedRows &g = scope.getRows("g");
  g.height = 3;
  g.rows = {2};
  g.values = Tensor::fromVector<float>({1, 2}, {1.0f, -1.0f});
  ParamVersions versions;
  versions.init(program, {"p"}, scope);
  Tensor read = *scope.find("p");
  Executor exec;
  REQUIRE_OK(versions.apply(exec, program, 1, scope));
  CHECK(read.toVector<float>() == kParam);
  std::vector<float> want = kParam;
  want[4] -= 0.1f * 1.0f;
  want[5] -= 0.1f * -1.0f;
  CHECK(scope.find("p")->toVector<float>() == want);
  CHECK(versions.copiedVersions() == 1);
  CHECK(versions.freshVersions() == 0);
}

TEST_CASE("a failed update beside a version being read leaves the param at that version",
          "[runtime]") {
  proto::Program program = pserverProgram(
      {makeOp("sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"no_such_lr"}}},
              {{"ParamOut", {"p"}}}, {}, proto::OPTIMIZE)});
  Scope scope = startScope();
  ParamVersions versions;
  versions.init(program, {"p"}, scope);
  Tensor read = *scope.find("p");
  Executor exec;
  CHECK_THAT(errorText(versions.apply(exec, program, 1, scope)),
             Catch::Matchers::Contains("no_such_lr"));
  CHECK(scope.find("p")->raw() == read.raw());
  CHECK(read.toVector<float>() == kParam);
}
