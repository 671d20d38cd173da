// A pserver's record of its trainers.
#include "runtime/pserver/trainer_slots.h"

#include "llvm/ADT/StringExtras.h"

namespace oar::runtime {

bool TrainerSlots::anyLive() const {
  for (const TrainerSlot &s : slots_)
    if (s.live())
      return true;
  return false;
}

void TrainerSlots::add(int64_t t) {
  size_t from = slots_.size();
  slots_.resize(static_cast<size_t>(t) + 1);
  for (size_t i = from; i + 1 < slots_.size(); ++i)
    slots_[i].completed = true;
}

std::string TrainerSlots::list(const std::vector<int64_t> &ids) {
  std::vector<std::string> s;
  for (int64_t t : ids)
    s.push_back(std::to_string(t));
  return llvm::join(s, ", ");
}

} // namespace oar::runtime
