// libFuzzer target: the scheduler's messages and what it does with them. The input is a run of
// messages, each: a byte naming its sender (connection 0-7, and which CURVE key it holds: none,
// the pservers', a trainer's, another), a 2-byte little-endian length, and that many bytes of
// the message. A 1 x 2 job (with CURVE keys when the first byte is odd) takes them as the
// scheduler does: registrations until it is full, then heartbeats, leaves and (elastic) late
// trainers. Whatever comes, the ids it gives must be in range and unique per role, every
// pserver must have an endpoint, every member must hold its role's key, a late trainer must get
// a new id, and no more than --max-trainers trainers may run at once.
#include <cstdlib>
#include <map>
#include <set>

#include "runtime/cluster/scheduler_membership.h"

using namespace oar::runtime;

static void require(bool ok) {
  if (!ok)
    std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  SchedulerOptions opts;
  opts.pservers = 1, opts.trainers = 2, opts.elastic = true, opts.settings.maxTrainers = 3;
  const std::string pserverKey(40, 'P'), trainerKey(40, 'T'), otherKey(40, 'O');
  if (data[0] & 1) {
    opts.curve.own = CurveKeyPair{pserverKey, std::string(40, 'S')};
    opts.curve.allowed = {trainerKey};
  }
  SchedulerMembership members(opts);
  bool assigned = false;
  std::map<std::string, std::string> keyOf; // each member's connection -> the key it held
  // With keys, a member holds its role's key: the pservers' for a pserver, a listed one for a
  // trainer (the check that keeps a trainer's key out of the pservers' list).
  auto requireRoleKey = [&](const std::string &identity, const std::string &role) {
    if (opts.curve.enabled())
      require(keyOf[identity] == (role == "pserver" ? pserverKey : trainerKey));
  };
  for (size_t at = 1; at + 3 <= size;) {
    uint8_t sender = data[at];
    size_t len = std::min<size_t>(data[at + 1] | data[at + 2] << 8, size - at - 3);
    at += 3;
    std::optional<oar::proto::SchedMsg> msg = parseSchedMsg(data + at, len);
    at += len;
    if (!msg)
      continue;
    std::string identity(1, static_cast<char>('a' + (sender & 7)));
    const std::string keys[] = {"", pserverKey, trainerKey, otherKey};
    const std::string &key = keys[(sender >> 3) & 3];
    if (!assigned) {
      if (msg->kind() != oar::proto::REGISTER ||
          !members.registrationRefusal(identity, *msg, key).empty())
        continue;
      members.add(identity, *msg);
      keyOf[identity] = key;
      requireRoleKey(identity, msg->role());
      if (!members.full())
        continue;
      members.assignIds();
      assigned = true;
      std::set<std::pair<oar::Role, int64_t>> ids;
      for (const Member &m : members.members()) {
        int64_t count = m.role == oar::Role::Pserver ? opts.pservers : opts.trainers;
        require(m.id >= 0 && m.id < count);
        require(ids.insert({m.role, m.id}).second);
      }
      for (const std::string &endpoint : members.pserverEndpoints())
        require(!endpoint.empty());
      continue;
    }
    Member *m = members.memberOf(identity);
    if (!m && msg->kind() == oar::proto::REGISTER && msg->role() == "trainer" &&
        members.lateRefusal(*msg, key).empty()) {
      int64_t highest = -1;
      for (const Member &other : members.members())
        if (other.role == oar::Role::Trainer)
          highest = std::max(highest, other.id);
      require(members.runningTrainers() < opts.settings.maxTrainers);
      require(members.addLate(identity).id == highest + 1);
      keyOf[identity] = key;
      requireRoleKey(identity, "trainer");
    } else if (m && msg->kind() == oar::proto::LEAVE) {
      m->left = true;
    }
  }
  return 0;
}
