// The pserver's message handlers.
#include "runtime/pserver/pserver_handlers.h"

#include <cmath>

#include "executor/finite_check.h"
#include "runtime/wire/peer_memory.h"
#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

/// Why trainer `t`'s HELLO is not of this job, or "".
std::string jobRefusal(const PserverCore &core, const proto::MsgHeader &h, int64_t t) {
  const PserverPlan &plan = core.plan;
  if (h.mode() != modeName(plan.mode) || h.trainers() != plan.fanin ||
      h.plan_digest() != plan.digest)
    // Only the sender's own values: the pserver's plan digest and launch id are what a HELLO
    // is checked against, so a refusal must not hand them to whoever asks (its log has them).
    return llvm::formatv("job mismatch: trainer {0} runs mode {1} with {2} trainers and plan "
                         "{3}, which is not this pserver's job (its log names mode, trainers "
                         "and plan); transpile both from the same program and flags",
                         t, h.mode(), h.trainers(), h.plan_digest())
        .str();
  if (!core.run.jobId.empty() && h.job_id() != core.run.jobId)
    return llvm::formatv("trainer {0} belongs to launch \"{1}\", but this pserver to another "
                         "launch; a trainer of another oar-launch of the same model is refused",
                         t, h.job_id())
        .str();
  return "";
}

/// A gradient holding NaN or inf is never applied: the trainer that sent it hears why (and, in
/// sync mode, so does the job), instead of a model that silently goes bad; or, with
/// --nonfinite-grads=skip, its update for that step is skipped. Returns what is wrong, or "".
std::string nonFiniteGradient(PserverCore &core, const Message &m, int64_t t) {
  const proto::MsgHeader &h = m.header;
  int64_t n = 1;
  for (int64_t d : h.dims())
    n *= d;
  Tensor landing; // holds a landed gradient's buffer while it is checked
  const void *bytes = m.payload.data();
  if (h.landed()) {
    landing = core.peerMemory.landing(t, h.var());
    bytes = landing.raw();
  } else if (m.readInto) {
    bytes = m.readInto.get();
  }
  std::optional<int64_t> bad = firstNonFinite(bytes, h.dtype(), n);
  if (!bad)
    return "";
  double v = h.dtype() == proto::F64 ? static_cast<const double *>(bytes)[*bad]
                                     : static_cast<const float *>(bytes)[*bad];
  return llvm::formatv("gradient {0} from trainer {1} for step {2} holds {3} at element {4}",
                       h.var(), t, h.step(), std::isnan(v) ? "nan" : "inf", *bad)
      .str();
}

/// The answer to a HELLO: whether this pserver checkpoints, and the step training goes on from.
proto::MsgHeader helloReply(const PserverCore &core, int64_t t, int64_t step) {
  int64_t at = core.checkpoints ? core.steps->helloStep(t) : step;
  proto::MsgHeader ok = makeHeader(proto::REPLY_OK, "", t, at);
  ok.set_checkpoints(core.checkpoints.has_value());
  return ok;
}

/// A trainer's HELLO: checks its job, may take the pserver back to a checkpoint, and answers
/// with what the trainer needs (its step, each other's memory).
llvm::Error onHello(PserverCore &core, const std::string &peer, Message &m, int64_t t) {
  const proto::MsgHeader &h = m.header;
  if (std::string why = jobRefusal(core, h, t); !why.empty())
    return makeError("{0}", why);
  if (llvm::Error err = core.steps->hello(peer, h, t))
    return err;
  core.trainers[t].helloPeer = peer;
  proto::MsgHeader ok = helloReply(core, t, h.step());
  core.peerMemory.greet(t, m, core.scope, core.plan.gradTypes(), ok);
  if (pid_t pid = core.peerMemory.trainerPid(t))
    core.log(llvm::formatv("trainer {0} runs on this host (process {1}): gradients of {2} KiB or "
                           "more and params of {3} KiB or more move through each other's memory",
                           t, pid, kPeerMemoryMinBytes >> 10, kPeerParamMinBytes >> 10)
                 .str());
  core.reply(peer, ok);
  return llvm::Error::success();
}

