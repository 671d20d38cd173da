// oar-executor: runs one node. Alone it trains on this machine; with a role (from flags, from
// Paddle's PADDLE_* variables, TF_CONFIG, MindSpore's or ps-lite's) it is a trainer, a pserver
// or the scheduler of a job. Given a single-machine main/startup it transpiles in-process for
// its role, so every node runs the same command line; given --dir it runs the transpiled file
// for its role. Its flags are the node's settings (runtime/node/node_options.h); the node is
// the library's (runtime/node/start_node.h).
#include <cstdlib>
#include <cstring>

#include "runtime/node/start_node.h"
#include "support/env_names.h"
#include "support/option_table.h"
#include "support/signals.h"
#include "tools/common/option_flags.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

constexpr const char *kErrorPrefix = "oar-executor: error: ";

void printError(const std::string &why) {
  errs() << kErrorPrefix << why << "\n";
  errs().flush();
}

/// The process's side of a node: its streams, its signals, its environment.
oar::runtime::NodeIo processIo() {
  // The socket oar-launch handed over is this process's alone: its variable is cleared, so
  // that nothing this process starts claims it too.
  static const std::string listenFd = [] {
    const char *value = std::getenv(oar::env::kOarListenFd);
    std::string kept = value ? value : "";
    unsetenv(oar::env::kOarListenFd);
    return kept;
  }();
  oar::runtime::NodeIo io;
  io.getenv = [](const char *name) -> const char * {
    if (std::strcmp(name, oar::env::kOarListenFd) == 0)
      return listenFd.empty() ? nullptr : listenFd.c_str();
    return std::getenv(name);
  };
  io.out = &outs();
  io.log = [](const std::string &line) { errs() << line << "\n"; };
  io.error = printError;
  io.shouldStop = oar::runtime::stopRequested;
  io.checkpointRequested = oar::runtime::takeCheckpointRequest;
  // The trainer's thread may be blocked in Gloo for the whole timeout: the process ends here,
  // naming the rank, as the failed collective would have.
  io.onCollectiveStuck = [](const std::string &what) {
    printError(what);
    outs().flush();
    std::_Exit(1);
  };
  return io;
}

} // namespace

int main(int argc, char **argv) {
  oar::setToolVersion("oar-executor");
  ExitOnError exitOnErr(kErrorPrefix);
  // kill -USR1 asks a checkpointing pserver for a checkpoint; caught from the start, so that a
  // signal sent while the node starts cannot end it (others ignore it).
  exitOnErr(oar::runtime::installCheckpointHandler());
  oar::runtime::NodeOptions options;
  oar::OptionTable table;
  options.declare(table);
  oar::OptionFlags flags(table);
  cl::HideUnrelatedOptions(flags.categories());
  oar::parseToolFlags(argc, argv, "oar-executor", "oar-executor: run one node of oar training\n");
  exitOnErr(flags.apply());
  // Until its loops poll for a stop, a node ends at SIGTERM (see installStopHandlers).
  exitOnErr(oar::runtime::installStopHandlers(oar::runtime::BeforeFirstPoll::End));
  return oar::runtime::startNode(options, processIo());
}
