// Node roles by name: what flags, programs and the scheduler's messages carry.
#include "ir/node_role.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

TEST_CASE("a node role reads back from its name, and a name that is no role is refused",
          "[ir]") {
  for (Role r : {Role::None, Role::Trainer, Role::Pserver, Role::Scheduler})
    CHECK(requireValue(parseRole(roleName(r))) == r);
  CHECK(roleName(Role::None).empty()); // one machine: no role
  CHECK(roleName(Role::Pserver) == "pserver");
  CHECK_THAT(errorText(parseRole("PSERVER")),
             Contains("role \"PSERVER\" must be trainer, pserver or scheduler"));
  CHECK_THAT(errorText(parseRole("worker")), Contains("role \"worker\""));
}
