// The scheduler's waits, each named once: the defaults of their flags and the heartbeat rhythm.
#pragma once

#include <chrono>

namespace oar::runtime {

/// Every node must register within this long of the scheduler's start (--register-timeout-ms).
inline constexpr std::chrono::milliseconds kDefaultRegisterTimeout{60000};
/// A node silent this long is gone (--heartbeat-timeout-ms).
inline constexpr std::chrono::milliseconds kDefaultHeartbeatTimeout{3000};
/// Nodes beat this often; a heartbeat timeout must cover two beats.
inline constexpr std::chrono::milliseconds kHeartbeatEvery{1000};
inline constexpr std::chrono::milliseconds kMinHeartbeatTimeout = 2 * kHeartbeatEvery;

} // namespace oar::runtime
