// A node's CURVE setup from its key files.
#include "runtime/security/curve.h"

#include "support/error.h"
#include "support/option_table.h"

namespace oar::runtime {

void CurveFiles::declare(OptionTable &t) {
  t.add("curve-secret", secret, "FILE", "this node's key pair (NAME.key from oar-keygen)");
  t.add("curve-server-key", serverKey, "FILE",
        "trainers: the pservers' public key (their NAME.pub)");
  t.add("curve-allow", allow, "FILE",
        "pservers: the trainers' public keys to accept (.pub files joined, or one per line)");
}

llvm::Expected<CurveConfig> CurveFiles::load() const {
  CurveConfig curve;
  if (secret.empty()) {
    if (!serverKey.empty() || !allow.empty())
      return makeError("--curve-server-key and --curve-allow need --curve-secret (this node's own "
                       "key pair)");
    return curve;
  }
  auto own = readCurveSecretFile(secret);
  if (!own)
    return own.takeError();
  curve.own = std::move(*own);
  if (!serverKey.empty()) {
    auto keys = readCurvePublicKeys(serverKey);
    if (!keys)
      return keys.takeError();
    if (keys->size() != 1)
      return makeError("{0}: holds {1} public keys; the pservers share one key pair", serverKey,
                       keys->size());
    curve.serverKey = *keys->begin();
  }
  if (!allow.empty()) {
    auto keys = readCurvePublicKeys(allow);
    if (!keys)
      return keys.takeError();
    curve.allowed = std::move(*keys);
  }
  return curve;
}

} // namespace oar::runtime
