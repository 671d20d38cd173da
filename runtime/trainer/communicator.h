// The trainer's side of the runtime: one connection per pserver, request/reply with timeouts.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>

#include "ir/distributed_mode.h"
#include "runtime/security/curve.h"
#include "runtime/transport/channel.h"
#include "runtime/wire/peer_memory.h"
#include "runtime/wire/protocol.h"
#include "llvm/ADT/StringMap.h"

namespace oar::runtime {

/// What a trainer tells every pserver when it connects; a mismatch is refused.
struct JobIdentity {
  Mode mode = Mode::Sync;
  int64_t trainers = 1;
  std::string planDigest;
  std::string jobId; ///< the launch (ClusterSpec::jobId); empty: none
};

/// Talks to the pservers for one trainer. Not thread safe: one executor thread uses it.
class Communicator {
public:
  /// With `curve` enabled, every connection authenticates with its key pair and checks the
  /// pservers' public key (CurveConfig::serverKey); traffic is encrypted. Every wait ends once
  /// `shouldStop` says so (unset: never).
  Communicator(int64_t trainerId, std::vector<std::string> endpoints, Timeouts timeouts,
               CurveConfig curve = {}, std::function<bool()> shouldStop = {});
  ~Communicator();

  /// Connects to every pserver and checks the job matches (retrying with backoff until the
  /// connect timeout). Errors name the endpoint. Checkpointing pservers all go back to the
  /// newest step every one of them has (a job resumed from its checkpoints starts there, see
  /// step()).
  llvm::Error connect(const JobIdentity &job);
  /// Sends each tensor to its endpoint without waiting; the acknowledgements (and any error a
  /// pserver reports) are collected by the next barrier, recv or complete. The tensors'
  /// buffers must not be written before then.
  llvm::Error sendVars(const std::vector<std::pair<std::string, const Tensor *>> &vars,
                       const std::vector<std::string> &endpoints,
                       proto::MsgKind kind = proto::SEND_VAR);
  /// Fetches each var from its endpoint into `out[i]` (which takes over the reply's buffer; its
  /// old value is dropped first, so after an error it is empty). Vars
  /// fetched ahead (a SEND_BARRIER's, or `ahead`'s) are taken without a request. `ahead` (var,
  /// endpoint) are fetched in the same round trip and kept for the getVars that asks for them.
  llvm::Error getVars(const std::vector<std::string> &names,
                      const std::vector<std::string> &endpoints, const std::vector<Tensor *> &out,
                      const std::vector<std::pair<std::string, std::string>> &ahead = {});
  /// Rows of distributed table `table`: from endpoint e, the rows of keys[e] (each key once),
  /// into rows[e] (f32 [keys[e].size(), width], checked); endpoints without keys are not asked.
  /// One round trip for all; a sync pserver answers once it has applied the steps this trainer
  /// closed.
  llvm::Error pullRows(const std::string &table, int64_t width,
                       const std::vector<std::string> &endpoints,
                       const std::vector<std::vector<uint64_t>> &keys, std::vector<Tensor> &rows);
  /// Sends grads[e] (one row per key of keys[e]) to endpoint e without waiting, as sendVars
  /// does; the pserver adds them into table `table`'s rows.
  llvm::Error pushRows(const std::string &table, const std::vector<std::string> &endpoints,
                       const std::vector<std::vector<uint64_t>> &keys,
                       const std::vector<Tensor> &grads);
  /// Whether every var of `names` was fetched ahead and waits to be taken by getVars.
  bool prefetched(const std::vector<std::string> &names) const;
  /// A barrier (SEND_BARRIER or FETCH_BARRIER) to every pserver. A SEND_BARRIER also asks for
  /// `prefetch` (var, endpoint): the vars the step's recvs will fetch, which a pserver answers
  /// once it has applied the step. Barrier and fetches then take one round trip, and the recvs
  /// find their replies waiting. A FETCH_BARRIER is sent without waiting: its acknowledgement is
  /// collected with the next request's, as a send's is.
  llvm::Error barrier(proto::MsgKind kind,
                      const std::vector<std::pair<std::string, std::string>> &prefetch = {});
  /// Tells every pserver this trainer is done (Paddle's exe.close()); `failure` is the reason
  /// when it stops because of an error. Errors are reported but every pserver is told; one this
  /// trainer has a new connection to (after a reconnect that failed) gets a HELLO first, and one
  /// that forgot this trainer's HELLO (it went back to a checkpoint at another trainer's
  /// request) gets one on a fresh connection.
  llvm::Error complete(const std::string &failure = "");
  /// Trainer 0's best evaluation so far (--keep-best): each pserver writes its tables' rows to
  /// its SAVE/best; returns once every one has.
  llvm::Error saveBest();
  /// Trainer 0's early stop: each pserver tells every trainer, in its next reply, that the job
  /// stops after this trainer's step.
  llvm::Error stopJob();
  /// Whether a pserver said the job stops (STOP): this trainer then ends after its step.
  bool jobStopped() const { return stopAfter_ >= 0; }
  /// After a failed connect(): tells the pservers that took this trainer's HELLO that it failed,
  /// so they end the job now instead of waiting for it until a timeout.
  void abandon(const std::string &failure);

