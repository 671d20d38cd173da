// Which registrations the scheduler takes and the ids it gives.
#include "runtime/cluster/scheduler_membership.h"

#include "runtime/wire/protocol.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

/// What a peer names goes into log lines: printable text only.
static bool printable(llvm::StringRef s) { return llvm::all_of(s, llvm::isPrint); }

std::optional<proto::SchedMsg> parseSchedMsg(const void *bytes, size_t size) {
  proto::SchedMsg msg;
  if (size > static_cast<size_t>(kMaxSchedMessage) ||
      !msg.ParseFromArray(bytes, static_cast<int>(size)) || msg.version() != kProtocolVersion)
    return std::nullopt;
  return msg;
}

std::string Member::name() const { return llvm::formatv("{0} {1}", roleName(role), id).str(); }

std::string SchedulerMembership::keyRefusal(Role role, const std::string &key) const {
  if (!opts_.curve.enabled())
    return "";
  if (role == Role::Pserver && key != opts_.curve.own->publicKey)
    return "a pserver must authenticate with the pservers' key, and this peer's key is not it";
  if (role == Role::Trainer && !opts_.curve.allowed.count(key))
    return "a trainer must authenticate with a trainer's key, and this peer's key is not one";
  return "";
}

std::string SchedulerMembership::registrationRefusal(const std::string &identity,
                                                     const proto::SchedMsg &msg,
                                                     const std::string &key) const {
  auto parsed = parseRole(msg.role());
  if (!parsed || (*parsed != Role::Pserver && *parsed != Role::Trainer)) {
    llvm::consumeError(parsed.takeError());
    return "a role that is neither pserver nor trainer";
  }
  Role role = *parsed;
  for (const Member &m : members_)
    if (m.identity == identity) // one node a connection: no peer holds two places
      return "this connection registered as " + roleName(m.role).str() + " already";
  if (std::string why = keyRefusal(role, key); !why.empty())
    return why;
  if (!printable(msg.job_id()) || !printable(msg.endpoint()))
    return "a launch id or endpoint that is not printable text";
  // Without a launch id of its own, the scheduler takes the first accepted node's. Checked
  // before the counts: a node of another launch is refused, never taken for one of this job.
  if (msg.job_id() != jobId_ && !(jobId_.empty() && members_.empty()))
    return llvm::formatv("this node belongs to launch \"{0}\", the scheduler to another",
                         msg.job_id())
        .str();
  if (std::string why = countsRefusal(msg); !why.empty())
    return why;
  int64_t wanted = role == Role::Pserver ? opts_.pservers : opts_.trainers;
  int64_t have = llvm::count_if(members_, [&](const Member &m) { return m.role == role; });
  if (have >= wanted)
    return llvm::formatv("the job has all its {0} {1}(s) already", wanted, roleName(role)).str();
  if (msg.id() < -1 || msg.id() >= wanted)
    return llvm::formatv("{0} id {1} is out of range (the job has {2})", roleName(role), msg.id(),
                         wanted)
        .str();
  for (const Member &m : members_)
    if (m.role == role && msg.id() >= 0 && m.askedId == msg.id())
      return llvm::formatv("{0} {1} has registered already", roleName(role), msg.id()).str();
  if (role == Role::Pserver) {
    auto [host, port] = llvm::StringRef(msg.endpoint()).rsplit(':');
    unsigned number = 0;
    if (host.empty() || port.getAsInteger(10, number) || number == 0 || number > 65535)
      return "a pserver must say the endpoint it serves, as host:port";
  }
  for (const Member &m : members_)
    if (!msg.endpoint().empty() && m.endpoint == msg.endpoint())
      return "endpoint " + msg.endpoint() + " is another " + roleName(m.role).str() + "'s";
  return "";
}

std::string SchedulerMembership::countsRefusal(const proto::SchedMsg &msg) const {
  if (msg.pservers_count() == opts_.pservers && msg.trainers_count() == opts_.trainers)
    return "";
  return llvm::formatv("this node was started for {0} pserver(s) and {1} trainer(s), the "
                       "scheduler for {2} and {3}",
                       msg.pservers_count(), msg.trainers_count(), opts_.pservers, opts_.trainers)
      .str();
}

void SchedulerMembership::add(const std::string &identity, const proto::SchedMsg &msg) {
  if (members_.empty() && jobId_.empty())
    jobId_ = msg.job_id();
  Member m;
  m.identity = identity;
  m.role = llvm::cantFail(parseRole(msg.role())); // registrationRefusal passed it
  m.askedId = msg.id();
  m.endpoint = msg.endpoint();
  members_.push_back(m);
}

bool SchedulerMembership::full() const {
  return static_cast<int64_t>(members_.size()) >= opts_.pservers + opts_.trainers;
}

void SchedulerMembership::assignIds() {
  for (Role role : {Role::Pserver, Role::Trainer}) {
    std::vector<bool> taken(role == Role::Pserver ? opts_.pservers : opts_.trainers);
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

std::string SchedulerMembership::lateRefusal(const proto::SchedMsg &msg,
                                             const std::string &key) const {
  if (std::string why = keyRefusal(Role::Trainer, key); !why.empty())
    return why;
  if (msg.pservers_count() != opts_.pservers || msg.trainers_count() != opts_.trainers)
    return "this node was started for other counts than the job's";
  if (!printable(msg.job_id()) || msg.job_id() != jobId_)
    return "this node belongs to another launch";
  if (runningTrainers() >= opts_.settings.maxTrainers)
    return llvm::formatv("the job runs its most trainers already ({0}, --max-trainers)",
                         opts_.settings.maxTrainers)
        .str();
  return "";
}

Member &SchedulerMembership::addLate(const std::string &identity) {
  Member m;
  m.identity = identity;
  m.role = Role::Trainer;
  for (const Member &other : members_)
    if (other.role == Role::Trainer)
      m.id = std::max(m.id, other.id + 1);
  members_.push_back(m);
  return members_.back();
}

std::vector<std::string> SchedulerMembership::pserverEndpoints() const {
  std::vector<std::string> endpoints(opts_.pservers);
  for (const Member &m : members_)
    if (m.role == Role::Pserver)
      endpoints[m.id] = m.endpoint;
  return endpoints;
}

std::vector<std::string> SchedulerMembership::trainerEndpoints() const {
  std::vector<std::string> endpoints;
  for (const Member &m : members_)
    if (m.role == Role::Trainer && !m.endpoint.empty() && m.id >= 0) {
      if (endpoints.size() <= static_cast<size_t>(m.id))
        endpoints.resize(static_cast<size_t>(m.id) + 1);
      endpoints[m.id] = m.endpoint;
    }
  return endpoints;
}

std::string SchedulerMembership::registeredSoFar() const {
  int64_t ps = llvm::count_if(members_, [](const Member &m) { return m.role == Role::Pserver; });
  return llvm::formatv("only {0} of {1} pserver(s) and {2} of {3} trainer(s)", ps, opts_.pservers,
                       members_.size() - ps, opts_.trainers)
      .str();
}

int64_t SchedulerMembership::runningTrainers() const {
  return llvm::count_if(
      members_, [](const Member &m) { return m.role == Role::Trainer && !m.left && !m.gone; });
}

Member *SchedulerMembership::memberOf(const std::string &identity) {
  for (Member &m : members_)
    if (m.identity == identity)
      return &m;
  return nullptr;
}

} // namespace oar::runtime
