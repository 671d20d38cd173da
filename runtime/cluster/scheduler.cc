// The scheduler: registration, then heartbeats until every node has left or is gone.
#include "runtime/cluster/scheduler.h"

#include <map>
#include <optional>
#include <vector>

#include "executor/threads.h"
#include "runtime/cluster/scheduler_membership.h"
#include "runtime/security/peer_identity.h"
#include "runtime/security/zap_handler.h"
#include "runtime/transport/server_socket.h"
#include "runtime/wire/protocol.h"
#include "support/deadline.h"
#include "support/error.h"
#include "support/log_limiter.h"
#include "zmq.hpp"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

using Clock = std::chrono::steady_clock;

class Scheduler {
public:
  explicit Scheduler(const SchedulerOptions &opts) : opts_(opts), members_(opts) {}

  llvm::Error run() {
    try {
      socket_.set(zmq::sockopt::maxmsgsize, kMaxSchedMessage);
      socket_.set(zmq::sockopt::linger, 1000);
      socket_.set(zmq::sockopt::router_mandatory, true);
    } catch (const zmq::error_t &e) {
      return makeError("scheduler {0}: cannot set its socket's options: {1}", opts_.endpoint,
                       e.what());
    }
    ServerSocketSpec spec;
    spec.endpoint = opts_.endpoint, spec.bind = opts_.bind, spec.curve = opts_.curve;
    spec.allowed = opts_.curve.allowed;
    if (opts_.curve.enabled()) // the pservers register with its own pair
      spec.allowed.insert(opts_.curve.own->publicKey);
    spec.risk = "join the job as a node", spec.serving = "taking registrations on";
    spec.held = opts_.heldPort;
    spec.log = [this](const std::string &line) { log(line); };
    auto serving = serveOn(context_, socket_, std::move(spec));
    if (!serving)
      return makeError("scheduler {0}: {1}", opts_.endpoint, llvm::toString(serving.takeError()));
    if (opts_.curve.enabled())
      log(llvm::formatv("CURVE: accepting the pservers' key and {0} trainer key(s)",
                        opts_.curve.allowed.size())
              .str());
    zap_ = std::move(serving->zap);
    ownUserOnly_ = serving->ownUserOnly;
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
    std::string bytes = msg.SerializeAsString();
    try {
      socket_.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      socket_.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
    } catch (const zmq::error_t &) {
      // A peer that went away (router_mandatory) or stopped reading: heartbeats will tell.
    }
  }

  void refuse(const std::string &identity, const std::string &why, const std::string &from) {
    int64_t held = 0;
    if (limiter_.allow(from, held))
      log("refused a registration from " + from + ": " + why +
          (held ? llvm::formatv(" ({0} more lines from it held back)", held).str() : ""));
    proto::SchedMsg msg;
    msg.set_version(kProtocolVersion);
    msg.set_kind(proto::SCHED_ERROR);
    msg.set_error(why);
    send(identity, msg);
  }

  /// Receives one message within `timeout`: its routing id, body and the peer's address.
  std::optional<proto::SchedMsg> receive(std::string &identity, std::string &from,
                                         std::chrono::milliseconds timeout) {
    std::optional<std::vector<zmq::message_t>> frames;
    try {
      frames = receiveFrames(socket_, timeout);
    } catch (const zmq::error_t &) { // EINTR: a signal; the loops look at shouldStop
      return std::nullopt;
    }
    if (!frames)
      return std::nullopt;
    identity.assign(static_cast<const char *>((*frames)[0].data()), (*frames)[0].size());
    from = peerAddress(frames->back());
    senderKey_ = peerCurveKey(frames->back());
    if (ownUserOnly_)
      if (std::string why = strangerRefusal(frames->back(), "this scheduler"); !why.empty()) {
        refuse(identity, why, from);
        return proto::SchedMsg(); // SCHED_UNSET: ignored by the callers
      }
    std::optional<proto::SchedMsg> msg;
    if (frames->size() == 2)
      msg = parseSchedMsg((*frames)[1].data(), (*frames)[1].size());
    if (!msg) {
      refuse(identity, "not a scheduler message of this oar version", from);
      return proto::SchedMsg(); // SCHED_UNSET: ignored by the callers
    }
    return msg;
  }

