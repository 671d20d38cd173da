// Building scheduler messages.
#include "runtime/cluster/scheduler_messages.h"

#include "runtime/wire/protocol.h"

namespace oar::runtime {

proto::SchedMsg schedMessage(proto::SchedKind kind) {
  proto::SchedMsg msg;
  msg.set_version(kProtocolVersion);
  msg.set_kind(kind);
  return msg;
}

proto::SchedMsg registerMessage(Role role, int64_t askedId, const std::string &endpoint,
                                const std::string &jobId, int64_t pservers, int64_t trainers) {
  proto::SchedMsg msg = schedMessage(proto::REGISTER);
  msg.set_role(roleName(role).str());
  msg.set_id(askedId);
  msg.set_endpoint(endpoint);
  msg.set_job_id(jobId);
  msg.set_pservers_count(pservers);
  msg.set_trainers_count(trainers);
  return msg;
}

proto::SchedMsg assignMessage(const Assignment &a) {
  proto::SchedMsg msg = schedMessage(proto::ASSIGN);
  msg.set_role(roleName(a.role).str());
  msg.set_id(a.id);
  msg.set_job_id(a.jobId);
  msg.set_pservers_count(a.pservers);
  msg.set_trainers_count(a.trainers);
  msg.set_heartbeat_timeout_ms(a.heartbeatTimeoutMs);
  for (const std::string &ep : a.pserverEndpoints)
    msg.add_pservers(ep);
  for (const std::string &ep : a.trainerEndpoints)
    msg.add_trainers(ep);
  return msg;
}

proto::SchedMsg errorMessage(const std::string &why) {
  proto::SchedMsg msg = schedMessage(proto::SCHED_ERROR);
  msg.set_error(why);
  return msg;
}

proto::SchedMsg nodeGoneMessage(Role role, int64_t id, const std::string &endpoint,
                                const std::string &why) {
  proto::SchedMsg msg = schedMessage(proto::NODE_GONE);
  msg.set_role(roleName(role).str());
  msg.set_id(id);
  msg.set_endpoint(endpoint);
  msg.set_error(why);
  return msg;
}

proto::SchedMsg leaveMessage(const std::string &error) {
  proto::SchedMsg msg = schedMessage(proto::LEAVE);
  msg.set_error(error);
  return msg;
}

} // namespace oar::runtime
