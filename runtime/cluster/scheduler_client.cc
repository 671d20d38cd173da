// Registering with the scheduler and keeping in touch with it.
#include "runtime/cluster/scheduler_client.h"

#include <mutex>

#include "executor/threads.h"
#include "runtime/cluster/cluster.h"
#include "runtime/cluster/scheduler_messages.h"
#include "runtime/transport/channel.h"
#include "runtime/transport/held_port.h"
#include "runtime/wire/protocol.h"
#include "support/endpoint.h"
#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

struct SchedulerLink::Impl {
  std::string scheduler;
  std::function<void(const std::string &)> log;
  ClientContext context;
  std::unique_ptr<Channel> channel;
  std::mutex sending; ///< leave() and the heartbeat thread share the channel
  mutable std::mutex goneMutex;
  std::map<int64_t, std::string> goneTrainers;

  void sendMessage(const proto::SchedMsg &msg) {
    std::string bytes = msg.SerializeAsString();
    std::lock_guard<std::mutex> lock(sending);
    // Without waiting: a scheduler that is gone or not reading notices this node by its silence.
    llvm::consumeError(channel->send(encodeBytes(bytes), std::chrono::milliseconds(0)));
  }

  void say(const std::string &line) const {
    if (log)
      log(line);
  }

  /// A NODE_GONE: a trainer gone is kept for the pserver; every one is logged.
  void noteGone(const proto::SchedMsg &note) {
    if (note.role() == roleName(Role::Trainer)) {
      std::lock_guard<std::mutex> lock(goneMutex);
      goneTrainers[note.id()] = note.error();
    }
    say(llvm::formatv("scheduler {0}: {1} {2}{3} is gone: {4}", scheduler, note.role(), note.id(),
                      note.endpoint().empty() ? "" : " (" + note.endpoint() + ")", note.error())
            .str());
  }

  /// The ASSIGN that answers `request`'s registration, within its timeout.
  llvm::Expected<proto::SchedMsg> awaitAssignment(const SchedulerRequest &request) {
    auto start = std::chrono::steady_clock::now();
    for (;;) {
      if (request.shouldStop && request.shouldStop())
        return makeError("stopped by signal while waiting for the scheduler {0}",
                         request.scheduler);
      auto waited = std::chrono::steady_clock::now() - start;
      if (waited > request.timeout)
        return makeError("scheduler {0}: no assignment in {1:f1} s (is it running, and have the "
                         "other nodes started?)",
                         request.scheduler, std::chrono::duration<double>(waited).count());
      auto msg = receive(std::chrono::milliseconds(200));
      if (!msg)
        continue;
      if (msg->kind() == proto::SCHED_ERROR)
        return makeError("scheduler {0} refused this {1}: {2}", request.scheduler,
                         roleName(request.role), msg->error());
      if (msg->kind() != proto::ASSIGN)
        continue;
      if (msg->role() != roleName(request.role) || msg->id() < 0 ||
          msg->pservers_size() != request.pservers || msg->trainers_count() != request.trainers)
        return makeError("scheduler {0}: an assignment that does not fit this {1} ({2} {3} of {4} "
                         "pservers and {5} trainers)",
                         request.scheduler, roleName(request.role), msg->role(), msg->id(),
                         msg->pservers_size(), msg->trainers_count());
      return *msg;
    }
  }

  /// One scheduler message, waiting at most `timeout`.
  std::optional<proto::SchedMsg> receive(std::chrono::milliseconds timeout) {
    std::lock_guard<std::mutex> lock(sending);
    auto got = channel->receive(timeout);
    if (!got) { // the caller's loop ends on its timeout
      llvm::consumeError(got.takeError());
      return std::nullopt;
    }
    std::optional<llvm::StringRef> body = *got ? (*got)->single() : std::nullopt;
    proto::SchedMsg msg;
    if (!body || !msg.ParseFromArray(body->data(), static_cast<int>(body->size())))
      return std::nullopt;
    return msg;
  }
};

