// Fuzz inputs handed to loaders that read files: an anonymous in-memory file per input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace oar::fuzz {

/// `bytes` as a file at path() (a memfd, gone when this is destroyed).
class MemoryFile {
public:
  MemoryFile(const uint8_t *data, size_t size) : fd_(memfd_create("oar-fuzz", 0)) {
    size_t done = 0;
    while (fd_ >= 0 && done < size) {
      ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0)
        break;
      done += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() {
    if (fd_ >= 0)
      close(fd_);
  }
  MemoryFile(const MemoryFile &) = delete;
  MemoryFile &operator=(const MemoryFile &) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
  int fd_;
};

} // namespace oar::fuzz
