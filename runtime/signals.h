// SIGTERM/SIGINT handling: loops poll stopRequested() and stop cleanly; SIGUSR1 asks for a
// checkpoint.
#pragma once

namespace oar::runtime {

/// Installs handlers for SIGTERM and SIGINT that only set a flag.
void installStopHandlers();
/// True once SIGTERM or SIGINT arrived.
bool stopRequested();
/// The signal that asked to stop (0 if none).
int stopSignal();

/// Installs a handler for SIGUSR1 that only sets a flag: a checkpointing pserver writes one
/// after its next step (`kill -USR1 PID`).
void installCheckpointHandler();
/// True once per SIGUSR1 since the last call.
bool takeCheckpointRequest();

} // namespace oar::runtime
