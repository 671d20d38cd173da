// The scheduler: registration, then heartbeats until every node has left or is gone.
#include "runtime/scheduler.h"

#include <map>
#include <optional>
#include <vector>

#include "executor/threads.h"
#include "ir/error.h"
#include "runtime/bind_policy.h"
#include "runtime/log_limiter.h"
#include "runtime/peer_identity.h"
#include "runtime/protocol.h"
#include "runtime/scheduler.pb.h"
#include "runtime/zap_handler.h"
#include "zmq.hpp"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

using Clock = std::chrono::steady_clock;

/// A scheduler message is small: a registration holds a few names.
constexpr int64_t kMaxSchedMessage = 64 * 1024;

/// What a peer names goes into log lines: printable text only.
bool printable(llvm::StringRef s) { return llvm::all_of(s, llvm::isPrint); }

struct Member {
  std::string identity; ///< ZeroMQ routing id of its connection
  std::string role;     ///< "pserver" | "trainer"
  int64_t askedId = -1, id = -1;
  std::string endpoint;
  Clock::time_point lastSeen;
  bool left = false, gone = false;
  std::string name() const { return llvm::formatv("{0} {1}", role, id).str(); }
};

class Scheduler {
public:
  explicit Scheduler(const SchedulerOptions &opts) : opts_(opts), jobId_(opts.jobId) {}

  llvm::Error run() {
    std::string bind =
        chooseBindAddress(opts_.endpoint, opts_.bind, opts_.curve.enabled(),
                          "join the job as a node", [this](const std::string &line) { log(line); });
    if (opts_.curve.enabled()) { // the handler first: without one libzmq accepts any key
      std::set<std::string> allowed = opts_.curve.allowed;
      allowed.insert(opts_.curve.own->publicKey); // the pservers' own pair
      auto handler = ZapHandler::start(context_, allowed, [this](const std::string &l) { log(l); });
      if (!handler)
        return makeError("scheduler {0}: {1}", opts_.endpoint, llvm::toString(handler.takeError()));
      zap_ = std::move(*handler);
      socket_.set(zmq::sockopt::curve_server, true);
      socket_.set(zmq::sockopt::curve_secretkey, opts_.curve.own->secretKey);
      socket_.set(zmq::sockopt::zap_domain, "oar");
      log(llvm::formatv("CURVE: accepting the pservers' key and {0} trainer key(s)",
                        opts_.curve.allowed.size())
              .str());
    }
    try {
      socket_.set(zmq::sockopt::maxmsgsize, kMaxSchedMessage);
      socket_.set(zmq::sockopt::linger, 1000);
      socket_.set(zmq::sockopt::router_mandatory, true);
      socket_.bind(zmqAddress(bind));
    } catch (const zmq::error_t &e) {
      return makeError("scheduler {0}: cannot bind {1}: {2}", opts_.endpoint, bind, e.what());
    }
    // Nodes of this host connect over IPC (localIpcAddress), as to a pserver: without keys the
    // kernel names a local peer's user, so only ours may register (no TCP peer: any user of the
    // host could be one).
    if (std::optional<std::string> ipc = localIpcAddress(opts_.endpoint)) {
      ownUserOnly_ = !opts_.curve.enabled();
      try {
        socket_.bind(*ipc);
      } catch (const zmq::error_t &e) {
        return makeError("scheduler {0}: cannot bind {1}: {2}; another process holds the name",
                         opts_.endpoint, *ipc, e.what());
      }
    }
    if (!ownUserOnly_ && !opts_.curve.enabled() && isLoopbackEndpoint(bind))
      log("warning: taking registrations on " + bind +
          " over TCP without CURVE keys: a process of any user on this host can register as a "
          "node (unset OAR_LOCAL_TCP to take only this user's processes, or give keys)");
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
    proto::SchedMsg msg;
    if (frames->size() != 2 || !msg.ParseFromArray((*frames)[1].data(), (*frames)[1].size()) ||
        msg.version() != kProtocolVersion) {
      refuse(identity, "not a scheduler message of this oar version", from);
      return proto::SchedMsg(); // SCHED_UNSET: ignored by the callers
    }
    return msg;
  }

  /// With CURVE keys, why the sender of the last message (senderKey_) cannot take `role`, or "":
  /// a pserver holds the pservers' key pair, a trainer a key on the trainers' list.
  std::string keyRefusal(const std::string &role) const {
    if (!opts_.curve.enabled())
      return "";
    if (role == "pserver" && senderKey_ != opts_.curve.own->publicKey)
      return "a pserver must authenticate with the pservers' key, and this peer's key is not it";
    if (role == "trainer" && !opts_.curve.allowed.count(senderKey_))
      return "a trainer must authenticate with a trainer's key, and this peer's key is not one";
    return "";
  }