namespace {

/// The heartbeats of a node that joined with `again` and was given `given`, until `stop`. A
/// scheduler answers every heartbeat; one silent for its own heartbeat timeout is gone (0: a
/// scheduler that does not say, which is never called gone). Until one answers again, this node
/// registers anew every heartbeat with the place it was given: a scheduler started again at the
/// same address assigns every node its old place and takes the job back.
void keepInTouch(SchedulerLink::Impl *i, const std::atomic<bool> *stop,
                 const proto::SchedMsg &again, const proto::SchedMsg &given) {
  auto schedulerTimeout = std::chrono::milliseconds(given.heartbeat_timeout_ms());
  auto next = std::chrono::steady_clock::now(), heard = next;
  bool saidGone = false;
  while (!stop->load()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next) {
      if (saidGone)
        i->sendMessage(again);
      i->sendMessage(schedMessage(proto::HEARTBEAT));
      next += kHeartbeatEvery;
    }
    if (schedulerTimeout.count() > 0 && !saidGone && now - heard > schedulerTimeout) {
      saidGone = true;
      i->say(llvm::formatv("scheduler {0} is gone: no answer to heartbeats for {1:f1} s (killed, "
                           "or its host is down); the job goes on, and a node that fails now is "
                           "found by the timeouts (--barrier-timeout-ms, --reply-timeout-ms); this "
                           "node registers again, for a scheduler started again there",
                           i->scheduler, std::chrono::duration<double>(now - heard).count())
                 .str());
    }
    auto note = i->receive(std::chrono::milliseconds(100));
    if (note && note->kind() != proto::SCHED_UNSET)
      heard = std::chrono::steady_clock::now();
    if (note && saidGone && note->kind() == proto::ASSIGN) {
      bool same = note->role() == given.role() && note->id() == given.id() &&
                  llvm::equal(note->pservers(), given.pservers());
      i->say(same ? llvm::formatv("scheduler {0} is back: it took the job back ({1} {2} kept its "
                                  "place)",
                                  i->scheduler, given.role(), given.id())
                        .str()
                  : llvm::formatv("scheduler {0} is back with another job's places; ignored",
                                  i->scheduler)
                        .str());
      saidGone = !same;
    } else if (note && note->kind() == proto::NODE_GONE) {
      i->noteGone(*note);
    }
  }
}

/// What an ASSIGN gave this node.
SchedulerAssignment assignmentOf(const proto::SchedMsg &msg) {
  SchedulerAssignment a;
  a.id = msg.id();
  a.pservers.assign(msg.pservers().begin(), msg.pservers().end());
  a.trainers = msg.trainers_count();
  a.trainerEndpoints.assign(msg.trainers().begin(), msg.trainers().end());
  a.jobId = msg.job_id();
  return a;
}

} // namespace

SchedulerLink::SchedulerLink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

llvm::Expected<std::unique_ptr<SchedulerLink>>
SchedulerLink::join(const SchedulerRequest &request, std::function<void(const std::string &)> log) {
  auto impl = std::make_unique<Impl>();
  impl->scheduler = request.scheduler;
  impl->log = std::move(log);
  proto::SchedMsg reg = registerMessage(request.role, request.askedId, request.endpoint,
                                        request.jobId, request.pservers, request.trainers);
  DealerOptions options;
  options.curve = request.curve; // no server key: the scheduler has this node's own key pair
  options.linger = std::chrono::milliseconds(1000);
  options.maxMessageBytes = int64_t{1} << 20;
  options.shouldStop = request.shouldStop;
  auto channel = openDealer(impl->context, request.scheduler, options);
  if (!channel)
    return makeError("scheduler {0}: cannot reach it: {1}", request.scheduler,
                     llvm::toString(channel.takeError()));
  impl->channel = std::move(*channel);
  // Queued until the connection is up: the scheduler may start after this node.
  impl->sendMessage(reg);
  auto given = impl->awaitAssignment(request);
  if (!given)
    return given.takeError();
  std::unique_ptr<SchedulerLink> link(new SchedulerLink(std::move(impl)));
  link->assignment_ = assignmentOf(*given);
  proto::SchedMsg again = reg;
  again.set_id(given->id());
  again.set_job_id(given->job_id());
  link->heartbeats_ = std::thread(keepInTouch, link->impl_.get(), &link->stop_, again, *given);
  return link;
}

