// Ports for the servers a test starts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/transport/held_port.h"

namespace oar {

/// A port on 127.0.0.1 held until the server given it (Node::heldPort,
/// SchedulerOptions::heldPort, or handOver for a process) takes it over.
std::shared_ptr<runtime::HeldPort> holdPort();
/// "127.0.0.1:PORT" of `port`.
std::string endpointOf(const runtime::HeldPort &port);
/// The command prefix ("env OAR_LISTEN_FD=N") that hands `port` to a node started by a
/// shell command of this test: it stays open across exec (every process the command starts
/// inherits it; only the node told takes it over). A node started again at the same address is
/// handed the same socket: the copies this test and the command's shell hold keep it listening
/// meanwhile, so no one else takes the port.
std::string handOver(runtime::HeldPort &port);
/// A port on 127.0.0.1 that nobody serves while it lives: bound and never listening, so no other
/// process can bind it (nor take its IPC name, as a pserver binds both), and a connect is refused.
class UnservedPort {
public:
  UnservedPort();
  ~UnservedPort();
  UnservedPort(const UnservedPort &) = delete;
  UnservedPort &operator=(const UnservedPort &) = delete;
  int port() const { return port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

private:
  int fd_ = -1;
  int port_ = 0;
};
/// Ports picked and let go, for nodes started by a launcher that passes no descriptor on (mpirun,
/// srun): another process may take such a port before the node binds it; the node then fails to
/// bind, saying so (never a silent wrong result).
std::vector<int> pickFreePorts(int n);

} // namespace oar
