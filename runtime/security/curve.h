// CURVE keys: ZeroMQ's public-key authentication and encryption between trainers and pservers.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {
class OptionTable; // support/option_table.h
}

namespace oar::runtime {

/// A CURVE key pair as Z85 text (40 characters each).
struct CurveKeyPair {
  std::string publicKey, secretKey;
};

/// A node's CURVE setup; empty (`own` unset) means unauthenticated plain TCP. A pserver needs
/// `own` and `allowed` (the trainers' public keys it accepts); a trainer needs `own` and
/// `serverKey` (the public key of the job's pservers, which share one key pair).
struct CurveConfig {
  std::optional<CurveKeyPair> own;
  std::string serverKey;
  std::set<std::string> allowed;
  bool enabled() const { return own.has_value(); }
};

/// The key files a node is given (--curve-secret, --curve-server-key, --curve-allow).
struct CurveFiles {
  std::string secret;    ///< this node's key pair (NAME.key); empty: no keys
  std::string serverKey; ///< trainers: the pservers' public key (their NAME.pub)
  std::string allow;     ///< pservers: the trainers' public keys to accept
  void declare(OptionTable &table);
  /// The CURVE setup the files hold (empty without a secret). Errors name the file.
  llvm::Expected<CurveConfig> load() const;
};

/// Whether this libzmq was built with CURVE (libsodium).
bool curveAvailable();

/// A fresh key pair from libzmq (libsodium's random source).
llvm::Expected<CurveKeyPair> newCurveKeyPair();

/// Writes `stem`.key (both keys, mode 0600) and `stem`.pub (the public key). Refuses to replace
/// either file: a key pair that others already trust is not overwritten by accident.
llvm::Error writeCurveKeyPair(const CurveKeyPair &keys, llvm::StringRef stem);

/// The key pair in a .key file (as oar-keygen writes it; CZMQ's zcert secret files read too).
/// Checks that the public key is the secret key's.
llvm::Expected<CurveKeyPair> readCurveSecretFile(llvm::StringRef path);

/// Every public key in a file: `public-key = "..."` lines (a .pub or .key file) or bare Z85 keys,
/// one per line; a line starting with `#` is a comment. At least one is required.
llvm::Expected<std::set<std::string>> readCurvePublicKeys(llvm::StringRef path);

/// The 32-byte key a Z85 key stands for; an error unless `z85` is a valid 40-character key.
llvm::Expected<std::string> decodeCurveKey(llvm::StringRef z85);

} // namespace oar::runtime