  llvm::Error registerAll() {
    Deadline deadline(opts_.registerTimeout);
    while (!members_.full()) {
      if (opts_.shouldStop && opts_.shouldStop())
        return makeError("scheduler {0}: stopped by signal while nodes registered", opts_.endpoint);
      if (deadline.passed())
        return failRegistration();
      std::string identity, from;
      auto msg = receive(identity, from, std::chrono::milliseconds(200));
      if (!msg || msg->kind() == proto::SCHED_UNSET)
        continue;
      if (msg->kind() == proto::HEARTBEAT)
        continue; // a node of an earlier attempt; it is not part of this job yet
      if (msg->kind() != proto::REGISTER) {
        refuse(identity, "only REGISTER is taken while nodes register", from);
        continue;
      }
      if (std::string why = members_.registrationRefusal(identity, *msg, senderKey_);
          !why.empty()) {
        refuse(identity, why, from);
        // A node of this launch (it passed the key or user check and gave the launch id)
        // started for another size: the job cannot assemble, so the registered nodes hear it
        // now, not at the timeout.
        if (why == members_.countsRefusal(*msg))
          return failRegistration(from + " registered as a " + msg->role() + ": " + why);
        continue;
      }
      members_.add(identity, *msg);
      log(llvm::formatv("{0} registered from {1}{2}", msg->role(), from,
                        msg->endpoint().empty() ? "" : " serving " + msg->endpoint())
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
    proto::SchedMsg msg;
    msg.set_version(kProtocolVersion);
    msg.set_kind(proto::ASSIGN);
    msg.set_role(roleName(m.role).str());
    msg.set_id(m.id);
    msg.set_job_id(members_.jobId());
    msg.set_pservers_count(opts_.pservers);
    msg.set_trainers_count(opts_.trainers);
    msg.set_heartbeat_timeout_ms(opts_.heartbeatTimeout.count());
    for (const std::string &ep : members_.pserverEndpoints())
      msg.add_pservers(ep);
    for (const std::string &ep : members_.trainerEndpoints())
      msg.add_trainers(ep);
    send(m.identity, msg);
  }

  /// Ends registration: every registered node hears `why` (default: who came, in the time).
  llvm::Error failRegistration(std::string why = "") {
    if (why.empty())
      why = llvm::formatv("{0} registered in {1:f1} s", members_.registeredSoFar(),
                          opts_.registerTimeout.count() / 1000.0)
                .str();
    for (const Member &m : members_.members()) {
      proto::SchedMsg msg;
      msg.set_version(kProtocolVersion);
      msg.set_kind(proto::SCHED_ERROR);
      msg.set_error(why);
      send(m.identity, msg);
    }
    return makeError("scheduler {0}: {1}", opts_.endpoint, why);
  }

  /// Elastic: a trainer registering while the job runs gets the id after the highest given.
  void admitLate(const std::string &identity, const proto::SchedMsg &msg, const std::string &from) {
    if (std::string why = members_.lateRefusal(msg, senderKey_); !why.empty())
      return refuse(identity, why, from);
    Member &m = members_.addLate(identity);
    m.lastSeen = Clock::now();
    sendAssignment(m);
    log(llvm::formatv("trainer {0} joined the running job from {1}", m.id, from).str());
  }

  /// Tells every node still running that `gone` is gone, and why.
  void reportGone(Member &gone, const std::string &why) {
    gone.gone = true;
    if (firstFailure_.empty())
      firstFailure_ =
          gone.name() + (gone.endpoint.empty() ? "" : " (" + gone.endpoint + ")") + ": " + why;
    log(gone.name() + " is gone: " + why);
    for (const Member &m : members_.members()) {
      if (m.left || m.gone)
        continue;
      proto::SchedMsg msg;
      msg.set_version(kProtocolVersion);
      msg.set_kind(proto::NODE_GONE);
      msg.set_role(roleName(gone.role).str());
      msg.set_id(gone.id);
      msg.set_endpoint(gone.endpoint);
      msg.set_error(why);
      send(m.identity, msg);
    }
  }

  llvm::Error follow() {
    auto running = [&] {
      return llvm::any_of(members_.members(), [](const Member &m) { return !m.left && !m.gone; });
    };
    while (running()) {
      if (opts_.shouldStop && opts_.shouldStop())
        return makeError("scheduler {0}: stopped by signal", opts_.endpoint);
      std::string identity, from;
      if (auto msg = receive(identity, from, std::chrono::milliseconds(200))) {
        Member *m = members_.memberOf(identity);
        if (!m) {
          if (msg->kind() == proto::REGISTER && opts_.elastic &&
              msg->role() == roleName(Role::Trainer))
            admitLate(identity, *msg, from);
          else if (msg->kind() != proto::SCHED_UNSET)
            refuse(identity,
                   opts_.elastic ? "the job runs: only trainers may join it"
                                 : "the job is complete: every node has registered (a scheduler "
                                   "started with --elastic takes trainers that join later)",
                   from);
        } else if (msg->kind() == proto::HEARTBEAT) {
          m->lastSeen = Clock::now();
          proto::SchedMsg answer; // the node's sign that this scheduler still runs
          answer.set_version(kProtocolVersion);
          answer.set_kind(proto::HEARTBEAT);
          send(identity, answer);
        } else if (msg->kind() == proto::LEAVE && !m->gone && !m->left) {
          if (msg->error().empty()) {
            m->left = true;
            log(m->name() + " finished");
          } else {
            reportGone(*m, "it failed: " + msg->error());
          }
        }
      }
      auto now = Clock::now();
      for (Member &m : members_.members())
        if (!m.left && !m.gone && now - m.lastSeen > opts_.heartbeatTimeout)
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
  zmq::context_t context_{1};
  std::unique_ptr<ZapHandler> zap_; ///< outlives the socket: destroyed after it
  zmq::socket_t socket_{context_, zmq::socket_type::router};
  LogLimiter limiter_;
  std::string firstFailure_;
  /// Keyless on loopback: only this user's processes, over the local socket (strangerRefusal).
  bool ownUserOnly_ = false;
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
  if (opts.elastic && opts.maxTrainers < opts.trainers)
    return makeError("scheduler {0}: --max-trainers {1} is under the job's {2} trainers",
                     opts.endpoint, opts.maxTrainers, opts.trainers);
  // Nodes beat every second: under two beats, one late beat would count as a lost node.
  if (opts.heartbeatTimeout < kMinHeartbeatTimeout)
    return makeError("scheduler {0}: --heartbeat-timeout-ms {1} is under {2} (nodes send a "
                     "heartbeat every {3} ms)",
                     opts.endpoint, opts.heartbeatTimeout.count(), kMinHeartbeatTimeout.count(),
                     kHeartbeatEvery.count());
  return Scheduler(opts).run();
}

} // namespace oar::runtime
