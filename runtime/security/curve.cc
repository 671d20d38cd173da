// CURVE key files.
#include "runtime/security/curve.h"

#include <cstdio>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>
#include <zmq.h>

#include "support/error.h"
#include "llvm/Support/MemoryBuffer.h"

namespace oar::runtime {

namespace {

constexpr size_t kZ85KeyChars = 40, kBinaryKeyBytes = 32;

/// One `name = "value"` line (CZMQ's zcert writes them indented under a section), or nothing.
std::optional<llvm::StringRef> field(llvm::StringRef line, llvm::StringRef name) {
  line = line.trim();
  if (!line.consume_front(name))
    return std::nullopt;
  line = line.ltrim();
  if (!line.consume_front("="))
    return std::nullopt;
  line = line.trim();
  if (line.size() >= 2 && line.front() == '"' && line.back() == '"')
    line = line.drop_front().drop_back();
  return line;
}

/// The lines of a key file, with their numbers, comments dropped.
llvm::Expected<std::vector<std::pair<int, llvm::StringRef>>> keyLines(llvm::StringRef path,
                                                                      std::string &storage) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return makeError("{0}: cannot read: {1}", path, buffer.getError().message());
  if ((*buffer)->getBufferSize() > 1 << 20)
    return makeError("{0}: {1} bytes is too big for a key file", path, (*buffer)->getBufferSize());
  storage = (*buffer)->getBuffer().str();
  std::vector<std::pair<int, llvm::StringRef>> lines;
  llvm::SmallVector<llvm::StringRef, 16> raw;
  llvm::StringRef(storage).split(raw, '\n');
  for (size_t i = 0; i < raw.size(); ++i) {
    llvm::StringRef line = raw[i].trim(); // '#' is a Z85 digit: comments are whole lines
    if (!line.empty() && !line.startswith("#"))
      lines.push_back({static_cast<int>(i + 1), line});
  }
  return lines;
}

llvm::Error checkKey(llvm::StringRef path, int line, llvm::StringRef key) {
  if (auto bytes = decodeCurveKey(key); !bytes)
    return makeError("{0}:{1}: {2}", path, line, llvm::toString(bytes.takeError()));
  return llvm::Error::success();
}

llvm::Error writeFileOnce(const std::string &path, const std::string &text, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    return makeError("{0}: cannot create: {1}{2}", path, strerror(errno),
                     errno == EEXIST ? " (remove it first to replace the key pair)" : "");
  bool ok =
      write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  int err = errno;
  close(fd);
  if (!ok) {
    unlink(path.c_str());
    return makeError("{0}: cannot write: {1}", path, strerror(err));
  }
  return llvm::Error::success();
}

} // namespace

bool curveAvailable() { return zmq_has("curve") == 1; }

llvm::Expected<std::string> decodeCurveKey(llvm::StringRef z85) {
  if (z85.size() != kZ85KeyChars)
    return makeError("a CURVE key is 40 Z85 characters, not {0}", z85.size());
  std::string text = z85.str(), bytes(kBinaryKeyBytes, '\0');
  if (!zmq_z85_decode(reinterpret_cast<uint8_t *>(bytes.data()), text.c_str()))
    return makeError("\"{0}\" is not a Z85 CURVE key", z85);
  return bytes;
}

llvm::Expected<CurveKeyPair> newCurveKeyPair() {
  if (!curveAvailable())
    return makeError("this libzmq was built without CURVE support (libsodium)");
  char pub[kZ85KeyChars + 1], secret[kZ85KeyChars + 1];
  if (zmq_curve_keypair(pub, secret) != 0)
    return makeError("cannot make a CURVE key pair: {0}", zmq_strerror(zmq_errno()));
  return CurveKeyPair{pub, secret};
}

llvm::Error writeCurveKeyPair(const CurveKeyPair &keys, llvm::StringRef stem) {
  std::string pub = "# oar CURVE public key (ZeroMQ Z85): give it to the peers that must trust "
                    "this node\npublic-key = \"" +
                    keys.publicKey + "\"\n";
  std::string secret =
      "# oar CURVE secret key (ZeroMQ Z85): whoever reads this file can act as this node\n"
      "public-key = \"" +
      keys.publicKey + "\"\nsecret-key = \"" + keys.secretKey + "\"\n";
  if (llvm::Error err = writeFileOnce(stem.str() + ".key", secret, 0600))
    return err;
  return writeFileOnce(stem.str() + ".pub", pub, 0644);
}

llvm::Expected<CurveKeyPair> readCurveSecretFile(llvm::StringRef path) {
  std::string storage;
  auto lines = keyLines(path, storage);
  if (!lines)
    return lines.takeError();
  CurveKeyPair keys;
  int publicLine = 0;
  for (auto [number, line] : *lines) {
    if (auto value = field(line, "secret-key")) {
      if (llvm::Error err = checkKey(path, number, *value))
        return err;
      keys.secretKey = value->str();
    } else if (auto value = field(line, "public-key")) {
      if (llvm::Error err = checkKey(path, number, *value))
        return err;
      keys.publicKey = value->str(), publicLine = number;
    }
  }
  if (keys.secretKey.empty())
    return makeError("{0}: no secret-key line: a secret key file comes from oar-keygen (NAME.key)",
                     path);
  char derived[kZ85KeyChars + 1];
  if (zmq_curve_public(derived, keys.secretKey.c_str()) != 0)
    return makeError("{0}: cannot derive the public key: {1}", path, zmq_strerror(zmq_errno()));
  if (keys.publicKey.empty())
    keys.publicKey = derived;
  else if (keys.publicKey != derived)
    return makeError("{0}:{1}: the public key is not the secret key's", path, publicLine);
  // As ssh does with a private key: a secret others can read is no secret.
  struct stat st;
  if (::stat(path.str().c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%o", static_cast<unsigned>(st.st_mode & 0777));
    return makeError("{0}: the secret key file is readable by others (mode {1}): chmod 600 it, "
                     "or make a new pair with oar-keygen if others may have read it",
                     path, mode);
  }
  return keys;
}

llvm::Expected<std::set<std::string>> readCurvePublicKeys(llvm::StringRef path) {
  std::string storage;
  auto lines = keyLines(path, storage);
  if (!lines)
    return lines.takeError();
  std::set<std::string> keys;
  for (auto [number, line] : *lines) {
    if (field(line, "secret-key"))
      continue; // a .key file names its public key too
    std::optional<llvm::StringRef> value = field(line, "public-key");
    if (!value && line.size() == kZ85KeyChars && !line.contains(' '))
      value = line; // a bare key ('=' is a Z85 digit too)
    if (!value)
      continue; // CZMQ metadata sections and the like
    if (llvm::Error err = checkKey(path, number, *value))
      return err;
    keys.insert(value->str());
  }
  if (keys.empty())
    return makeError("{0}: no public key in it (lines `public-key = \"...\"` or bare Z85 keys)",
                     path);
  return keys;
}

} // namespace oar::runtime