void SchedulerLink::leave(const std::string &error) {
  if (left_)
    return;
  left_ = true;
  stop_ = true;
  if (heartbeats_.joinable())
    heartbeats_.join();
  impl_->sendMessage(leaveMessage(error));
}

llvm::Expected<std::unique_ptr<SchedulerLink>>
joinThroughScheduler(ClusterSpec &spec, const CurveConfig &curve, std::chrono::milliseconds timeout,
                     std::function<void(const std::string &)> log, std::function<bool()> shouldStop,
                     std::shared_ptr<HeldPort> &ownPort) {
  SchedulerRequest request;
  request.scheduler = spec.scheduler;
  request.role = spec.role;
  request.askedId = spec.askedId;
  request.jobId = spec.jobId;
  request.pservers = spec.pserverCount;
  request.trainers = spec.trainers;
  request.timeout = timeout;
  request.curve = curve;
  request.shouldStop = std::move(shouldStop);
  // A pserver serves at its endpoint; a collective or hybrid trainer is reached at its own
  // (trainer 0 serves the trainers' rendezvous there).
  bool reached = spec.role == Role::Pserver || (spec.role == Role::Trainer && spec.trainersMeet);
  if (reached) {
    if (spec.currentEndpoint.empty()) {
      std::string host = spec.nodeHost.empty() ? "127.0.0.1" : spec.nodeHost;
      // On loopback the node binds exactly the held socket and takes it over; elsewhere it is
      // free on every address, and let go just before the node binds its own address.
      if (isLoopbackEndpoint(host + ":0")) {
        auto ports = HeldPort::onLoopback(1);
        if (!ports)
          return ports.takeError();
        ownPort = std::make_shared<HeldPort>(std::move(ports->front()));
      } else {
        auto port = HeldPort::onAllAddresses();
        if (!port)
          return port.takeError();
        ownPort = std::make_shared<HeldPort>(std::move(*port));
      }
      spec.currentEndpoint = host + ":" + std::to_string(ownPort->port());
    }
    request.endpoint = spec.currentEndpoint;
  }
  auto link = SchedulerLink::join(request, log);
  if (!link)
    return link.takeError();
  const SchedulerAssignment &a = (*link)->assignment();
  if (spec.role == Role::Trainer)
    spec.trainerId = a.id;
  spec.trainers = a.trainers;
  spec.pservers = a.pservers;
  if (spec.role == Role::Trainer && spec.trainersMeet) {
    if (a.trainerEndpoints.size() != static_cast<size_t>(a.trainers) ||
        llvm::is_contained(a.trainerEndpoints, ""))
      return makeError("scheduler {0}: the trainers' endpoints are incomplete ({1} of {2}): is "
                       "every trainer of a collective or hybrid job started with --mode?",
                       spec.scheduler,
                       a.trainerEndpoints.size() - llvm::count(a.trainerEndpoints, ""), a.trainers);
    spec.trainerEndpoints = a.trainerEndpoints;
    if (spec.trainerId != 0)
      ownPort.reset(); // only trainer 0 serves (the rendezvous); the others' pairs pick ports
  }
  if (spec.jobId.empty())
    spec.jobId = a.jobId;
  if (log)
    log(llvm::formatv("scheduler {0}: this node is {1} {2} of {3} pserver(s) and {4} trainer(s)",
                      spec.scheduler, roleName(spec.role), a.id, a.pservers.size(), a.trainers)
            .str());
  return link;
}

std::map<int64_t, std::string> SchedulerLink::goneTrainers() const {
  std::lock_guard<std::mutex> lock(impl_->goneMutex);
  return impl_->goneTrainers;
}

SchedulerLink::~SchedulerLink() {
  leave(leaveError_); // not left on purpose: the node is ending on an error
}

} // namespace oar::runtime