  /// Why `msg` cannot join, or "" when it can. Nothing of a refused node is kept.
  std::string checkRegistration(const proto::SchedMsg &msg) {
    const std::string &role = msg.role();
    if (role != "pserver" && role != "trainer")
      return "a role that is neither pserver nor trainer";
    if (std::string why = keyRefusal(role); !why.empty())
      return why;
    if (!printable(msg.job_id()) || !printable(msg.endpoint()))
      return "a launch id or endpoint that is not printable text";
    if (msg.pservers_count() != opts_.pservers || msg.trainers_count() != opts_.trainers)
      return llvm::formatv("this node was started for {0} pserver(s) and {1} trainer(s), the "
                           "scheduler for {2} and {3}",
                           msg.pservers_count(), msg.trainers_count(), opts_.pservers,
                           opts_.trainers)
          .str();
    // Without a launch id of its own, the scheduler takes the first accepted node's.
    if (msg.job_id() != jobId_ && !(jobId_.empty() && members_.empty()))
      return llvm::formatv("this node belongs to launch \"{0}\", the scheduler to another",
                           msg.job_id())
          .str();
    int64_t wanted = role == "pserver" ? opts_.pservers : opts_.trainers;
    int64_t have = llvm::count_if(members_, [&](const Member &m) { return m.role == role; });
    if (have >= wanted)
      return llvm::formatv("the job has all its {0} {1}(s) already", wanted, role).str();
    if (msg.id() < -1 || msg.id() >= wanted)
      return llvm::formatv("{0} id {1} is out of range (the job has {2})", role, msg.id(), wanted)
          .str();
    for (const Member &m : members_)
      if (m.role == role && msg.id() >= 0 && m.askedId == msg.id())
        return llvm::formatv("{0} {1} has registered already", role, msg.id()).str();
    if (role == "pserver") {
      auto [host, port] = llvm::StringRef(msg.endpoint()).rsplit(':');
      unsigned number = 0;
      if (host.empty() || port.getAsInteger(10, number) || number == 0 || number > 65535)
        return "a pserver must say the endpoint it serves, as host:port";
    }
    for (const Member &m : members_)
      if (m.role == "pserver" && !msg.endpoint().empty() && m.endpoint == msg.endpoint())
        return "endpoint " + msg.endpoint() + " is another pserver's";
    return "";
  }

  llvm::Error registerAll() {
    auto deadline = Clock::now() + opts_.registerTimeout;
    while (static_cast<int64_t>(members_.size()) < opts_.pservers + opts_.trainers) {
      if (opts_.shouldStop && opts_.shouldStop())
        return makeError("scheduler {0}: stopped by signal while nodes registered", opts_.endpoint);
      if (Clock::now() > deadline)
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
      if (std::string why = checkRegistration(*msg); !why.empty()) {
        refuse(identity, why, from);
        continue;
      }
      if (members_.empty() && jobId_.empty())
        jobId_ = msg->job_id();
      Member m;
      m.identity = identity;
      m.role = msg->role();
      m.askedId = msg->id();
      m.endpoint = msg->endpoint();
      members_.push_back(m);
      log(llvm::formatv("{0} registered from {1}{2}", m.role, from,
                        m.endpoint.empty() ? "" : " serving " + m.endpoint)
              .str());
    }
    assignIds();
    for (Member &m : members_) {
      sendAssignment(m);
      m.lastSeen = Clock::now();
    }
    log("every node registered; pservers " + llvm::join(pserverEndpoints(), ","));
    return llvm::Error::success();
  }

  /// Every pserver's endpoint, by id.
  std::vector<std::string> pserverEndpoints() const {
    std::vector<std::string> endpoints(opts_.pservers);
    for (const Member &m : members_)
      if (m.role == "pserver")
        endpoints[m.id] = m.endpoint;
    return endpoints;
  }

  /// Tells `m` its place: its id, the job's counts and every pserver's endpoint.
  void sendAssignment(const Member &m) {
    proto::SchedMsg msg;
    msg.set_version(kProtocolVersion);
    msg.set_kind(proto::ASSIGN);
    msg.set_role(m.role);
    msg.set_id(m.id);
    msg.set_job_id(jobId_);
    msg.set_pservers_count(opts_.pservers);
    msg.set_trainers_count(opts_.trainers);
    for (const std::string &ep : pserverEndpoints())
      msg.add_pservers(ep);
    send(m.identity, msg);
  }

  /// Ids asked for are given; the others get the lowest free ids in order of arrival.
  void assignIds() {
    for (const char *role : {"pserver", "trainer"}) {
      std::vector<bool> taken(role == llvm::StringRef("pserver") ? opts_.pservers : opts_.trainers);
      for (Member &m : members_)
        if (m.role == role && m.askedId >= 0)
          taken[m.id = m.askedId] = true;
      size_t next = 0;
      for (Member &m : members_)
        if (m.role == role && m.askedId < 0) {
          while (taken[next])
            ++next;
          taken[next] = true;
          m.id = static_cast<int64_t>(next);
        }
    }
  }

