// Device names, places and the accelerator memory hook.
#include "executor/device.h"

#include "ir/error.h"

namespace oar {

llvm::StringRef deviceName(Device d) { return d == Device::Cpu ? "cpu" : "cuda"; }

llvm::Expected<Place> parsePlace(llvm::StringRef text, llvm::StringRef what) {
  if (text == "cpu")
    return Place{Device::Cpu, 0};
  if (text == "cuda")
    return Place{Device::Cuda, 0};
  unsigned index = 0;
  if (text.consume_front("cuda:") && !text.getAsInteger(10, index) && index < 1024)
    return Place{Device::Cuda, static_cast<int>(index)};
  return makeError("{0}: device \"{1}\" is not one of cpu, cuda, cuda:N", what, text);
}

static DeviceMemory *&cudaMemory() {
  static DeviceMemory *memory = nullptr;
  return memory;
}

bool registerDeviceMemory(Device device, DeviceMemory *memory) {
  if (device == Device::Cuda)
    cudaMemory() = memory;
  return true;
}

DeviceMemory *deviceMemory(Device device) {
  return device == Device::Cuda ? cudaMemory() : nullptr;
}

llvm::Error usePlace(const Place &place) {
  if (place.device == Device::Cpu)
    return llvm::Error::success();
  DeviceMemory *memory = deviceMemory(place.device);
  if (!memory)
    return makeError("device cuda:{0}: this oar was built without the CUDA kernels (nvcc was not "
                     "found at configure time; see docs/cuda.md)",
                     place.index);
  return memory->select(place.index);
}

} // namespace oar
