// The trainer's communicator.
#include "runtime/trainer/communicator.h"
#include "runtime/wire/peer_memory.h"
#include "support/deadline.h"
#include "support/env_names.h"
#include "support/memory_policy.h"

#include <cstdlib>
#include <cstring>
#include <thread>

#include "support/error.h"

namespace oar::runtime {

Communicator::Communicator(int64_t trainerId, std::vector<std::string> endpoints, Timeouts timeouts,
                           CurveConfig curve, std::function<bool()> shouldStop)
    : trainerId_(trainerId), endpoints_(std::move(endpoints)), timeouts_(timeouts),
      curve_(std::move(curve)), shouldStop_(std::move(shouldStop)) {
  keepFreedMemoryForReuse(); // params arrive every step
}

Communicator::~Communicator() {
  while (!connections_.empty())
    closeConnection(connections_.begin()->first);
}

const std::string *Communicator::linkAddress(const std::string &endpoint) {
  // Asked on every send and receive: the answer for an endpoint is worked out once.
  auto [it, fresh] = linkAddresses_.try_emplace(endpoint);
  if (fresh) {
    // CURVE is libzmq's: a link speaks the NULL mechanism only. A pserver of this host only:
    // between hosts libzmq's I/O thread overlaps a large send with the trainer's compute, where
    // a link would write it on the trainer's thread.
    const char *env = std::getenv(env::kOarDirectLinks);
    if (!(env && std::strcmp(env, "0") == 0) && !curve_.enabled())
      it->second = localIpcAddress(endpoint);
  }
  return it->second ? &*it->second : nullptr;
}

size_t Communicator::linkedPservers() const {
  return llvm::count_if(
      connections_, [](const auto &c) { return c.second.channel && c.second.channel->direct(); });
}

llvm::Expected<Channel *> Communicator::channelFor(const Request &r, const char *what) {
  Connection &c = connections_[r.endpoint];
  if (c.channel)
    return c.channel.get();
  llvm::Expected<std::unique_ptr<Channel>> channel = [&] {
    if (const std::string *address = linkAddress(r.endpoint)) {
      // A live pserver answers in milliseconds; connect() retries a silent one within its own
      // budget, so one attempt must not take all of it.
      return openLink(*address, std::min({timeouts_.connect, timeouts_.reply,
                                          std::chrono::milliseconds(2000)}));
    }
    DealerOptions options;
    options.curve = curve_;
    options.watch = true;
    options.shouldStop = shouldStop_;
    return openDealer(context_, r.endpoint, options);
  }();
  if (!channel) {
    // A refusal ends connect()'s retries.
    std::string why = llvm::toString(
        llvm::handleErrors(channel.takeError(), [&](const ChannelRefused &refusal) -> llvm::Error {
          lastFailureWasRefusal_ = true;
          return makeError("{0}", refusal.message());
        }));
    return makeError("{0}: cannot reach pserver {1} while {2}: {3}", who(), r.endpoint, what, why);
  }
  c.channel = std::move(*channel);
  return c.channel.get();
}

llvm::Error Communicator::channelFailure(Connection &c, const Request &r, const char *what,
                                         llvm::Error err) {
  if (c.channel->peerClosed() && c.connected && !c.completed) { // as checkDisconnects says it
    llvm::consumeError(std::move(err));
    return lostPserver(c, r.endpoint, what, r);
  }
  return makeError("{0}: pserver {1} while {2} {3}: {4}", who(), r.endpoint, what, r.header.var(),
                   llvm::toString(std::move(err)));
}

std::string Communicator::who() const { return "trainer " + std::to_string(trainerId_); }

llvm::Error Communicator::checkDisconnects(const char *what, const Request &waitingOn) {
  for (auto &[ep, c] : connections_) {
    if (!c.channel)
      continue;
    ChannelNews news = c.channel->news();
    // Keys do not change between attempts: connect() must not retry these.
    if (news.keyRefused) {
      lastFailureWasRefusal_ = true;
      return makeError("{0}: pserver {1} refused this trainer's CURVE key (ZAP status {2}): the "
                       "public key of its --curve-secret file is not on the pserver's allow-list",
                       who(), ep, *news.keyRefused);
    }
    if (news.handshakeFailed) {
      lastFailureWasRefusal_ = true;
      return makeError("{0}: the ZeroMQ handshake with pserver {1} failed: {2}", who(), ep,
                       curve_.enabled()
                           ? "does it serve CURVE (--curve-secret) with the key pair whose public "
                             "key is this trainer's --curve-server-key?"
                           : "does it require CURVE keys (--curve-secret, --curve-server-key)?");
    }
    if (news.dropped && c.connected && !c.completed && !c.lost)
      return lostPserver(c, ep, what, waitingOn);
  }
  return llvm::Error::success();
}

llvm::Error Communicator::lostPserver(Connection &c, const std::string &ep, const char *what,
                                      const Request &waitingOn) {
  c.lost = true;
  // A pserver that failed says why before it leaves: an error among the replies it left
  // queued beats "lost". (The connection is over, so reading them out of turn is harmless.)
  auto queued = [&]() -> std::optional<Frames> {
    auto got = c.channel->receive(std::chrono::milliseconds(0));
    if (!got) {
      llvm::consumeError(got.takeError());
      return std::nullopt;
    }
    return std::move(*got);
  };
  while (auto frames = queued()) {
    auto msg = decodeMessage(*frames, 0);
    if (!msg)
      llvm::consumeError(msg.takeError());
    else if (msg->header.kind() == proto::REPLY_ERROR)
      return makeError("{0}: pserver {1} failed while {2}: {3}", who(), ep, what,
                       msg->header.error());
  }
  needsRecovery_ = true;
  return makeError("{0}: lost the connection to pserver {1} while {2}{3} (waiting on {4}); "
                   "is it running?",
                   who(), ep, what,
                   waitingOn.header.var().empty() ? "" : " " + waitingOn.header.var(),
                   waitingOn.endpoint);
}

llvm::Error Communicator::sendRequest(const Request &r, const char *what,
                                      std::chrono::milliseconds timeout) {
  if (timeout.count() == 0)
    timeout = timeouts_.reply;
  auto channel = channelFor(r, what);
  if (!channel)
    return channel.takeError();
  if (llvm::Error err = (*channel)->sendMessage(r.header, r.tensor, timeout))
    return channelFailure(connections_[r.endpoint], r, what, std::move(err));
  highestStepSent_ = std::max(highestStepSent_, r.header.step());
  if (r.header.kind() == proto::COMPLETE) // from now on it may leave
    connections_[r.endpoint].completed = true;
  return llvm::Error::success();
}

llvm::Expected<std::optional<Frames>> Communicator::receiveFrom(const Request &r, const char *what,
                                                                std::chrono::milliseconds wait) {
  auto c = connections_.find(r.endpoint);
  if (c == connections_.end() || !c->second.channel) // its request went nowhere: nothing will come
    return makeError("{0}: no connection to pserver {1} while {2} {3}", who(), r.endpoint, what,
                     r.header.var());
  auto got = c->second.channel->receive(wait);
  if (!got)
    return channelFailure(c->second, r, what, got.takeError());
  return got;
}

llvm::Expected<Message> Communicator::awaitReply(const Request &r, const char *what,
                                                 std::chrono::milliseconds timeout) {
  Deadline deadline(timeout);
  std::optional<Frames> frames;
  if (auto it = connections_.find(r.endpoint); it != connections_.end() && it->second.lost) {
    needsRecovery_ = true;
    return makeError("{0}: pserver {1} is gone (its connection was lost); not waiting for it "
                     "while {2}",
                     who(), r.endpoint, what);
  }
  while (!frames) { // wake up now and then to honour SIGTERM and notice dropped pservers
    if (deadline.passed())
      return makeError("{0}: no reply from pserver {1} in {2:f2} s while {3}{4}; is it running?",
                       who(), r.endpoint, deadline.elapsedSeconds(), what,
                       r.header.var().empty() ? "" : " " + r.header.var());
    if (shouldStop_ && shouldStop_())
      return makeError("{0}: stopped by signal while {1}", who(), what);
    auto got = receiveFrom(r, what, std::min(deadline.left(), std::chrono::milliseconds(200)));
    if (!got)
      return got.takeError();
    frames = std::move(*got);
    if (frames)
      break;
    if (llvm::Error err = checkDisconnects(what, r)) {
      // The reply may have landed just before its sender went away: take it if so.
      auto late = receiveFrom(r, what, std::chrono::milliseconds(0));
      if (!late || !*late) {
        if (!late)
          llvm::consumeError(late.takeError());
        return err;
      }
      frames = std::move(*late);
      llvm::consumeError(std::move(err));
    }
  }
  Connection &c = connections_[r.endpoint];
  c.connected = true;
  auto msg = decodeMessage(*frames, 0);
  if (!msg)
    return makeError("{0}: bad reply from pserver {1}: {2}", who(), r.endpoint,
                     llvm::toString(msg.takeError()));
  if (c.channel->peerPid() && namesSenderProcess(msg->header)) // the kernel named it
    msg->senderPid = c.channel->peerPid();
  if (msg->header.has_stop_after())
    stopAfter_ = msg->header.stop_after();
  if (msg->header.kind() == proto::REPLY_ERROR) {
    lastFailureWasRefusal_ = true;
    lastRefusalWasRollback_ = msg->header.has_rolled_back_to();
    needsRecovery_ |= lastRefusalWasRollback_;
    return makeError("{0}: pserver {1} refused {2} {3}: {4}", who(), r.endpoint,
                     kindName(r.header.kind()), r.header.var(), msg->header.error());
  }
  if (r.header.kind() == proto::HELLO)
    notePeerMemory(c, *msg);
  if (msg->inPeerMemory())
    if (llvm::Error err =
            readPeerPayload(*msg, c.pserverPid, "pserver " + r.endpoint, r.readInto)) {
      // Killed while we read its memory: lost, as when its socket closes, so a checkpointing
      // job waits for its restart.
      if (err.isA<PeerProcessGone>() && !c.completed) {
        c.lost = true;
        needsRecovery_ = true;
        return makeError("{0}: lost pserver {1} while {2}: {3}", who(), r.endpoint, what,
                         llvm::toString(std::move(err)));
      }
      return makeError("{0}: {1}", who(), llvm::toString(std::move(err)));
    }
  return msg;
}

llvm::Error Communicator::drainAcks() {
  // Replies come back in order per pserver, so these precede any later request's reply.
  for (const Request &r : unacked_)
    if (auto ack = awaitReply(r, "sending", timeouts_.reply); !ack) {
      forgetUnacked();
      return ack.takeError();
    }
  unacked_.clear();
  return llvm::Error::success();
}

void Communicator::notePeerMemory(Connection &c, const Message &helloReply) {
  const proto::MsgHeader &h = helloReply.header;
  c.pserverPid = verifiedPeerPid(h, helloReply.senderPid);
  c.readsOurMemory = h.reads_peer_memory();
  c.landings.clear();
  c.pserverProcess = c.pserverPid ? ProcessWatch(c.pserverPid) : ProcessWatch();
  if (c.pserverProcess.running() && h.landing_vars_size() == h.landing_addresses_size() &&
      h.landing_vars_size() == h.landing_bytes_size())
    for (int i = 0; i < h.landing_vars_size(); ++i)
      c.landings[h.landing_vars(i)] = {h.landing_addresses(i), h.landing_bytes(i)};
}

llvm::Error Communicator::placeGradient(Request &r, Tensor &copy) {
  auto c = connections_.find(r.endpoint);
  if (c == connections_.end())
    return llvm::Error::success();
  auto landed = landInPserver(c->second, r);
  if (!landed)
    return landed.takeError();
  if (*landed || !c->second.readsOurMemory || !worthPeerMemory(r.tensor))
    return llvm::Error::success();
  // The pserver reads it before it acknowledges. A copy (in-process, fast), so that the next
  // backward pass, which may reuse the gradient's buffer, never meets that read.
  copy = r.tensor->clone();
  r.tensor = &copy;
  placeInPeerMemory(r.header, copy);
  r.keep = copy.buffer();
  return llvm::Error::success();
}

llvm::Expected<bool> Communicator::landInPserver(Connection &c, Request &r) {
  auto landing = c.landings.find(r.header.var());
  if (landing == c.landings.end() || !worthPeerMemory(r.tensor) ||
      r.tensor->bytes() != landing->getValue().second)
    return false;
  if (!c.pserverProcess.running()) { // its pid may be another process's by now
    c.landings.clear();
    return false;
  }
  // An async pserver acknowledges a landed gradient once it applied it: until then the
  // landing is not ours to write again. (The step's recv usually collected that already.) A
  // sync pserver reads its landings only at the step's barrier, which follows every write of
  // the step, so writes of one landing need not wait for each other's acknowledgement.
  bool sync = job_ && job_->mode == Mode::Sync;
  if (!sync && llvm::any_of(unacked_, [&](const Request &u) {
        return u.header.landed() && u.endpoint == r.endpoint && u.header.var() == r.header.var();
      }))
    if (llvm::Error err = drainAcks())
      return err;
  if (llvm::Error err = writePeerMemory(c.pserverPid, landing->getValue().first, r.tensor->raw(),
                                        r.tensor->bytes(), r.header.var())) {
    llvm::consumeError(std::move(err)); // the pserver then reads it, or gets it by the socket
    return false;
  }
  r.header.set_landed(true);
  return true;
}

void Communicator::forgetUnacked() {
  for (Request &r : unacked_)
    if (r.keep)
      unackedAfterFailure_.push_back(std::move(r.keep));
  unacked_.clear();
}

Tensor Communicator::reusableBuffer(const Request &r, const Tensor &old) {
  // Only a buffer no one else holds (a send in flight, another tensor) may take the new bytes.
  if (!r.header.accepts_peer_memory() || !worthPeerMemory(&old, kPeerParamMinBytes) ||
      !old.ownsBufferAlone())
    return {};
  return old;
}

Communicator::Request Communicator::getVarRequest(const std::string &var,
                                                  const std::string &endpoint, int64_t step) {
  Request r{makeHeader(proto::GET_VAR, var, trainerId_, step), nullptr, endpoint};
  r.header.set_fetch_round(fetchRound_);
  if (auto it = connections_.find(endpoint); it != connections_.end() && it->second.pserverPid)
    r.header.set_accepts_peer_memory(true);
  return r;
}

llvm::Expected<std::vector<Message>> Communicator::roundTrip(const std::vector<Request> &requests,
                                                             const char *what,
                                                             std::chrono::milliseconds timeout) {
  lastFailureWasRefusal_ = lastRefusalWasRollback_ = false; // they describe this round trip
  // Send first, then read: a pserver answers each connection in order, so the outstanding
  // acknowledgements come before these replies, and the requests need not wait for them.
  // But at most kMaxUnacked unanswered: a pserver's ROUTER drops replies past its queue
  // (1000), and a direct link has no receive queue of its own to hold more.
  std::chrono::milliseconds wait = timeout.count() ? timeout : timeouts_.reply;
  std::vector<Message> replies;
  replies.reserve(requests.size());
  bool acksDrained = false;
  auto takeReply = [&]() -> llvm::Error {
    if (!acksDrained) {
      if (llvm::Error err = drainAcks())
        return err;
      acksDrained = true;
    }
    auto msg = awaitReply(requests[replies.size()], what, wait);
    if (!msg)
      return msg.takeError();
    replies.push_back(std::move(*msg));
    return llvm::Error::success();
  };
  for (size_t sent = 0; sent < requests.size(); ++sent) {
    if (sent - replies.size() >= kMaxUnacked)
      if (llvm::Error err = takeReply())
        return err;
    if (llvm::Error err = sendRequest(requests[sent], what, wait))
      return err;
  }
  while (replies.size() < requests.size())
    if (llvm::Error err = takeReply())
      return err;
  return replies;
}

proto::MsgHeader Communicator::helloHeader(const JobIdentity &job, int64_t step,
                                           const std::string &endpoint) const {
  proto::MsgHeader hello = makeHeader(proto::HELLO, "", trainerId_, step);
  if (localIpcAddress(endpoint)) // our probe only to a pserver of this host
    offerPeerMemory(hello);
  hello.set_mode(modeName(job.mode).str());
  hello.set_trainers(job.trainers);
  hello.set_plan_digest(job.planDigest);
  hello.set_job_id(job.jobId);
  return hello;
}

llvm::Error Communicator::connect(const JobIdentity &job) {
  job_ = job;
  std::map<std::string, int64_t> steps; // what each HELLO reply says the pserver applied
  for (const std::string &ep : endpoints_) {
    proto::MsgHeader hello = helloHeader(job, 0, ep);
    Deadline deadline(timeouts_.connect);
    Backoff backoff(std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
    for (int attempt = 1;; ++attempt) {
      // A short wait per attempt (a HELLO sent before the pserver bound is simply retried),
      // never past the connect timeout.
      auto wait = std::min({timeouts_.reply, std::chrono::milliseconds(2000),
                            std::max(deadline.left(), std::chrono::milliseconds(50))});
      auto reply = roundTrip({{hello, nullptr, ep}}, "connecting", wait);
      if (reply) {
        connections_[ep].greeted = true;
        pserversCheckpoint_ |= reply->front().header.checkpoints();
        steps[ep] = reply->front().header.step();
        break;
      }
      std::string why = llvm::toString(reply.takeError());
      if (lastFailureWasRefusal_) // a job mismatch: retrying cannot help
        return makeError("{0}", why);
      // A lost HELLO may leave a stale reply queued: start the next attempt on a fresh socket.
      closeConnection(ep);
      if (deadline.passed() || (shouldStop_ && shouldStop_())) {
        needsRecovery_ = false; // it had the connect timeout to come back: no more waiting
        return makeError("{0}: cannot reach pserver {1} after {2} attempts in {3:f2} s; is it "
                         "running and is the address right?",
                         who(), ep, attempt, deadline.elapsedSeconds());
      }
      backoff.pause(deadline);
    }
  }
  return pserversCheckpoint_ ? alignCheckpointSteps(job, steps) : llvm::Error::success();
}

llvm::Error Communicator::alignCheckpointSteps(const JobIdentity &job,
                                               const std::map<std::string, int64_t> &steps) {
  int64_t lowest = steps.begin()->second;
  for (const auto &[ep, step] : steps)
    lowest = std::min(lowest, step);
  // Async and GEO pservers checkpoint each on its own, and nothing goes back: a trainer
  // starting goes on from the lowest step any pserver recorded of it (its updates since may
  // land twice on the others, as async allows); one reconnecting keeps its own step.
  if (job.mode != Mode::Sync) {
    if (!reconnecting_)
      step_ = highestStepSent_ = lowest;
    return llvm::Error::success();
  }
  // Every pserver is asked, even one at that step already: it drops what was sent for later
  // steps. Each acts on the first trainer's request only.
  for (const std::string &ep : endpoints_) {
    proto::MsgHeader hello = helloHeader(job, lowest, ep);
    hello.set_rollback_to(lowest);
    auto reply = roundTrip({{hello, nullptr, ep}}, "going back to a checkpoint");
    if (!reply)
      return reply.takeError();
    if (int64_t at = reply->front().header.step(); at != lowest)
      return makeError("{0}: pserver {1} is at step {2} after going back to step {3}", who(), ep,
                       at, lowest);
  }
  step_ = highestStepSent_ = lowest;
  return llvm::Error::success();
}

void Communicator::closeConnection(const std::string &endpoint) {
  auto it = connections_.find(endpoint);
  if (it == connections_.end())
    return;
  connections_.erase(it);
}

llvm::Error Communicator::reconnect(const JobIdentity &job) {
  while (!connections_.empty())
    closeConnection(connections_.begin()->first);
  forgetUnacked();
  prefetched_.clear();
  needsRecovery_ = false;
  reconnecting_ = true;
  llvm::Error err = connect(job);
  reconnecting_ = false;
  return err;
}

llvm::Error Communicator::sendVars(const std::vector<std::pair<std::string, const Tensor *>> &vars,
                                   const std::vector<std::string> &endpoints, proto::MsgKind kind) {
  // Sends without waiting: the acknowledgements are collected before the next request that
  // needs an answer (a barrier or a recv), which comes before the trainer reuses these buffers.
  for (size_t i = 0; i < vars.size(); ++i) {
    Request r{makeHeader(kind, vars[i].first, trainerId_, step_), vars[i].second, endpoints[i]};
    Tensor copy;
    if (kind == proto::SEND_VAR)
      if (llvm::Error err = placeGradient(r, copy))
        return err;
    if (llvm::Error err = sendRequest(r, "sending"))
      return err;
    r.tensor = nullptr; // the message (or `keep`) keeps the buffer alive; the tensor may change
    unacked_.push_back(std::move(r));
    // A pserver's ROUTER drops replies past its queue limit (1000): stay well below it.
    if (unacked_.size() >= kMaxUnacked)
      if (llvm::Error err = drainAcks())
        return err;
  }
  return llvm::Error::success();
}

llvm::Error Communicator::pullRows(const std::string &table, int64_t width,
                                   const std::vector<std::string> &endpoints,
                                   const std::vector<std::vector<uint64_t>> &keys,
                                   std::vector<Tensor> &rows) {
  std::vector<Request> reqs;
  std::vector<size_t> asked; // the endpoint index of each request
  for (size_t e = 0; e < endpoints.size(); ++e) {
    if (keys[e].empty())
      continue;
    proto::MsgHeader h = makeHeader(proto::PULL_ROWS, table, trainerId_, step_);
    h.mutable_keys()->Add(keys[e].begin(), keys[e].end());
    reqs.push_back({std::move(h), nullptr, endpoints[e]});
    asked.push_back(e);
  }
  if (reqs.empty())
    return llvm::Error::success();
  auto replies = roundTrip(reqs, "pulling rows", heldReplyTimeout());
  if (!replies)
    return replies.takeError();
  for (size_t i = 0; i < replies->size(); ++i) {
    Message &m = (*replies)[i];
    size_t e = asked[i];
    std::vector<int64_t> dims = m.dims();
    if (m.header.var() != table || m.header.dtype() != proto::F32 || dims.size() != 2 ||
        dims[0] != static_cast<int64_t>(keys[e].size()) || dims[1] != width)
      return makeError("{0}: pserver {1} answered a pull of {2} rows of {3} (width {4}) with {5} "
                       "{6}{7}",
                       who(), endpoints[e], keys[e].size(), table, width, m.header.var(),
                       dtypeName(m.header.dtype()), dimsString(dims));
    m.moveInto(rows[e]);
  }
  return llvm::Error::success();
}

llvm::Error Communicator::pushRows(const std::string &table,
                                   const std::vector<std::string> &endpoints,
                                   const std::vector<std::vector<uint64_t>> &keys,
                                   const std::vector<Tensor> &grads) {
  for (size_t e = 0; e < endpoints.size(); ++e) {
    if (keys[e].empty())
      continue;
    Request r{makeHeader(proto::PUSH_ROWS, table, trainerId_, step_), &grads[e], endpoints[e]};
    r.header.mutable_keys()->Add(keys[e].begin(), keys[e].end());
    if (llvm::Error err = sendRequest(r, "pushing rows"))
      return err;
    r.tensor = nullptr; // the message keeps the buffer alive
    r.header.clear_keys();
    unacked_.push_back(std::move(r));
    if (unacked_.size() >= kMaxUnacked)
      if (llvm::Error err = drainAcks())
        return err;
  }
  return llvm::Error::success();
}

bool Communicator::prefetched(const std::vector<std::string> &names) const {
  return llvm::all_of(names, [&](const std::string &n) { return prefetched_.count(n) > 0; });
}

llvm::Error Communicator::getVars(const std::vector<std::string> &names,
                                  const std::vector<std::string> &endpoints,
                                  const std::vector<Tensor *> &out,
                                  const std::vector<std::pair<std::string, std::string>> &ahead) {
  if (prefetched(names)) { // fetched ahead (with the step's barrier, or by an earlier recv)
    for (size_t i = 0; i < names.size(); ++i) {
      auto it = prefetched_.find(names[i]);
      it->second.moveInto(*out[i]);
      prefetched_.erase(it);
    }
    return llvm::Error::success();
  }
  std::vector<Request> reqs;
  reqs.reserve(names.size() + ahead.size());
  ++fetchRound_;
  for (size_t i = 0; i < names.size(); ++i) {
    reqs.push_back(getVarRequest(names[i], endpoints[i], step_));
    reqs.back().readInto = reusableBuffer(reqs.back(), *out[i]);
  }
  for (const auto &[var, ep] : ahead)
    reqs.push_back(getVarRequest(var, ep, step_));
  // The values are replaced: let go of the old buffers first, so the replies land in memory
  // just freed (still mapped and cached) instead of beside it, and a trainer does not hold a
  // param twice. One read from the pserver's memory lands in the old buffer itself (which the
  // request holds meanwhile, also in the rare case that the reply comes through the socket).
  // On an error they stay empty; a trainer then fails, or recovers by fetching every param
  // again.
  for (Tensor *t : out)
    *t = Tensor();
  auto replies = roundTrip(reqs, "receiving", heldReplyTimeout());
  if (!replies)
    return replies.takeError();
  prefetched_.clear();
  for (size_t i = 0; i < replies->size(); ++i) {
    Message &m = (*replies)[i];
    if (m.header.var() != reqs[i].header.var() || !m.hasTensor())
      return makeError("{0}: pserver {1} answered {2} with {3}", who(), reqs[i].endpoint,
                       reqs[i].header.var(), m.header.var());
    if (i < names.size())
      m.moveInto(*out[i]);
    else
      prefetched_.emplace(m.header.var(), std::move(m));
  }
  return llvm::Error::success();
}

llvm::Error
Communicator::barrier(proto::MsgKind kind,
                      const std::vector<std::pair<std::string, std::string>> &prefetch) {
  std::vector<Request> reqs;
  for (const std::string &ep : endpoints_)
    reqs.push_back({makeHeader(kind, "", trainerId_, step_), nullptr, ep});
  if (kind == proto::FETCH_BARRIER) { // nothing waits on its answer
    for (Request &r : reqs) {
      if (llvm::Error err = sendRequest(r, "in fetch_barrier"))
        return err;
      unacked_.push_back(std::move(r));
    }
    return llvm::Error::success();
  }
  // The fetches belong to the step the barrier closes (the step after it advances).
  ++fetchRound_;
  for (const auto &[var, ep] : prefetch)
    reqs.push_back(getVarRequest(var, ep, step_ + 1));
  auto replies = roundTrip(reqs, "in send_barrier", heldReplyTimeout());
  if (!replies)
    return replies.takeError();
  advanceStep();
  prefetched_.clear();
  for (size_t i = endpoints_.size(); i < reqs.size(); ++i) {
    Message &m = (*replies)[i];
    if (m.header.var() != reqs[i].header.var() || !m.hasTensor())
      return makeError("{0}: pserver {1} answered {2} with {3}", who(), reqs[i].endpoint,
                       reqs[i].header.var(), m.header.var());
    prefetched_.emplace(m.header.var(), std::move(m));
  }
  return llvm::Error::success();
}

llvm::Error Communicator::toEveryPserver(proto::MsgKind kind, const char *what) {
  proto::MsgHeader header = makeHeader(kind, "", trainerId_, std::max(step_, highestStepSent_));
  std::vector<Request> reqs;
  for (const std::string &ep : endpoints_)
    reqs.push_back({header, nullptr, ep});
  auto replies = roundTrip(reqs, what, timeouts_.reply);
  if (!replies)
    return replies.takeError();
  return llvm::Error::success();
}

llvm::Error Communicator::saveBest() { return toEveryPserver(proto::SAVE_BEST, "saving the best"); }

llvm::Error Communicator::stopJob() {
  if (llvm::Error err = toEveryPserver(proto::STOP, "stopping the job"))
    return err;
  stopAfter_ = std::max(step_, highestStepSent_);
  return llvm::Error::success();
}

llvm::Error Communicator::complete(const std::string &failure) {
  llvm::Error result = llvm::Error::success();
  proto::MsgHeader header =
      makeHeader(proto::COMPLETE, "", trainerId_, std::max(step_, highestStepSent_));
  header.set_error(failure);
  // A pserver that is gone cannot be told; the others are, each within a short wait, so a
  // failed job ends in seconds instead of a reply timeout per dead pserver.
  auto wait = std::min(timeouts_.reply, std::chrono::milliseconds(5000));
  for (const std::string &ep : endpoints_) {
    // A reconnect that failed left fresh sockets that said no HELLO to some pservers, and a
    // pserver refuses anything else on such a connection: it would wait on us until it timed out.
    // The HELLO goes out with the COMPLETE, so that both are sent even if we stop waiting.
    std::vector<Request> goodbye;
    auto it = connections_.find(ep);
    bool greeted = it != connections_.end() && it->second.greeted;
    if (job_ && !greeted)
      goodbye.push_back({helloHeader(*job_, 0, ep), nullptr, ep});
    goodbye.push_back({header, nullptr, ep});
    auto reply = roundTrip(goodbye, "completing", wait);
    // A pserver that went back to a checkpoint at another trainer's request forgot our HELLO
    // and refuses the COMPLETE: greet it again, or it waits on us until its idle timeout.
    // A fresh socket, so that replies still queued on the old one (acknowledgements refused
    // for the same reason) are not read as the answers to these.
    if (!reply && job_ && greeted && lastRefusalWasRollback_) {
      llvm::consumeError(reply.takeError());
      closeConnection(ep);
      reply = roundTrip({{helloHeader(*job_, 0, ep), nullptr, ep}, {header, nullptr, ep}},
                        "completing", wait);
    }
    if (!reply)
      result = llvm::joinErrors(std::move(result), reply.takeError());
  }
  return result;
}

void Communicator::abandon(const std::string &failure) {
  proto::MsgHeader header = makeHeader(proto::COMPLETE, "", trainerId_, highestStepSent_);
  header.set_error(failure);
  for (const std::string &ep : endpoints_) {
    auto it = connections_.find(ep);
    if (it == connections_.end() || !it->second.greeted || it->second.lost)
      continue; // it never heard of us, or cannot hear us now
    auto reply = roundTrip({{header, nullptr, ep}}, "completing",
                           std::min(timeouts_.reply, std::chrono::milliseconds(5000)));
    if (!reply)
      llvm::consumeError(reply.takeError()); // the connect error is the one to report
  }
}

} // namespace oar::runtime