/// A gradient: checked, then kept for the step's barrier or applied (the step policy's).
llvm::Error onSendVar(PserverCore &core, const std::string &peer, Message &m, int64_t t) {
  const proto::MsgHeader &h = m.header;
  auto it = core.plan.gradToBlock.find(h.var());
  if (it == core.plan.gradToBlock.end())
    return makeError("var {0} is not a gradient this pserver takes", h.var());
  int block = it->getValue();
  if (llvm::Error err = core.plan.checkPayload(m, h.var()))
    return err;
  // Read before the acknowledgement, after which the trainer may move on.
  if (llvm::Error err = core.peerMemory.receive(t, m))
    return err;
  if (llvm::Error err = core.steps->checkStep("gradient " + h.var(), h, t))
    return err;
  if (std::string bad = nonFiniteGradient(core, m, t); !bad.empty()) {
    if (!core.opts.skipNonFinite)
      return makeError("{0}; it is not applied (the trainer diverged: lower the learning rate)",
                       bad);
    core.steps->skipBlock(block);
    core.skipUpdate(peer, h, bad);
    return llvm::Error::success();
  }
  return core.steps->takeGradient(peer, m, t, block);
}

/// A param fetch.
llvm::Error onGetVar(PserverCore &core, const std::string &peer, Message &m, int64_t t) {
  PserverPeerMemory::acceptsFrom(m);
  if (!core.plan.paramBlocks.count(m.header.var()))
    return makeError("var {0} is not a parameter this pserver serves", m.header.var());
  core.steps->fetchParam(peer, m.header, t);
  return llvm::Error::success();
}

/// A distributed table's rows.
llvm::Error onPullRows(PserverCore &core, const std::string &peer, Message &m, int64_t t) {
  auto table = core.tables.check(m);
  if (!table)
    return table.takeError();
  core.steps->fetchRows(peer, m.header, t, *table);
  return llvm::Error::success();
}

/// A distributed table's gradient rows: checked, acknowledged, then kept or applied.
llvm::Error onPushRows(PserverCore &core, const std::string &peer, Message &m, int64_t t) {
  const proto::MsgHeader &h = m.header;
  auto table = core.tables.check(m);
  if (!table)
    return table.takeError();
  if (llvm::Error err = core.steps->checkStep("rows of " + h.var(), h, t))
    return err;
  if (std::string bad = core.tables.nonFiniteRows(m); !bad.empty()) {
    if (!core.opts.skipNonFinite)
      return makeError("{0}; they are not applied (the trainer diverged: lower the learning "
                       "rate)",
                       bad);
    core.steps->skipTable(*table);
    core.skipUpdate(peer, h, bad);
    return llvm::Error::success();
  }
  core.reply(peer, makeHeader(proto::REPLY_OK, h.var(), t, h.step()));
  core.steps->takeRows(std::make_shared<Message>(std::move(m)), t, *table);
  return llvm::Error::success();
}

/// A trainer is done (with the error it failed on, if any).
llvm::Error onComplete(PserverCore &core, const std::string &peer, Message &m, int64_t t) {
  const proto::MsgHeader &h = m.header;
  TrainerSlot &s = core.trainers[t];
  s.completed = true;
  core.peerMemory.retire(t, core.scope);
  if (!h.error().empty())
    s.failure = h.error();
  core.log("trainer " + std::to_string(t) +
           (h.error().empty() ? " completed" : " left after an error: " + h.error()));
  core.reply(peer, makeHeader(proto::REPLY_OK, "", t, h.step()));
  core.steps->completed(t, h.error());
  return llvm::Error::success();
}

/// Trainer 0's best evaluation so far (--keep-best): the tables' rows as they are now, once every
/// update queued has landed, to SAVE/best/tables (trainer 0 writes the dense params beside).
/// Written before the reply, so that trainer 0 knows the best save is whole.
llvm::Error onSaveBest(PserverCore &core, const std::string &peer, Message &m, int64_t t) {
  if (t != 0)
    return makeError("a best save is trainer 0's to ask for, not trainer {0}'s", t);
  if (core.run.bestTableSaveDir.empty())
    return makeError("this pserver has no best save to write: start it with --keep-best and "
                     "--save, as the trainers");
  if (core.tables.size() > 0) {
    if (llvm::Error err = core.threads.workers().drain())
      return err;
    if (llvm::Error err = core.tables.save(core.run.bestTableSaveDir))
      return makeError("best save: {0}", llvm::toString(std::move(err)));
  }
  core.reply(peer, makeHeader(proto::REPLY_OK, "", t, m.header.step()));
  return llvm::Error::success();
}

/// Trainer 0 decided to stop the job after `step` (--early-stop): every reply from now on says
/// so, and each trainer ends after the step it is in.
llvm::Error onStop(PserverCore &core, const std::string &peer, Message &m, int64_t t) {
  if (t != 0)
    return makeError("stopping the job is trainer 0's decision, not trainer {0}'s", t);
  if (m.header.step() < 0)
    return makeError("a stop after step {0}", m.header.step());
  core.stopAfter = m.header.step();
  core.log(llvm::formatv("trainer 0 stops the job (early stopping) at its step {0}: each "
                         "trainer ends after the step it is in",
                         m.header.step())
               .str());
  core.reply(peer, makeHeader(proto::REPLY_OK, "", t, m.header.step()));
  return llvm::Error::success();
}

