// Placing a node from its flags and its environment.
#include "runtime/node/node_place.h"

#include "runtime/collective/local_address.h"
#include "support/env_names.h"
#include "support/error.h"

namespace oar::runtime {

namespace {

/// The flags given, over the environment's spec.
llvm::Error applyPlaceFlags(const NodePlace &p, ClusterSpec &c) {
  if (p.role) {
    auto parsed = parseRole(*p.role); // "" (Role::None): one machine, as before a role
    if (!parsed) {
      llvm::consumeError(parsed.takeError());
      return makeError("--role \"{0}\" must be trainer, pserver or scheduler", *p.role);
    }
    c.role = *parsed;
  }
  if (p.trainerId)
    c.trainerId = *p.trainerId;
  if (p.trainers)
    c.trainers = *p.trainers;
  else if (c.trainers == 0)
    c.trainers = 1;
  if (p.pservers)
    c.pservers = splitEndpoints(*p.pservers);
  if (p.endpoint)
    c.currentEndpoint = *p.endpoint;
  if (p.scheduler)
    c.scheduler = *p.scheduler;
  if (p.pserverCount)
    c.pserverCount = *p.pserverCount;
  if (!c.scheduler.empty() && c.role == Role::Trainer && p.trainerId)
    c.askedId = *p.trainerId;
  if (!c.scheduler.empty() && c.role == Role::Pserver && p.pserverId)
    c.askedId = *p.pserverId;
  return llvm::Error::success();
}

} // namespace

llvm::Expected<ClusterSpec> placeNode(const NodeOptions &options, const GetEnv &getenv) {
  if (options.loadStep && options.loadDir.empty())
    return makeError("--step {0} picks a checkpoint step of --load DIR: give --load",
                     *options.loadStep);
  auto spec = clusterFromEnv(getenv);
  if (!spec)
    return spec.takeError();
  ClusterSpec &c = *spec;
  if (llvm::Error err = applyPlaceFlags(options.place, c))
    return std::move(err);
  // A collective job's ranks all train; a PS job's first --pserver-count ranks serve.
  bool collective = options.config.mode == Mode::Collective;
  if (c.mpiRank >= 0 || useSlurmRank(c, collective)) {
    if (collective)
      placeCollectiveRank(c);
    else if (llvm::Error err = placeMpiRank(c))
      return std::move(err);
  }
  c.trainersMeet = collective || options.config.hybrid;
  return spec;
}

llvm::Error placeCollectiveTrainer(Node &node, const GetEnv &getenv) {
  const ClusterSpec &c = node.cluster;
  const std::string &given = node.options.place.rendezvous;
  node.rendezvous = !given.empty()               ? given
                    : c.trainerEndpoints.empty() ? std::string()
                                                 : c.trainerEndpoints.front();
  if (node.rendezvous.empty())
    return makeError("trainer {0}: a collective trainer needs trainer 0's address: "
                     "--rendezvous HOST:PORT, PADDLE_TRAINER_ENDPOINTS or TF_CONFIG",
                     c.trainerId);
  std::string own = c.currentEndpoint;
  if (own.empty() && c.trainerId >= 0 && size_t(c.trainerId) < c.trainerEndpoints.size())
    own = c.trainerEndpoints[c.trainerId];
  std::string host = llvm::StringRef(own).rsplit(':').first.str();
  if (own.empty()) { // OAR_NODE_HOST, else the address this host reaches trainer 0's from
    const char *named = getenv(env::kOarNodeHost);
    if (named && *named)
      host = named;
    else if (llvm::Error err =
                 localAddressToward(llvm::StringRef(node.rendezvous).rsplit(':').first.str())
                     .moveInto(host))
      return makeError("trainer {0}: {1}; give its own address (--endpoint, "
                       "PADDLE_CURRENT_ENDPOINT or OAR_NODE_HOST)",
                       c.trainerId, llvm::toString(std::move(err)));
  }
  node.collectiveHost = host;
  return llvm::Error::success();
}

} // namespace oar::runtime
