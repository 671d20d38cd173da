// The scheduler: registration, then heartbeats until every node has left or is gone.
#include "runtime/cluster/scheduler.h"

#include <map>
#include <optional>
#include <vector>

#include "executor/threads.h"
#include "runtime/cluster/scheduler_membership.h"
#include "runtime/cluster/scheduler_messages.h"
#include "runtime/transport/router_server.h"
#include "support/deadline.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

using Clock = std::chrono::steady_clock;

class Scheduler {
public:
  explicit Scheduler(const SchedulerOptions &opts) : opts_(opts), members_(opts) {}

  llvm::Error run() {
    RouterSpec spec;
    spec.socket.endpoint = opts_.endpoint, spec.socket.bind = opts_.bind;
    spec.socket.curve = opts_.curve;
    spec.socket.allowed = opts_.curve.allowed;
    if (opts_.curve.enabled()) // the pservers register with its own pair
      spec.socket.allowed.insert(opts_.curve.own->publicKey);
    spec.socket.risk = "join the job as a node", spec.socket.serving = "taking registrations on";
    spec.socket.held = opts_.heldPort;
    spec.socket.log = [this](const std::string &line) { log(line); };
    spec.name = "this scheduler";
    spec.refusal = [](const std::string &why) { return errorMessage(why).SerializeAsString(); };
    spec.maxMessageBytes = kMaxSchedMessage;
    spec.linger = std::chrono::milliseconds(1000);
    spec.mandatoryRouting = true;
    auto server = RouterServer::open(std::move(spec));
    if (!server)
      return makeError("scheduler {0}: {1}", opts_.endpoint, llvm::toString(server.takeError()));
    server_ = std::move(*server);
    if (opts_.curve.enabled())
      log(llvm::formatv("CURVE: accepting the pservers' key and {0} trainer key(s)",
                        opts_.curve.allowed.size())
              .str());
    log(llvm::formatv("waiting for {0} pserver(s) and {1} trainer(s) to register (up to {2} s)",
                      opts_.pservers, opts_.trainers, opts_.registerTimeout.count() / 1000.0)
            .str());
    if (llvm::Error err = registerAll())
      return err;
    return follow();
  }

private:
  void log(const std::string &line) {
    if (opts_.log)
      opts_.log("scheduler " + opts_.endpoint + ": " + line);
  }

  void send(const std::string &identity, const proto::SchedMsg &msg) {
    // A peer that went away (mandatory routing) or stopped reading: heartbeats will tell.
    llvm::consumeError(server_->sendBytes(identity, msg.SerializeAsString()));
  }

  void refuse(const Incoming &from, const std::string &why) {
    server_->refuse(from, "refused a message: " + why, why);
  }

  /// Receives one message within `timeout`: its sender and body. A stranger's is refused by
  /// the server, and one that is not a scheduler message here (SCHED_UNSET: ignored by the
  /// callers).
  std::optional<std::pair<Incoming, proto::SchedMsg>> receive(std::chrono::milliseconds timeout) {
    auto got = server_->receive(timeout);
    if (!got) { // the loops end on their deadline, or on shouldStop
      llvm::consumeError(got.takeError());
      return std::nullopt;
    }
    if (!got->message)
      return std::nullopt;
    Incoming &in = *got->message;
    senderKey_ = in.curveKey();
    std::optional<proto::SchedMsg> msg;
    if (std::optional<llvm::StringRef> body = in.frames.single())
      msg = parseSchedMsg(body->data(), body->size());
    if (!msg) {
      refuse(in, "not a scheduler message of this oar version");
      msg = proto::SchedMsg();
    }
    return std::make_pair(std::move(in), std::move(*msg));
  }

  llvm::Error registerAll() {
    Deadline deadline(opts_.registerTimeout);
    while (!members_.full()) {
      if (opts_.shouldStop && opts_.shouldStop())
        return makeError("scheduler {0}: stopped by signal while nodes registered", opts_.endpoint);
      if (deadline.passed())
        return failRegistration();
      auto got = receive(std::chrono::milliseconds(200));
      if (!got || got->second.kind() == proto::SCHED_UNSET)
        continue;
      auto &[from, msg] = *got;
      if (msg.kind() == proto::HEARTBEAT)
        continue; // a node of an earlier attempt; it is not part of this job yet
      if (msg.kind() != proto::REGISTER) {
        refuse(from, "only REGISTER is taken while nodes register");
        continue;
      }
      if (std::string why = members_.registrationRefusal(from.peer, msg, senderKey_);
          !why.empty()) {
        refuse(from, why);
        // A node of this launch (it passed the key or user check and gave the launch id)
        // started for another size: the job cannot assemble, so the registered nodes hear it
        // now, not at the timeout.
        if (why == members_.countsRefusal(msg))
          return failRegistration(from.address() + " registered as a " + msg.role() + ": " + why);
        continue;
      }
      members_.add(from.peer, msg);
      log(llvm::formatv("{0} registered from {1}{2}", msg.role(), from.address(),
                        msg.endpoint().empty() ? "" : " serving " + msg.endpoint())
              .str());
    }
    members_.assignIds();
    for (Member &m : members_.members()) {
      sendAssignment(m);
      m.lastSeen = Clock::now();
    }
    std::vector<std::string> pservers = members_.pserverEndpoints(),
                             trainers = members_.trainerEndpoints();
    log("every node registered; pservers " +
        (pservers.empty() ? std::string("none") : llvm::join(pservers, ",")) +
        (trainers.empty() ? "" : "; trainers " + llvm::join(trainers, ",")));
    return llvm::Error::success();
  }