  llvm::Error failRegistration() {
    int64_t ps = llvm::count_if(members_, [](const Member &m) { return m.role == "pserver"; });
    std::string why = llvm::formatv("only {0} of {1} pserver(s) and {2} of {3} trainer(s) "
                                    "registered in {4:f1} s",
                                    ps, opts_.pservers, members_.size() - ps, opts_.trainers,
                                    opts_.registerTimeout.count() / 1000.0)
                          .str();
    for (const Member &m : members_) {
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
    std::string why = keyRefusal("trainer");
    if (why.empty() &&
        (msg.pservers_count() != opts_.pservers || msg.trainers_count() != opts_.trainers))
      why = "this node was started for other counts than the job's";
    if (why.empty() && (!printable(msg.job_id()) || msg.job_id() != jobId_))
      why = "this node belongs to another launch";
    if (!why.empty())
      return refuse(identity, why, from);
    Member m;
    m.identity = identity;
    m.role = "trainer";
    for (const Member &other : members_)
      if (other.role == "trainer")
        m.id = std::max(m.id, other.id + 1);
    m.lastSeen = Clock::now();
    members_.push_back(m);
    sendAssignment(m);
    log(llvm::formatv("trainer {0} joined the running job from {1}", m.id, from).str());
  }

  Member *memberOf(const std::string &identity) {
    for (Member &m : members_)
      if (m.identity == identity)
        return &m;
    return nullptr;
  }

  /// Tells every node still running that `gone` is gone, and why.
  void reportGone(Member &gone, const std::string &why) {
    gone.gone = true;
    if (firstFailure_.empty())
      firstFailure_ =
          gone.name() + (gone.endpoint.empty() ? "" : " (" + gone.endpoint + ")") + ": " + why;
    log(gone.name() + " is gone: " + why);
    for (const Member &m : members_) {
      if (m.left || m.gone)
        continue;
      proto::SchedMsg msg;
      msg.set_version(kProtocolVersion);
      msg.set_kind(proto::NODE_GONE);
      msg.set_role(gone.role);
      msg.set_id(gone.id);
      msg.set_endpoint(gone.endpoint);
      msg.set_error(why);
      send(m.identity, msg);
    }
  }

  llvm::Error follow() {
    auto running = [&] {
      return llvm::any_of(members_, [](const Member &m) { return !m.left && !m.gone; });
    };
    while (running()) {
      if (opts_.shouldStop && opts_.shouldStop())
        return makeError("scheduler {0}: stopped by signal", opts_.endpoint);
      std::string identity, from;
      if (auto msg = receive(identity, from, std::chrono::milliseconds(200))) {
        Member *m = memberOf(identity);
        if (!m) {
          if (msg->kind() == proto::REGISTER && opts_.elastic && msg->role() == "trainer")
            admitLate(identity, *msg, from);
          else if (msg->kind() != proto::SCHED_UNSET)
            refuse(identity,
                   opts_.elastic ? "the job runs: only trainers may join it"
                                 : "the job is complete: every node has registered (a scheduler "
                                   "started with --elastic takes trainers that join later)",
                   from);
        } else if (msg->kind() == proto::HEARTBEAT) {
          m->lastSeen = Clock::now();
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
      for (Member &m : members_)
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
  std::string jobId_;
  zmq::context_t context_{1};
  std::unique_ptr<ZapHandler> zap_; ///< outlives the socket: destroyed after it
  zmq::socket_t socket_{context_, zmq::socket_type::router};
  std::vector<Member> members_;
  LogLimiter limiter_;
  std::string firstFailure_;
  /// Keyless on loopback: only this user's processes, over the local socket (strangerRefusal).
  bool ownUserOnly_ = false;
  /// The CURVE key of the last message received ("" without keys).
  std::string senderKey_;
};

} // namespace

llvm::Error runScheduler(const SchedulerOptions &opts) {
  if (opts.pservers < 1 || opts.trainers < 1)
    return makeError("scheduler {0}: needs at least one pserver and one trainer (got {1} and {2}; "
                     "--pserver-count, --trainers)",
                     opts.endpoint, opts.pservers, opts.trainers);
  // Nodes beat every second: under two beats, one late beat would count as a lost node.
  if (opts.heartbeatTimeout < std::chrono::milliseconds(2000))
    return makeError("scheduler {0}: --heartbeat-timeout-ms {1} is under 2000 (nodes send a "
                     "heartbeat every 1000 ms)",
                     opts.endpoint, opts.heartbeatTimeout.count());
  return Scheduler(opts).run();
}

} // namespace oar::runtime
