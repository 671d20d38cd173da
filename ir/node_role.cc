// Role names.
#include "ir/node_role.h"

#include "support/error.h"

namespace oar {

llvm::StringRef roleName(Role role) {
  switch (role) {
  case Role::Trainer:
    return "trainer";
  case Role::Pserver:
    return "pserver";
  case Role::Scheduler:
    return "scheduler";
  case Role::None:
    break;
  }
  return "";
}

llvm::Expected<Role> parseRole(llvm::StringRef name) {
  for (Role r : {Role::None, Role::Trainer, Role::Pserver, Role::Scheduler})
    if (name == roleName(r))
      return r;
  return makeError("role \"{0}\" must be trainer, pserver or scheduler", name);
}

} // namespace oar
