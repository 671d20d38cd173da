// The timeouts' flags.
#include "runtime/wire/timeouts.h"

#include "support/option_table.h"

namespace oar::runtime {

void Timeouts::declare(OptionTable &t) {
  t.add("connect-timeout-ms", connect, "reaching a pserver");
  t.add("reply-timeout-ms", reply, "a pserver's reply");
  t.add("barrier-timeout-ms", barrier, "a pserver waiting for slow trainers");
  t.add("idle-timeout-ms", idle, "a pserver hearing from no trainer");
}

} // namespace oar::runtime