  /// Whether the pservers write checkpoints (their HELLO replies say so): a lost pserver may
  /// then come back, and the job go on from its checkpoint.
  bool pserversCheckpoint() const { return pserversCheckpoint_; }
  /// Whether the last error came from a pserver that went away or went back to a checkpoint,
  /// and the pservers checkpoint: reconnect() may then recover.
  bool needsRecovery() const { return needsRecovery_ && pserversCheckpoint_; }
  /// Drops every connection and what was in flight, and connects again (waiting for a
  /// restarted pserver up to the connect timeout). Afterwards step() is the step of the
  /// checkpoint every pserver went back to (sync), or the trainer's own (async, GEO).
  llvm::Error reconnect(const JobIdentity &job);

  /// How many pservers this trainer reaches over a direct link (see linkAddress).
  size_t linkedPservers() const;

  /// Waits until every send so far is acknowledged.
  llvm::Error flush() { return drainAcks(); }

  int64_t trainerId() const { return trainerId_; }
  /// The step the next SEND_BARRIER closes; advanced by each SEND_BARRIER.
  int64_t step() const { return step_; }
  void advanceStep() { ++step_; }

private:
  struct Request {
    proto::MsgHeader header;
    const Tensor *tensor = nullptr;
    std::string endpoint;
    /// A payload the pserver reads from our memory: alive until it acknowledged.
    std::shared_ptr<std::byte> keep = {};
    /// A fetch's old value, which a reply in the pserver's memory is read into.
    Tensor readInto = {};
  };
  /// Collects outstanding acknowledgements, sends every request, then one reply per request.
  /// `timeout` 0 means the reply timeout.
  /// A sync pserver holds a step's fetches until every trainer closed the step, for up to its
  /// barrier timeout, and then answers with its own error (naming the trainer that is missing).
  /// Waiting longer than that lets the pserver's message, not a vaguer one, reach the user.
  std::chrono::milliseconds heldReplyTimeout() const { return timeouts_.reply + timeouts_.barrier; }
  llvm::Expected<std::vector<Message>> roundTrip(const std::vector<Request> &requests,
                                                 const char *what,
                                                 std::chrono::milliseconds timeout = {});
  /// Sends `r`, waiting at most `timeout` (0: the reply timeout) while the pserver takes none.
  llvm::Error sendRequest(const Request &r, const char *what,
                          std::chrono::milliseconds timeout = {});
  /// The frames of the next message from r's pserver, waiting at most `wait` (nullopt then).
  llvm::Expected<std::optional<Frames>> receiveFrom(const Request &r, const char *what,
                                                    std::chrono::milliseconds wait);
  /// Waits for the reply to `r` (timeout, signals and dropped pservers end the wait).
  llvm::Expected<Message> awaitReply(const Request &r, const char *what,
                                     std::chrono::milliseconds timeout);
  /// Waits for the acknowledgements of the sends issued without waiting.
  llvm::Error drainAcks();
  /// Where a direct link reaches `endpoint`, without libzmq's I/O thread: a pserver of this
  /// host, at its local IPC name; null with CURVE, for other hosts, or with OAR_DIRECT_LINKS=0
  /// (a DEALER then).
  const std::string *linkAddress(const std::string &endpoint);
  /// The channel to r's pserver, opened (a link, else a DEALER) if there is none.
  llvm::Expected<Channel *> channelFor(const Request &r, const char *what);

  /// Closes the channel to `endpoint` (replies still queued on it go with it); the next request
  /// opens a fresh one, which must say HELLO first.
  void closeConnection(const std::string &endpoint);
  std::string who() const;
  /// An error if a pserver we still need has closed its connection (e.g. it was killed): a
  /// trainer blocked on a healthy pserver can then name the one that is gone.
  llvm::Error checkDisconnects(const char *what, const Request &waitingOn);

