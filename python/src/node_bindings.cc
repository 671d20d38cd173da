// Nodes of a distributed job from Python, through startNode, the entry oar-executor calls: where
// the environment places this process (fleet.init), a pserver or a scheduler run to its end
// (fleet.run_server), and a trainer whose steps the script's own loop drives (fleet.init_worker,
// exe.run, fleet.stop_worker). The node runs on a thread of its own, where its sockets, device
// and kernels stay; the Python thread hands it each step and waits without the GIL, polling for
// Ctrl-C, which stops the node.
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <mutex>
#include <thread>

#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/run_feeds.h"
#include "python/src/tensor_bridge.h"
#include "runtime/node/node_place.h"
#include "runtime/node/start_node.h"
#include "support/env_names.h"
#include "support/error.h"
#include "support/option_table.h"
#include "llvm/Support/raw_ostream.h"

namespace py = pybind11;

namespace oar::python {

namespace {

using runtime::NodeOptions;

/// NodeOptions from flags as oar-executor takes them ("--name=value", "--name value", "--switch");
/// oar.Error naming the flag. The options are where the table's fields point: never moved.
std::unique_ptr<NodeOptions> parseNodeFlags(const std::vector<std::string> &flags) {
  auto options = std::make_unique<NodeOptions>();
  OptionTable table;
  options->declare(table);
  for (size_t i = 0; i < flags.size(); ++i) {
    llvm::StringRef flag = flags[i];
    if (!flag.startswith("-"))
      throw OarError("node flags: \"" + flags[i] + "\" is not a flag (--name=value)");
    auto [name, value] = flag.ltrim('-').split('=');
    bool hasValue = flag.contains('=');
    if (!hasValue) {
      std::string normal = name.str();
      std::replace(normal.begin(), normal.end(), '_', '-');
      auto found = llvm::find_if(table.options(), [&](const OptionTable::Option &o) {
        return o.name == normal;
      });
      if (found == table.options().end())
        throw OarError("node flags: unknown option --" + name.str());
      if (found->isSwitch)
        value = "true";
      else if (i + 1 < flags.size())
        value = flags[++i];
      else
        throw OarError("node flags: --" + name.str() + " needs a value");
    }
    throwIfError(table.set(name, value));
  }
  throwIfError(table.finish());
  return options;
}

/// The process's environment, but the listening socket oar-launch handed over (OAR_LISTEN_FD)
/// goes to the first node that asks: a second node of the process binds its own port.
const char *processEnv(const char *name) {
  static std::mutex mutex;
  static std::optional<std::string> listenFd; // set once taken
  if (std::strcmp(name, env::kOarListenFd) != 0)
    return std::getenv(name);
  std::lock_guard<std::mutex> lock(mutex);
  if (listenFd)
    return nullptr;
  const char *value = std::getenv(name);
  listenFd = value ? value : "";
  unsetenv(name);
  return listenFd->empty() ? nullptr : listenFd->c_str();
}

/// placeNode's view of the environment, which leaves the handed-over socket where it is.
const char *peekEnv(const char *name) { return std::getenv(name); }

/// Where the environment's launch convention and `flags` put this process.
py::dict placeOf(const std::vector<std::string> &flags) {
  auto options = parseNodeFlags(flags);
  runtime::ClusterSpec c = unwrap(runtime::placeNode(*options, peekEnv));
  py::dict d;
  d["role"] = c.role == Role::None ? std::string() : roleName(c.role).str();
  d["trainer_id"] = c.trainerId;
  d["trainers"] = c.trainers;
  d["pservers"] = c.pservers;
  d["endpoint"] = c.currentEndpoint;
  d["scheduler"] = c.scheduler;
  d["pserver_count"] = c.pserverCount;
  d["mode"] = modeFlag(options->config);
  return d;
}

/// One node run by startNode on its own thread: its end, its error, a stop its caller asks for.
class NodeThread {
public:
  NodeThread(std::unique_ptr<NodeOptions> options, runtime::NodeIo io)
      : options_(std::move(options)), io_(std::move(io)) {
    io_.getenv = processEnv;
    io_.out = &llvm::outs();
    io_.log = [](const std::string &line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    io_.error = [this](const std::string &why) {
      std::lock_guard<std::mutex> lock(mutex);
      if (error_.empty())
        error_ = why;
    };
    io_.shouldStop = [this] { return stop.load(); };
  }
  NodeThread(const NodeThread &) = delete;
  /// Stops the node if it still runs, and waits for it (the node's own loops poll the stop).
  ~NodeThread() {
    {
      std::unique_lock<std::mutex> lock = lockWithoutGil();
      stop = true; // under the lock: a waiter between its check and its sleep still wakes
    }
    changed.notify_all();
    if (thread_.joinable()) {
      py::gil_scoped_release noGil;
      thread_.join();
    }
  }

  void start() {
    thread_ = std::thread([this] {
      int status = runtime::startNode(*options_, io_);
      llvm::outs().flush();
      std::lock_guard<std::mutex> lock(mutex);
      status_ = status, ended_ = true;
      changed.notify_all();
    });
  }

  /// Waits (GIL released) until `done()` holds under the lock. Ctrl-C (or any signal handler
  /// that raises) stops the node; once it ended, the handler's exception is raised.
  template <typename Done> void waitUntil(std::unique_lock<std::mutex> &lock, Done done) {
    bool interrupted = false;
    while (!done() && !(interrupted && ended_)) {
      {
        py::gil_scoped_release noGil;
        changed.wait_for(lock, std::chrono::milliseconds(50));
      }
      if (done() || interrupted)
        continue;
      lock.unlock();
      interrupted = PyErr_CheckSignals() != 0; // runs the handlers (main thread), GIL held
      {
        py::gil_scoped_release noGil; // the mutex is only ever taken without the GIL
        lock.lock();
      }
      if (interrupted) {
        stop = true;
        changed.notify_all();
      }
    }
    if (interrupted) {
      lock.unlock();
      joinEnded();
      throw py::error_already_set();
    }
  }

  /// After the node ended: joins its thread; oar.Error with its error unless it ended with 0.
  int finish() {
    joinEnded();
    if (status_ != 0)
      throw OarError(error_.empty() ? "the node ended with status " + std::to_string(status_)
                                    : error_);
    return status_;
  }

  bool ended() const { return ended_; }
  const std::string &error() const { return error_; }

  /// Taken without the GIL (lockWithoutGil): the node's thread never takes the GIL, and a
  /// Python thread that holds it never waits for this.
  std::unique_lock<std::mutex> lockWithoutGil() {
    std::unique_lock<std::mutex> lock(mutex, std::defer_lock);
    py::gil_scoped_release noGil;
    lock.lock();
    return lock;
  }

  std::mutex mutex;
  std::condition_variable changed;
  std::atomic<bool> stop{false};

private:
  void joinEnded() {
    if (thread_.joinable()) {
      py::gil_scoped_release noGil;
      thread_.join();
    }
  }

  std::unique_ptr<NodeOptions> options_;
  runtime::NodeIo io_;
  std::thread thread_;
  bool ended_ = false;
  int status_ = 0;
  std::string error_;
};

std::shared_ptr<const runtime::NodePrograms> programsOf(const proto::Program &main,
                                                        const proto::Program &startup) {
  return std::make_shared<runtime::NodePrograms>(runtime::NodePrograms{main, startup});
}

/// A pserver, a scheduler, or a trainer over its program's train feed, run to its end.
int runNode(const std::vector<std::string> &flags, const proto::Program &main,
            const proto::Program &startup) {
  runtime::NodeIo io;
  io.programs = programsOf(main, startup);
  NodeThread node(parseNodeFlags(flags), std::move(io));
  node.start();
  {
    auto lock = node.lockWithoutGil();
    node.waitUntil(lock, [&] { return node.ended(); });
  }
  return node.finish();
}

/// A trainer of a job whose steps the caller drives: started by the constructor, stepped by
/// run(), ended by finish(). The node's thread waits in its driver for each request.
class TrainerNode {
public:
  TrainerNode(const std::vector<std::string> &flags, const proto::Program &main,
              const proto::Program &startup) {
    runtime::NodeIo io;
    io.programs = programsOf(main, startup);
    io.drive = [this](runtime::TrainerSteps &steps) { return drive(steps); };
    node_ = std::make_unique<NodeThread>(parseNodeFlags(flags), std::move(io));
    node_->start();
    auto lock = node_->lockWithoutGil();
    node_->waitUntil(lock, [&] { return state_ == State::Ready || node_->ended(); });
    if (state_ != State::Ready) {
      lock.unlock();
      node_->finish();
      throw OarError("the trainer ended before its first step");
    }
  }

