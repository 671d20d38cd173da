// The processes of one oar-launch: started with their output read line by line, watched until the
// job ends or fails, and stopped.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace oar::runtime {

class HeldPort;

/// One node process.
struct LaunchedNode {
  std::string name; ///< "pserver.0", "trainer.1", "scheduler"
  bool isTrainer() const;
  pid_t pid = -1; ///< never -1 once started: kill(-1, ...) would signal every process of the user
  int outFd = -1;
  std::thread reader;
  std::deque<std::string> tail; ///< its last lines
  bool done = false;
  int status = 0; ///< waitpid's, once done
};

/// How a launch ended: the node to blame (null: none) and why ("" when every node succeeded).
struct LaunchOutcome {
  LaunchedNode *failed = nullptr;
  std::string reason;
};

class LaunchedNodes {
public:
  using Env = std::vector<std::pair<std::string, std::string>>;
  /// Nodes run `executor`; each line they print goes to `print` prefixed with "[name] ", and the
  /// last `tailLines` of each are kept.
  LaunchedNodes(std::string executor, std::function<void(const std::string &)> print,
                int tailLines);
  /// Stops what still runs (stopAll).
  ~LaunchedNodes();

  /// Starts node `name` with `args` and `env` added to this process's environment, handing it
  /// `port` (OAR_LISTEN_FD) when given. Once a node could not start, no other starts.
  void start(const std::string &name, const std::vector<std::string> &args, Env env,
             const HeldPort *port = nullptr);
  /// Why a node could not start ("" when all did).
  const std::string &startFailure() const { return startFailure_; }

  /// Waits until every node ended, one failed, `shouldStop` said so (SIGTERM; unset: never) or
  /// `timeoutSec` (0: none) passed. `trainersMayFail` (async, GEO): a failed trainer stops
  /// nothing, the job ends when the others do and fails naming it.
  LaunchOutcome watch(bool trainersMayFail, int64_t timeoutSec,
                      const std::function<bool()> &shouldStop = {});
  /// SIGTERM to every node still running, SIGKILL after 5 s; then their output is read to the end.
  void stopAll();

private:
  /// Reads `n`'s output to its end, keeping the tail and printing each line.
  void readOutput(LaunchedNode *n);

  std::string executor_;
  std::function<void(const std::string &)> print_;
  int tailLines_;
  std::mutex printMutex_;
  std::vector<std::unique_ptr<LaunchedNode>> nodes_;
  std::string startFailure_;
  bool stopped_ = false;
};

} // namespace oar::runtime
