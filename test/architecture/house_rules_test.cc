// The house rules the build can check: libzmq's types stay in the transport, the pserver's files
// and functions stay small, and oar-executor stays a flag parser over the library's node entry.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "test/architecture/layering_check.h"
#include "test/helpers/expect.h"
#include "test/helpers/skip.h"

namespace fs = std::filesystem;
using oar::test::readLayers;

namespace {

bool isSource(const fs::path &p) {
  std::string ext = p.extension().string();
  return ext == ".cc" || ext == ".h" || ext == ".cu";
}

/// Every source file of every layer (the library's folders and the tools'), relative to the
/// source root.
std::vector<std::string> layerSources() {
  auto layers = requireValue(readLayers(OAR_BINARY_DIR "/layers.txt"));
  std::vector<std::string> files;
  for (const auto &layer : layers)
    for (const std::string &dir : layer.dirs) {
      fs::path full = fs::path(OAR_SOURCE_DIR) / dir;
      if (!fs::is_directory(full))
        continue;
      for (const auto &entry : fs::directory_iterator(full))
        if (entry.is_regular_file() && isSource(entry.path()))
          files.push_back((fs::path(dir) / entry.path().filename()).string());
    }
  return files;
}

size_t lineCount(const std::string &path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);)
    ++n;
  return n;
}

std::string joined(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &l : lines)
    text += l + "\n";
  return text;
}

} // namespace

TEST_CASE("libzmq's types are named only in runtime/transport and runtime/wire", "[architecture]") {
  std::vector<std::string> files = layerSources();
  REQUIRE(files.size() > 100);
  std::vector<std::string> problems;
  for (const std::string &file : files) {
    llvm::StringRef dir = llvm::StringRef(file).rsplit('/').first;
    if (dir == "runtime/transport" || dir == "runtime/wire")
      continue;
    std::ifstream in(std::string(OAR_SOURCE_DIR) + "/" + file);
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      if (line.find("zmq::") != std::string::npos)
        problems.push_back(file + ":" + std::to_string(number) + ": " + line);
    }
  }
  INFO(joined(problems));
  CHECK(problems.empty());
}

TEST_CASE("no file of runtime/pserver is past 500 lines, and oar-executor is under 200",
          "[architecture]") {
  std::vector<std::string> problems;
  for (const auto &entry : fs::directory_iterator(fs::path(OAR_SOURCE_DIR) / "runtime/pserver"))
    if (isSource(entry.path()) && lineCount(entry.path().string()) > 500)
      problems.push_back(entry.path().filename().string() + ": " +
                         std::to_string(lineCount(entry.path().string())) + " lines");
  if (size_t n = lineCount(OAR_SOURCE_DIR "/tools/oar_executor.cc"); n >= 200)
    problems.push_back("tools/oar_executor.cc: " + std::to_string(n) + " lines");
  INFO(joined(problems));
  CHECK(problems.empty());
}

TEST_CASE("no function in runtime/ or tools/ is past 80 lines", "[architecture]") {
  if (!fs::exists("/usr/bin/python3"))
    OAR_SKIP("no /usr/bin/python3 to run scripts/long_functions.py");
  std::string out;
  int status = runCommand("cd " OAR_SOURCE_DIR " && /usr/bin/python3 scripts/long_functions.py "
                          "runtime tools 2>&1",
                          out);
  INFO(out);
  CHECK(status == 0);
}

TEST_CASE("the function-length check finds a long function and counts its lines",
          "[architecture]") {
  if (!fs::exists("/usr/bin/python3"))
    OAR_SKIP("no /usr/bin/python3 to run scripts/long_functions.py");
  std::string dir = scratchDir("long_functions");
  std::ofstream(dir + "/a.cc") << "namespace x {\nint shortOne() { return 1; }\n"
                               << "int longOne(int a) {\n"
                               << std::string(85, '\n') << "  auto f = [](int b) {\n"
                               << "    return b; // } in a comment\n  };\n"
                               << "  return f(a) + \"}\"[0];\n}\n}\n";
  std::string out;
  int status =
      runCommand("/usr/bin/python3 " OAR_SOURCE_DIR "/scripts/long_functions.py " + dir, out);
  CHECK(status == 1);
  CHECK(out == "  91 " + dir + "/a.cc:3 longOne\n");
}