  /// One step: the feeds viewed into the trainer's scope, the step on the node's thread, copies
  /// of the fetches.
  py::list run(const py::dict &feed, const std::vector<std::string> &fetch) {
    auto lock = node_->lockWithoutGil();
    if (state_ != State::Ready)
      throw OarError("the trainer has ended (stop_worker, or a failed step); start another");
    const proto::Program &main = steps_->main();
    auto views = viewFeeds(main, feed);
    checkFetches(main, fetch);
    {
      py::gil_scoped_release noGil; // the node thread waits for this request: the scope is ours
      for (auto &[name, t] : views)
        steps_->scope().get(name) = std::move(t);
      views.clear();
    }
    state_ = State::Step;
    node_->changed.notify_all();
    node_->waitUntil(lock, [&] { return state_ != State::Step || node_->ended(); });
    if (state_ != State::Ready) { // the step failed: the node ends with its error
      node_->waitUntil(lock, [&] { return node_->ended(); });
      lock.unlock();
      node_->finish();
      throw OarError("the trainer's step failed");
    }
    std::vector<Tensor> fetched;
    {
      py::gil_scoped_release noGil;
      for (const std::string &name : fetch)
        fetched.push_back(unwrapNoGil(fetchCopy(steps_->scope(), name)));
    }
    py::list out;
    for (Tensor &t : fetched)
      out.append(arrayOver(std::move(t)));
    return out;
  }

