// A pserver's shared state: logging, replies, and the job's failures.
#include "runtime/pserver/pserver_core.h"

#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

char RolledBackError::ID = 0;

std::string RolledBackError::message() const {
  return llvm::formatv("this pserver went back to the checkpoint of step {0} (a pserver of the "
                       "job restarted); trainer {1} must say HELLO again",
                       step_, trainer_);
}

PserverCore::PserverCore(const proto::Program &p, Scope &s, PserverOptions o, PserverRun r)
    : program(p), scope(s), opts(std::move(o)), run(std::move(r)),
      replies([this](const std::string &peer, const proto::MsgHeader &h, const Tensor *t) {
        sendNow(peer, h, t);
      }) {}

void PserverCore::log(const std::string &line) {
  std::lock_guard<std::mutex> lock(logMutex);
  if (run.log)
    run.log("pserver " + plan.endpoint + ": " + line);
}

void PserverCore::reply(const std::string &peer, const proto::MsgHeader &h, const Tensor *t) {
  replies.send(peer, h, t);
}

void PserverCore::replyError(const std::string &peer, const proto::MsgHeader &req,
                             const std::string &why) {
  proto::MsgHeader h = makeHeader(proto::REPLY_ERROR, req.var(), req.trainer_id(), req.step());
  h.set_error(why);
  reply(peer, h);
}

void PserverCore::replyRolledBack(const std::string &peer, const proto::MsgHeader &req,
                                  int64_t step) {
  proto::MsgHeader h = makeHeader(proto::REPLY_ERROR, req.var(), req.trainer_id(), req.step());
  h.set_error(RolledBackError(req.trainer_id(), step).message());
  h.set_rolled_back_to(step);
  reply(peer, h);
}

void PserverCore::sendNow(const std::string &peer, const proto::MsgHeader &h, const Tensor *t) {
  // Sends never wait (a ROUTER drops a reply to a peer whose queue is full): an error is the
  // server's own, and ends it.
  proto::MsgHeader told;
  int64_t stop = stopAfter.load();
  if (stop >= 0) { // the trainers learn of a stop by any reply
    told = h;
    told.set_stop_after(stop);
  }
  if (llvm::Error err = server->sendMessage(peer, stop >= 0 ? told : h, t)) {
    if (fatal.empty())
      fatal = llvm::toString(std::move(err));
    else
      llvm::consumeError(std::move(err));
  }
}

void PserverCore::skipUpdate(const std::string &peer, const proto::MsgHeader &h,
                             const std::string &what) {
  ++skippedUpdates;
  int64_t held = 0;
  if (skipLog.allow("skipped", held))
    log(what + "; its update is skipped (--nonfinite-grads=skip)" +
        (held ? llvm::formatv(" ({0} more skips not logged)", held).str() : std::string()));
  reply(peer, makeHeader(proto::REPLY_OK, h.var(), h.trainer_id(), h.step()));
}

void PserverCore::breakJob(const std::string &what) {
  broken = what + (run.hybrid ? "; a hybrid job does not go on without one of its trainers"
                              : "; a sync job does not go on without one of its trainers");
  brokenAt = Clock::now();
  steps->failWaiting(broken);
  log(broken);
}

llvm::Error PserverCore::failAll(const std::string &why) {
  steps->failWaiting(why);
  log(why);
  return makeError("pserver {0}: {1}", plan.endpoint, why);
}

void PserverCore::lose(int64_t t) {
  trainers[t].lost = true;
  peerMemory.retire(t, scope); // it may still write where it was told to
}

std::function<void()> PserverCore::writtenLog(bool requested, int64_t step) {
  if (!requested)
    return {};
  return [this, path = checkpoints->pathOf(step)] {
    log(llvm::formatv("wrote checkpoint {0} on request (SIGUSR1)", path).str());
  };
}

bool PserverCore::checkpointRequested() {
  return run.checkpointRequested && run.checkpointRequested();
}

} // namespace oar::runtime