  /// Tells `m` its place: its id, the job's counts and every pserver's endpoint.
  void sendAssignment(const Member &m) {
    Assignment a;
    a.role = m.role, a.id = m.id, a.jobId = members_.jobId();
    a.pservers = opts_.pservers, a.trainers = opts_.trainers;
    a.heartbeatTimeoutMs = opts_.settings.heartbeatTimeout.count();
    a.pserverEndpoints = members_.pserverEndpoints();
    a.trainerEndpoints = members_.trainerEndpoints();
    send(m.identity, assignMessage(a));
  }

  /// Ends registration: every registered node hears `why` (default: who came, in the time).
  llvm::Error failRegistration(std::string why = "") {
    if (why.empty())
      why = llvm::formatv("{0} registered in {1:f1} s", members_.registeredSoFar(),
                          opts_.registerTimeout.count() / 1000.0)
                .str();
    for (const Member &m : members_.members())
      send(m.identity, errorMessage(why));
    return makeError("scheduler {0}: {1}", opts_.endpoint, why);
  }

  /// Elastic: a trainer registering while the job runs gets the id after the highest given.
  void admitLate(const Incoming &from, const proto::SchedMsg &msg) {
    if (std::string why = members_.lateRefusal(msg, senderKey_); !why.empty())
      return refuse(from, why);
    Member &m = members_.addLate(from.peer);
    m.lastSeen = Clock::now();
    sendAssignment(m);
    log(llvm::formatv("trainer {0} joined the running job from {1}", m.id, from.address()).str());
  }

  /// Tells every node still running that `gone` is gone, and why.
  void reportGone(Member &gone, const std::string &why) {
    gone.gone = true;
    if (firstFailure_.empty())
      firstFailure_ =
          gone.name() + (gone.endpoint.empty() ? "" : " (" + gone.endpoint + ")") + ": " + why;
    log(gone.name() + " is gone: " + why);
    for (const Member &m : members_.members())
      if (!m.left && !m.gone)
        send(m.identity, nodeGoneMessage(gone.role, gone.id, gone.endpoint, why));
  }

  /// One message of a node while the job runs: a heartbeat, a leave, or a late registration.
  void take(const Incoming &from, const proto::SchedMsg &msg) {
    Member *m = members_.memberOf(from.peer);
    if (!m) {
      if (msg.kind() == proto::REGISTER && opts_.elastic && msg.role() == roleName(Role::Trainer))
        admitLate(from, msg);
      else if (msg.kind() != proto::SCHED_UNSET)
        refuse(from, opts_.elastic ? "the job runs: only trainers may join it"
                                   : "the job is complete: every node has registered (a "
                                     "scheduler started with --elastic takes trainers that "
                                     "join later)");
    } else if (msg.kind() == proto::HEARTBEAT) {
      m->lastSeen = Clock::now();
      send(from.peer, schedMessage(proto::HEARTBEAT)); // the sign that this scheduler runs
    } else if (msg.kind() == proto::LEAVE && !m->gone && !m->left) {
      if (msg.error().empty()) {
        m->left = true;
        log(m->name() + " finished");
      } else {
        reportGone(*m, "it failed: " + msg.error());
      }
    }
  }

  llvm::Error follow() {
    auto running = [&] {
      return llvm::any_of(members_.members(), [](const Member &m) { return !m.left && !m.gone; });
    };
    while (running()) {
      if (opts_.shouldStop && opts_.shouldStop())
        return makeError("scheduler {0}: stopped by signal", opts_.endpoint);
      if (auto got = receive(std::chrono::milliseconds(200)))
        take(got->first, got->second);
      auto now = Clock::now();
      for (Member &m : members_.members())
        if (!m.left && !m.gone && now - m.lastSeen > opts_.settings.heartbeatTimeout)
          reportGone(m, llvm::formatv("no heartbeat for {0:f1} s (killed, or its host is down)",
                                      std::chrono::duration<double>(now - m.lastSeen).count())
                            .str());
    }
    if (!firstFailure_.empty())
      return makeError("scheduler {0}: the job failed; first {1}", opts_.endpoint, firstFailure_);
    log("every node finished");
    return llvm::Error::success();
  }

  const SchedulerOptions &opts_;
  SchedulerMembership members_;
  std::unique_ptr<RouterServer> server_;
  std::string firstFailure_;
  /// The CURVE key of the last message received ("" without keys).
  std::string senderKey_;
};

} // namespace

llvm::Error runScheduler(const SchedulerOptions &opts) {
  // No pserver: a collective job's trainers, which learn each other's endpoints here.
  if (opts.pservers < 0 || opts.trainers < 1)
    return makeError("scheduler {0}: needs at least one trainer and no fewer than 0 pservers (got "
                     "{1} and {2}; --pserver-count, --trainers)",
                     opts.endpoint, opts.pservers, opts.trainers);
  if (opts.elastic && opts.settings.maxTrainers < opts.trainers)
    return makeError("scheduler {0}: --max-trainers {1} is under the job's {2} trainers",
                     opts.endpoint, opts.settings.maxTrainers, opts.trainers);
  // Nodes beat every second: under two beats, one late beat would count as a lost node.
  if (opts.settings.heartbeatTimeout < kMinHeartbeatTimeout)
    return makeError("scheduler {0}: --heartbeat-timeout-ms {1} is under {2} (nodes send a "
                     "heartbeat every {3} ms)",
                     opts.endpoint, opts.settings.heartbeatTimeout.count(),
                     kMinHeartbeatTimeout.count(), kHeartbeatEvery.count());
  return Scheduler(opts).run();
}

} // namespace oar::runtime