  /// Ends the trainer as after its last batch (trainer 0 saving to `saveDir` if given, else to
  /// its --save), and waits for the node's end.
  void finish(const std::string &saveDir) {
    {
      auto lock = node_->lockWithoutGil();
      // a step another Python thread asked for ends first
      node_->waitUntil(lock, [&] { return state_ != State::Step || node_->ended(); });
      if (state_ == State::Ready) {
        saveDir_ = saveDir;
        state_ = State::Finish;
        node_->changed.notify_all();
      }
      node_->waitUntil(lock, [&] { return node_->ended(); });
    }
    node_->finish();
  }

  /// Stops the trainer where it is (the pservers hear it failed, and `why`) and waits for its
  /// end; no error. What a script that ends without stop_worker() gets.
  void abandon(const std::string &why) {
    auto lock = node_->lockWithoutGil();
    why_ = why;
    node_->stop = true;
    node_->changed.notify_all();
    {
      py::gil_scoped_release noGil;
      node_->changed.wait(lock, [&] { return node_->ended(); });
    }
    lock.unlock();
    try {
      node_->finish();
    } catch (const OarError &) {
    }
  }

  int64_t trainerId() const { return trainerId_; }
  proto::Program program() const { return main_; }

private:
  enum class State { Starting, Ready, Step, Finish, Ended };

  /// The node's side, on its thread: serves each step the caller asks for.
  llvm::Expected<std::string> drive(runtime::TrainerSteps &steps) {
    std::unique_lock<std::mutex> lock(node_->mutex);
    steps_ = &steps, trainerId_ = steps.trainerId(), main_ = steps.main();
    state_ = State::Ready;
    node_->changed.notify_all();
    for (;;) {
      node_->changed.wait(lock, [&] { return state_ != State::Ready || node_->stop; });
      if (state_ == State::Finish) {
        state_ = State::Ended;
        return saveDir_;
      }
      if (state_ != State::Step) { // stopped while waiting
        state_ = State::Ended;
        return makeError("stopped between two steps, before stop_worker(): {0}",
                         why_.empty() ? "Ctrl-C, or the script ended without it" : why_);
      }
      lock.unlock();
      llvm::Error err = steps.step();
      lock.lock();
      if (err) {
        state_ = State::Ended;
        node_->changed.notify_all();
        return std::move(err);
      }
      state_ = State::Ready;
      node_->changed.notify_all();
    }
  }

public:
  /// The node's thread uses the members below: it ends first.
  ~TrainerNode() { node_.reset(); }

private:
  static Tensor unwrapNoGil(llvm::Expected<Tensor> t) {
    if (!t) {
      py::gil_scoped_acquire gil;
      throwIfError(t.takeError());
    }
    return std::move(*t);
  }

  std::unique_ptr<NodeThread> node_;
  State state_ = State::Starting;
  runtime::TrainerSteps *steps_ = nullptr;
  int64_t trainerId_ = 0;
  proto::Program main_;
  std::string saveDir_;
  std::string why_; ///< why the script abandoned the trainer ("": not said)
};

} // namespace

void bindNodes(py::module_ &m) {
  m.def("place_node", &placeOf, py::arg("flags"),
        "where the environment's launch convention (PADDLE_*, TF_CONFIG, MS_*, DMLC_*, MPI, Slurm) "
        "and the node flags put this process: role, ids, endpoints");
  m.def("run_node", &runNode, py::arg("flags"), py::arg("main"), py::arg("startup"),
        "runs this process's node (a pserver, a scheduler, a trainer over the program's feed) "
        "over the single-machine programs to its end; oar.Error with the node's error");
  py::class_<TrainerNode>(m, "TrainerNode",
                          "a trainer of a job whose steps the caller's loop drives")
      .def(py::init<const std::vector<std::string> &, const proto::Program &,
                    const proto::Program &>(),
           py::arg("flags"), py::arg("main"), py::arg("startup"))
      .def("run", &TrainerNode::run, py::arg("feed"), py::arg("fetch_list"))
      .def("finish", &TrainerNode::finish, py::arg("save_dir") = "")
      .def("abandon", &TrainerNode::abandon, py::arg("why") = "")
      .def_property_readonly("trainer_id", &TrainerNode::trainerId)
      .def_property_readonly("program", &TrainerNode::program,
                             "the trainer's program, transpiled for this node");
}

} // namespace oar::python
