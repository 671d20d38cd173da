// Device names, places and the accelerator memory hook.
#include "executor/device.h"

#include <dlfcn.h>
#include <mutex>

#include "support/error.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

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

llvm::Error loadDeviceKernels(Device device) {
  if (device == Device::Cpu)
    return llvm::Error::success();
  static std::once_flag once;
  static std::string path, why;
  std::call_once(once, [] {
    // Beside liboar.so, wherever that is (the build tree, an install prefix).
    Dl_info self;
    llvm::SmallString<256> dir;
    if (dladdr(reinterpret_cast<void *>(&loadDeviceKernels), &self) && self.dli_fname)
      dir = llvm::sys::path::parent_path(self.dli_fname);
    llvm::SmallString<256> lib(dir);
    llvm::sys::path::append(lib, "liboar_cuda.so.0");
    path = std::string(lib);
    if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      const char *err = dlerror();
      why = err ? err : "unknown error";
    }
  });
  if (!why.empty())
    return makeError("the CUDA kernels cannot be loaded: {0} (oar builds {1} only when nvcc is "
                     "found at configure time; see docs/cuda.md)",
                     why, llvm::sys::path::filename(path));
  if (!deviceMemory(device))
    return makeError("{0} loaded but registered no CUDA memory", path);
  return llvm::Error::success();
}

llvm::Error usePlace(const Place &place) {
  if (place.device == Device::Cpu)
    return llvm::Error::success();
  if (llvm::Error err = loadDeviceKernels(place.device))
    return makeError("device cuda:{0}: {1}", place.index, llvm::toString(std::move(err)));
  return deviceMemory(place.device)->select(place.index);
}

} // namespace oar