/// Acts on one message of trainer `t` that passed the checks, by its kind.
llvm::Error dispatch(PserverCore &core, const std::string &peer, Message &m, int64_t t) {
  switch (m.header.kind()) {
  case proto::HELLO:
    return onHello(core, peer, m, t);
  case proto::SEND_VAR:
    return onSendVar(core, peer, m, t);
  case proto::GET_VAR:
    return onGetVar(core, peer, m, t);
  case proto::PULL_ROWS:
    return onPullRows(core, peer, m, t);
  case proto::PUSH_ROWS:
    return onPushRows(core, peer, m, t);
  case proto::SEND_BARRIER:
    return core.steps->barrier(peer, m.header, t);
  case proto::FETCH_BARRIER:
    core.reply(peer, makeHeader(proto::REPLY_OK, "", t, m.header.step()));
    return llvm::Error::success();
  case proto::COMPLETE:
    return onComplete(core, peer, m, t);
  case proto::SAVE_BEST:
    return onSaveBest(core, peer, m, t);
  case proto::STOP:
    return onStop(core, peer, m, t);
  default:
    return makeError("a {0} message is not a request", kindName(m.header.kind()));
  }
}

/// Why trainer `t`'s message may not be taken from connection `peer` now, or success.
llvm::Error checkSender(PserverCore &core, const std::string &peer, const Message &m, int64_t t) {
  const proto::MsgHeader &h = m.header;
  if (t < 0 || t >= core.trainers.size())
    return makeError("trainer id {0} is out of range (this job has {1} trainers)", t,
                     core.plan.fanin);
  const TrainerSlot &s = core.trainers[t];
  bool hello = h.kind() == proto::HELLO;
  if (!hello && s.helloPeer != peer) {
    if (std::optional<int64_t> step = core.steps->rolledBackTo())
      return llvm::make_error<RolledBackError>(t, *step);
    return makeError("trainer {0} sent {1} on a connection that said no HELLO (was this pserver "
                     "restarted under a running job?); a trainer starts with HELLO",
                     t, kindName(h.kind()));
  }
  // A HELLO starts the trainer's clock again (it reconnects after a pserver restarted).
  if (h.step() < 0 || (!hello && h.step() < s.lastStep))
    return makeError("step {0} goes back for trainer {1}", h.step(), t);
  if (s.completed && h.kind() != proto::COMPLETE)
    return makeError("trainer {0} already completed", t);
  if (s.lost) // its updates would land on a model the others moved on from
    return makeError("trainer {0} was declared lost (silent for longer than the barrier timeout "
                     "while others trained); its messages are refused",
                     t);
  if ((m.inPeerMemory() || h.landed()) && h.kind() != proto::SEND_VAR)
    return makeError("a {0} message cannot leave its payload in the sender's memory",
                     kindName(h.kind()));
  // A HELLO still passes, so that its connection may then say COMPLETE (with its error).
  if (!core.broken.empty() && h.kind() != proto::COMPLETE && !hello)
    return makeError("{0}", core.broken);
  return llvm::Error::success();
}

} // namespace

llvm::Error handleMessage(PserverCore &core, const std::string &peer, Message &m) {
  const proto::MsgHeader &h = m.header;
  int64_t t = h.trainer_id();
  if (t >= core.trainers.size() && core.steps->admits(t) && h.kind() == proto::HELLO &&
      jobRefusal(core, h, t).empty()) { // a trainer joining the running job
    core.trainers.add(t);
    core.peerMemory.resize(static_cast<size_t>(t) + 1);
    core.log(
        llvm::formatv("trainer {0} joined the running job ({1} trainer slots)", t, t + 1).str());
  }
  if (llvm::Error err = checkSender(core, peer, m, t))
    return err;
  // Only an accepted message moves a trainer's clock: a refused one (a forged HELLO with a
  // huge step, say) must not lock the real trainer out.
  int64_t step = h.step(); // dispatch may move the message's contents away
  if (llvm::Error err = dispatch(core, peer, m, t))
    return err;
  TrainerSlot &s = core.trainers[t];
  s.lastSeen = TrainerSlot::Clock::now();
  s.lastStep = step;
  return llvm::Error::success();
}

} // namespace oar::runtime
