// Devices a tensor can live on, and the hook through which an accelerator's library (the CUDA
// kernels in kernels/cuda/, when built) provides memory and copies to a CPU-only core.
#pragma once

#include <cstddef>
#include <string>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {

enum class Device { Cpu, Cuda };
llvm::StringRef deviceName(Device d);

/// A device and its index: "cpu", "cuda:1".
struct Place {
  Device device = Device::Cpu;
  int index = 0;
};
/// Parses "cpu", "cuda" (index 0) or "cuda:N"; `what` names the flag or file in errors.
llvm::Expected<Place> parsePlace(llvm::StringRef text, llvm::StringRef what);

/// Memory and copies of one kind of accelerator. Calls come from the thread that runs the
/// executor; copies are complete when they return (host buffers may be reused at once).
class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;
  /// nullptr when the device has no room (the caller reports it).
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *p, size_t bytes) = 0;
  virtual void zero(void *p, size_t bytes) = 0;
  /// Host to device, device to host or device to device, by the two devices.
  virtual void copy(void *dst, Device dstDevice, const void *src, Device srcDevice,
                    size_t bytes) = 0;
  /// How many devices of this kind the process sees (0 without a driver).
  virtual int count() = 0;
  /// Makes device `index` the current one of the calling thread; the error says why it cannot
  /// run (no driver, no such device).
  virtual llvm::Error select(int index) = 0;
};

/// Called once, at static-initialisation time, by the library that implements `device`.
bool registerDeviceMemory(Device device, DeviceMemory *memory);
/// The registered memory of `device`, or nullptr (Device::Cpu has none; CUDA until its library
/// is loaded).
DeviceMemory *deviceMemory(Device device);
/// Loads the kernels and memory of `device` (liboar_cuda.so.0, from liboar's own directory) on
/// first use: the CUDA libraries are large, and a process that never asks for a GPU (every
/// pserver, every CPU trainer) should not pay to load them. The error says why they cannot be.
llvm::Error loadDeviceKernels(Device device);

/// Makes `place` usable by the calling thread: CPU always is; CUDA needs oar built with the CUDA
/// kernels and a visible GPU of that index. The error says which is missing.
llvm::Error usePlace(const Place &place);

} // namespace oar
