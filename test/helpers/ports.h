// Ports for the servers a test starts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/transport/held_port.h"

namespace oar {

/// A port on 127.0.0.1 held until the server given it (NodeOptions::heldPort,
/// SchedulerOptions::heldPort, or handOver for a process) takes it over.
std::shared_ptr<runtime::HeldPort> holdPort();
/// "127.0.0.1:PORT" of `port`.
std::string endpointOf(const runtime::HeldPort &port);
/// The command prefix ("env OAR_LISTEN_FD=N") that hands `port` to a node started by a
/// shell command of this test: it stays open across exec (every process the command starts
/// inherits it; only the node told takes it over). Not for a node that restarts: its second
/// start must bind the port itself, which the copies others hold would prevent.
std::string handOver(runtime::HeldPort &port);
/// Ports picked and let go: for nodes a test kills and starts again at the same address, and for
/// addresses nobody may serve. Another process may take such a port before the node binds it;
/// the node then fails to bind, saying so (never a silent wrong result).
std::vector<int> pickFreePorts(int n);

} // namespace oar
