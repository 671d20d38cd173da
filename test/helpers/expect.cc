// Test helpers.
#include "test/helpers/expect.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "llvm/Support/FileSystem.h"

std::string errorText(llvm::Error err) {
  if (!err) {
    FAIL_CHECK("expected an error, but the call succeeded");
    return "";
  }
  return llvm::toString(std::move(err));
}

int runCommand(const std::string &cmd, std::string &output) {
  output.clear();
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p)
    return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    output.append(buf.data(), n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string scratchDir(const std::string &name) {
  std::string dir = std::string(OAR_BINARY_DIR) + "/test-scratch/" + name;
  llvm::sys::fs::remove_directories(dir);
  llvm::sys::fs::create_directories(dir);
  return dir;
}

std::string binDir() {
  const char *other = std::getenv("OAR_TEST_BIN_DIR");
  return other && *other ? other : OAR_BINARY_DIR;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}
std::string sourceDir() { return OAR_SOURCE_DIR; }
