// Real jobs for end-to-end tests.
#include "test/helpers/job.h"

#include <unistd.h>

#include "runtime/cluster/launcher.h"
#include "test/helpers/expect.h"
#include "test/helpers/ports.h"
#include "llvm/ADT/StringExtras.h"

namespace oar {

std::string run(const std::string &cmd) {
  std::string out;
  int rc = runCommand(cmd, out);
  INFO(cmd << "\n" << out);
  REQUIRE(rc == 0);
  return out;
}

std::string runFailing(const std::string &cmd) {
  std::string out;
  int rc = runCommand(cmd, out);
  INFO(cmd << "\n" << out);
  REQUIRE(rc != 0);
  return out;
}

std::string errorLines(const std::string &output) {
  std::string lines;
  size_t at = 0;
  while (at < output.size()) {
    size_t end = output.find('\n', at);
    if (end == std::string::npos)
      end = output.size();
    std::string line = output.substr(at, end - at);
    if (line.find("error:") != std::string::npos)
      lines += (lines.empty() ? "" : "\n") + line;
    at = end + 1;
  }
  return lines;
}

void makeModel(const std::string &dir, const std::string &args) {
  run(binDir() + "/oar-model " + args + " -o " + dir);
}

void makeFitALine(const std::string &dir, const std::string &args) {
  makeModel(dir, "--model=linear --in=13 --out=1 " + args + " --format=uci_housing --data=" +
                     sourceDir() + "/data/uci_housing/housing.data");
}

std::string runJob(const std::string &model, const std::string &out, const std::string &victim,
                   const std::string &after, const std::string &flags, std::vector<int> *portsOut,
                   const std::string &convention, const std::string &env) {
  // Held for the whole job and handed to the nodes serving them, at every start (PORT_FDS).
  auto first = holdPort(), second = holdPort();
  std::vector<int> ports{first->port(), second->port()};
  if (portsOut)
    *portsOut = ports;
  handOver(*first);
  handOver(*second);
  std::string fds = std::to_string(first->fd()) + " " + std::to_string(second->fd());
  return run(env + " PORT_FDS='" + fds + "' CONVENTION=" + convention + " " + sourceDir() +
             "/test/runtime/run_job.sh " + binDir() + " " + model + " " + out + " " +
             std::to_string(ports[0]) + " " + std::to_string(ports[1]) + " " + victim + " " +
             after + " " + flags);
}

std::string whyNobodyCannotRun(const std::string &tool, const std::vector<std::string> &alsoNeeds) {
  std::string out, check = "command -v setpriv";
  for (const std::string &c : alsoNeeds)
    check += " && command -v " + c;
  if (geteuid() != 0 || runCommand(check, out) != 0)
    return "needs root and setpriv" +
           (alsoNeeds.empty() ? std::string() : ", " + llvm::join(alsoNeeds, ", ")) +
           " (to run a process as another user)";
  if (runCommand("setpriv --reuid=65534 --regid=65534 --clear-groups test -x " + binDir() + "/" +
                     tool,
                 out) != 0)
    return "user nobody cannot run " + binDir() + "/" + tool +
           " (a folder above it is closed to others)";
  return "";
}

} // namespace oar
