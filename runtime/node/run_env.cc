// The distributed ops' access to the runtime.
#include "runtime/node/run_env.h"

#include "support/error.h"

namespace oar::runtime {

llvm::Expected<RunEnv *> envOf(KernelContext &ctx, bool needComm) {
  auto *env = dynamic_cast<RunEnv *>(ctx.env());
  if (!env || (needComm && !env->comm))
    return makeError("{0} needs the distributed runtime: run this program with oar-executor as "
                     "part of a job (oar-launch, or --role)",
                     ctx.op().type());
  return env;
}

} // namespace oar::runtime
