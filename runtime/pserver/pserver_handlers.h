// A pserver's answer to each message a trainer sends: the checks every message passes, then one
// handler per kind. What differs between sync and async is the core's step policy.
#pragma once

#include "runtime/pserver/pserver_core.h"

namespace oar::runtime {

/// Checks a decoded message of connection `peer` (its trainer, connection, step and the job's
/// state) and acts on it by its kind. An error is the sender's fault: the caller answers it and
/// logs it, and nothing was applied. A RolledBackError: the trainer must say HELLO again.
llvm::Error handleMessage(PserverCore &core, const std::string &peer, Message &m);

} // namespace oar::runtime