  struct Connection {
    std::unique_ptr<Channel> channel;
    bool connected = false; ///< a reply came back: disconnects matter from now
    bool completed = false; ///< we said `complete`: it may go away
    bool lost = false;    ///< it closed the connection before we completed: never wait on it again
    bool greeted = false; ///< it accepted our HELLO on this socket: it hears nothing else before
    pid_t pserverPid = 0; ///< its memory probe read back: we may read its replies there
    bool readsOurMemory = false; ///< it reads our large gradients from our memory
    /// Sync: where we write each large gradient in its memory (address, bytes), while its
    /// process runs.
    llvm::StringMap<std::pair<uint64_t, uint64_t>> landings;
    ProcessWatch pserverProcess;
  };
  /// Marks `c` (pserver `ep`) lost: the error it left queued, else "lost the connection".
  llvm::Error lostPserver(Connection &c, const std::string &ep, const char *what,
                          const Request &waitingOn);
  /// The error for a failed send or receive: "lost the connection" (and recovery) when the
  /// pserver left after answering us, as a dropped connection says.
  llvm::Error channelFailure(Connection &c, const Request &r, const char *what, llvm::Error err);

  int64_t trainerId_;
  std::vector<std::string> endpoints_;
  Timeouts timeouts_;
  CurveConfig curve_;
  std::function<bool()> shouldStop_;
  std::optional<JobIdentity> job_; ///< what connect() said HELLO with
  int64_t step_ = 0;
  int64_t highestStepSent_ = 0; ///< prefetches run one step ahead; `complete` must not go back
  std::atomic<int64_t> stopAfter_{-1}; ///< a pserver's stop_after, once one said it
  /// Sends a header of `kind` (no payload) to every pserver and waits for every reply.
  llvm::Error toEveryPserver(proto::MsgKind kind, const char *what);
  bool lastFailureWasRefusal_ = false; ///< the last roundTrip failed on a pserver's error reply
  /// ... which said the pserver went back to a checkpoint (it forgot our HELLO).
  bool lastRefusalWasRollback_ = false;
  ClientContext context_; ///< before the connections: their sockets close first
  std::map<std::string, Connection> connections_;
  llvm::StringMap<std::optional<std::string>> linkAddresses_; ///< linkAddress's answers
  std::vector<Request> unacked_; ///< sends whose acknowledgement is still to be read
  /// Payloads a pserver may still read from our memory after we stopped waiting for its
  /// acknowledgement: freed, their memory could hold other bytes by the time it reads.
  std::vector<std::shared_ptr<std::byte>> unackedAfterFailure_;
  /// Writes `r`'s gradient into its landing in the pserver's memory and marks `r` so; false
  /// when it has none or the write failed (then it goes another way).
  llvm::Expected<bool> landInPserver(Connection &c, Request &r);
  /// A SEND_VAR's payload on this host: written into its landing, else left for the pserver
  /// to read from `copy` (a copy of the gradient made here), else through the socket.
  llvm::Error placeGradient(Request &r, Tensor &copy);
  /// Takes what a pserver's HELLO reply says about reading each other's memory.
  void notePeerMemory(Connection &c, const Message &helloReply);
  /// Drops the outstanding acknowledgements, keeping their payloads (see above).
  void forgetUnacked();
  /// Counts the round trips of fetches (a pserver lets go of what an earlier round read).
  uint64_t fetchRound_ = 0;
  /// A GET_VAR of `var` from `endpoint` for `step`, in fetch round fetchRound_; the reply may
  /// come through peer memory.
  Request getVarRequest(const std::string &var, const std::string &endpoint, int64_t step);
  /// `old` when a reply to `r` that lies in the pserver's memory may be read into its buffer.
  static Tensor reusableBuffer(const Request &r, const Tensor &old);
  std::map<std::string, Message> prefetched_; ///< GET_VAR replies read with a SEND_BARRIER
  static constexpr size_t kMaxUnacked = 256;
  bool pserversCheckpoint_ = false, needsRecovery_ = false;
  bool reconnecting_ = false; ///< in reconnect(): async keeps its step
  /// The HELLO that opens a connection to pserver `endpoint`: this trainer's job, at `step`,
  /// and our memory probe when the pserver is on this host.
  proto::MsgHeader helloHeader(const JobIdentity &job, int64_t step,
                               const std::string &endpoint) const;
  /// Checkpointing pservers: the HELLOs of connect() found them at different steps, or a
  /// reconnect; all go back to the lowest.
  llvm::Error alignCheckpointSteps(const JobIdentity &job,
                                   const std::map<std::string, int64_t> &steps);
};

} // namespace oar::runtime
