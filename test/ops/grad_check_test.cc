// Finite-difference gradient checks for every differentiable op, through append_backward.
#include "executor/kernel.h"
#include "ops/op_registry.h"
#include "test/helpers/expect.h"
#include "test/helpers/grad_check.h"

using namespace oar;

TEST_CASE("every differentiable op's gradient matches finite differences", "[ops][grad]") {
  for (const GradCheck &c : allGradChecks()) {
    INFO("grad check of " << c.op);
    runGradCheck(c);
  }
}

TEST_CASE("every op declares a gradient or says why not, and has a CPU kernel", "[ops]") {
  for (const ops::OpSchema *s : ops::allOps()) {
    INFO("op " << s->type());
    CHECK((s->gradMaker() != nullptr) != !s->noGradReason().empty());
    CHECK(hasKernel(s->type(), Device::Cpu));
    CHECK(!s->summaryText().empty());
  }
}

TEST_CASE("the grad checks cover every differentiable op", "[ops][grad]") {
  std::vector<std::string> checked;
  for (const GradCheck &c : allGradChecks())
    checked.push_back(c.op);
  for (const ops::OpSchema *s : ops::allOps()) {
    INFO("differentiable op without a finite-difference check: " << s->type());
    if (s->gradMaker())
      CHECK(llvm::is_contained(checked, s->type()));
  }
}
