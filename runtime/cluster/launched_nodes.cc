// The processes of one oar-launch.
#include "runtime/cluster/launched_nodes.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

#include "runtime/cluster/launcher.h"
#include "runtime/transport/held_port.h"
#include "support/deadline.h"
#include "support/env_names.h"
#include "support/error.h"
#include "support/signals.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

namespace oar::runtime {

namespace {

using Clock = std::chrono::steady_clock;

/// The child's environment: the launcher's own, with `env`'s names replaced or added.
std::vector<std::string> childEnvironment(const LaunchedNodes::Env &env) {
  std::vector<std::string> entries;
  for (char **e = environ; *e; ++e) {
    llvm::StringRef name = llvm::StringRef(*e).split('=').first;
    if (llvm::none_of(env, [&](const auto &kv) { return name == kv.first; }))
      entries.emplace_back(*e);
  }
  for (const auto &[k, v] : env)
    entries.push_back(k + "=" + v);
  return entries;
}

/// `strings` as the null-terminated array execve takes; valid while `strings` lives.
std::vector<char *> pointersTo(std::vector<std::string> &strings) {
  std::vector<char *> pointers;
  for (std::string &s : strings)
    pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

/// Starts `exe` with its output on a pipe whose read end goes to `outFd`, and `handOver` (a held
/// port's socket, or -1) open in it. A failed pipe or fork is an error, never a pid of -1:
/// kill(-1, ...) would signal every process the user owns.
llvm::Expected<pid_t> spawn(const std::string &exe, const std::vector<std::string> &args,
                            const LaunchedNodes::Env &env, int handOver, int &outFd) {
  // Everything the child needs is built here: between fork and exec it may call only
  // async-signal-safe functions. The launcher has threads (one reading each node's output),
  // and one of them may hold the allocator's lock at the fork: a malloc in the child (setenv
  // did) would then wait forever.
  std::vector<std::string> argStrings{exe};
  argStrings.insert(argStrings.end(), args.begin(), args.end());
  std::vector<std::string> envStrings = childEnvironment(env);
  std::vector<char *> argv = pointersTo(argStrings), envp = pointersTo(envStrings);
  std::string cannotRun = "cannot run " + exe + ": ";
  int pipeFds[2];
  if (pipe(pipeFds) != 0)
    return makeError("pipe: {0}", strerror(errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(pipeFds[0]);
    close(pipeFds[1]);
    return makeError("fork: {0}", strerror(err));
  }
  if (pid == 0) {
    unblockWatchedSignals();          // this process blocks them for its watcher thread
    prctl(PR_SET_PDEATHSIG, SIGTERM); // no orphans if the launcher dies
    if (getppid() != parent)
      _exit(1);
    dup2(pipeFds[1], STDOUT_FILENO);
    dup2(pipeFds[1], STDERR_FILENO);
    close(pipeFds[0]);
    close(pipeFds[1]);
    if (handOver >= 0) // every held port is close-on-exec; this node's stays open
      fcntl(handOver, F_SETFD, 0);
    execve(exe.c_str(), argv.data(), envp.data());
    const char *why = strerrordesc_np(errno); // a static string: no locale, no allocation
    if (!why)
      why = "unknown error";
    (void)!write(STDERR_FILENO, cannotRun.data(), cannotRun.size());
    (void)!write(STDERR_FILENO, why, strlen(why));
    (void)!write(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  close(pipeFds[1]);
  outFd = pipeFds[0];
  return pid;
}

std::string describeStatus(int status) {
  if (WIFEXITED(status))
    return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

bool succeeded(const LaunchedNode &n) { return WIFEXITED(n.status) && WEXITSTATUS(n.status) == 0; }

} // namespace

bool LaunchedNode::isTrainer() const { return llvm::StringRef(name).startswith("trainer."); }

LaunchedNodes::LaunchedNodes(std::string executor, std::function<void(const std::string &)> print,
                             int tailLines)
    : executor_(std::move(executor)), print_(std::move(print)), tailLines_(tailLines) {}

LaunchedNodes::~LaunchedNodes() { stopAll(); }

void LaunchedNodes::start(const std::string &name, const std::vector<std::string> &args, Env env,
                          const HeldPort *port) {
  if (!startFailure_.empty())
    return;
  auto node = std::make_unique<LaunchedNode>();
  node->name = name;
  // Only this node's: one inherited from the launcher's own environment would name no socket.
  env.emplace_back(env::kOarListenFd, port ? std::to_string(port->fd()) : std::string());
  auto pid = spawn(executor_, args, env, port ? port->fd() : -1, node->outFd);
  if (!pid) {
    startFailure_ = "cannot start " + name + " (" + llvm::toString(pid.takeError()) + ")";
    return;
  }
  node->pid = *pid;
  LaunchedNode *n = node.get();
  try {
    n->reader = std::thread([this, n] { readOutput(n); });
  } catch (const std::system_error &e) { // a thread limit: the node cannot be watched
    startFailure_ = "cannot start " + name + " (a thread to read its output: " + e.what() + ")";
    kill(n->pid, SIGKILL);
    waitpid(n->pid, nullptr, 0);
    close(n->outFd);
    return;
  }
  nodes_.push_back(std::move(node));
}

void LaunchedNodes::readOutput(LaunchedNode *n) {
  FILE *f = fdopen(n->outFd, "r");
  char *line = nullptr;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    std::string text(line, len);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
      text.pop_back();
    std::lock_guard<std::mutex> lock(printMutex_);
    n->tail.push_back(text);
    if (n->tail.size() > static_cast<size_t>(tailLines_))
      n->tail.pop_front();
    if (print_)
      print_("[" + n->name + "] " + text);
  }
  free(line);
  fclose(f);
}

LaunchOutcome LaunchedNodes::watch(bool trainersMayFail, int64_t timeoutSec,
                                   const std::function<bool()> &shouldStop) {
  Deadline limit{std::chrono::seconds(timeoutSec)}; // unused when 0
  LaunchOutcome out;
  out.reason = startFailure_;
  LaunchedNode *lostTrainer = nullptr;
  auto trainersDone = [&] {
    return llvm::all_of(nodes_, [](const auto &n) { return n->done || !n->isTrainer(); });
  };
  // A node that exited with kExitOtherNodeFailed, and when: the node it names as the cause
  // usually exits a moment later, and that one is reported.
  LaunchedNode *followedFailure = nullptr;
  Clock::time_point followedAt;
  // Takes node n's exit: the job's failure, a lost trainer, or one that follows another's.
  auto noteExit = [&](LaunchedNode &n) {
    bool ok = succeeded(n);
    bool consequence = WIFEXITED(n.status) && WEXITSTATUS(n.status) == kExitOtherNodeFailed;
    // Async: a pserver (or scheduler) that ends with an error once a trainer was lost most
    // likely ends for it ("trainer(s) T were lost"), maybe before the last trainer's exit is
    // seen: it waits, as a consequence does, for the trainers to end.
    bool afterLoss = lostTrainer && !n.isTrainer() && WIFEXITED(n.status);
    if (!ok && trainersMayFail && n.isTrainer()) {
      if (!lostTrainer)
        lostTrainer = &n;
    } else if (!ok && !out.failed && !consequence && !afterLoss) {
      out.failed = &n;
      out.reason = describeStatus(n.status);
    }
    if ((consequence || (!ok && afterLoss)) && !followedFailure)
      followedFailure = &n, followedAt = Clock::now();
  };
  while (out.reason.empty()) {
    bool allDone = true;
    for (auto &n : nodes_) {
      if (n->done)
        continue;
      if (waitpid(n->pid, &n->status, WNOHANG) == n->pid) {
        n->done = true;
        noteExit(*n);
      } else {
        allDone = false;
      }
    }
    // Async: once every trainer has ended, a lost one is the job's failure; its pservers would
    // otherwise wait out their barrier or idle timeout for it.
    if (lostTrainer && !out.failed && trainersDone()) {
      out.failed = lostTrainer;
      out.reason = describeStatus(lostTrainer->status);
      if (llvm::any_of(nodes_, [&](const auto &n) {
            return n.get() != lostTrainer && n->isTrainer() && succeeded(*n);
          }))
        out.reason += "; the other trainers trained on without it";
    }
    bool causeOverdue =
        followedFailure && (allDone || Clock::now() - followedAt > std::chrono::seconds(2));
    if (!out.failed && causeOverdue)
      out.failed = followedFailure, out.reason = describeStatus(followedFailure->status);
    if (allDone || out.failed)
      break;
    if (shouldStop && shouldStop()) {
      out.reason = "stopped by signal " + std::to_string(stopSignal());
      break;
    }
    if (timeoutSec > 0 && limit.passed()) {
      out.reason = "timed out after " + std::to_string(timeoutSec) + " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return out;
}

void LaunchedNodes::stopAll() {
  if (stopped_)
    return;
  stopped_ = true;
  for (auto &n : nodes_)
    if (!n->done)
      kill(n->pid, SIGTERM);
  Deadline grace{std::chrono::seconds(5)};
  for (auto &n : nodes_) {
    while (!n->done) {
      if (waitpid(n->pid, &n->status, WNOHANG) == n->pid) {
        n->done = true;
      } else if (grace.passed()) {
        kill(n->pid, SIGKILL);
        waitpid(n->pid, &n->status, 0);
        n->done = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  for (auto &n : nodes_)
    if (n->reader.joinable())
      n->reader.join();
}

} // namespace oar::runtime
