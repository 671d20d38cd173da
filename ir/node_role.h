// What a node of a job does. Flags, environments, programs and the scheduler's messages carry the
// role by name (a program's DistributeInfo.role too); the code between them uses the enum.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {

enum class Role {
  None,      ///< no job: one machine
  Trainer,   ///< computes gradients
  Pserver,   ///< holds params and applies updates
  Scheduler, ///< hands out ids and endpoints (MindSpore's scheduler)
};

/// "trainer", "pserver", "scheduler", or "" for None: the names flags, programs, messages and
/// logs use.
llvm::StringRef roleName(Role role);
/// The role `name` names ("" is None); an error naming it and the roles otherwise.
llvm::Expected<Role> parseRole(llvm::StringRef name);

} // namespace oar
