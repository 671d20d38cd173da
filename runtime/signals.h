// SIGTERM/SIGINT handling: loops poll stopRequested() and stop cleanly.
#pragma once

namespace oar::runtime {

/// Installs handlers for SIGTERM and SIGINT that only set a flag.
void installStopHandlers();
/// True once SIGTERM or SIGINT arrived.
bool stopRequested();
/// The signal that asked to stop (0 if none).
int stopSignal();

} // namespace oar::runtime
