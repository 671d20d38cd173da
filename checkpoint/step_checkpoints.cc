// Step checkpoints: atomic directories with a MANIFEST.
#include "checkpoint/step_checkpoints.h"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include "executor/save_set.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace oar {

namespace {

constexpr const char *kManifest = "MANIFEST";

/// Syncs `root` and every directory under it, deepest first, so each new name is on disk.
void syncTree(const std::string &root) {
  std::vector<std::string> dirs{root};
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end; it != end && !ec;
       it.increment(ec))
    if (it->type() == llvm::sys::fs::file_type::directory_file)
      dirs.push_back(it->path());
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d)
    syncDirectory(*d);
}

/// Every file under `root`, relative to it, with its size.
std::vector<std::pair<std::string, uint64_t>> filesUnder(const std::string &root) {
  std::vector<std::pair<std::string, uint64_t>> files;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::sys::fs::file_status st;
    if (llvm::sys::fs::status(it->path(), st) ||
        st.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    std::string rel = llvm::StringRef(it->path()).drop_front(root.size() + 1).str();
    if (rel != kManifest)
      files.push_back({rel, st.getSize()});
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// The CRC-32 of a file's bytes (zlib's), or an error naming it.
llvm::Expected<uint32_t> fileCrc(const std::string &path) {
  auto buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("{0}: cannot read: {1}", path, buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes a 32-bit length: 1 GiB a call.
  for (size_t at = 0; at < bytes.size(); at += size_t(1) << 30) {
    size_t n = std::min(bytes.size() - at, size_t(1) << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef *>(bytes.data() + at), static_cast<uInt>(n));
  }
  return static_cast<uint32_t>(crc);
}

} // namespace

llvm::Error verifyCheckpointFiles(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path + "/" + kManifest, /*IsText=*/true);
  if (!buffer)
    return makeError("{0}/{1}: cannot read: {2}", path, kManifest, buffer.getError().message());
  llvm::SmallVector<llvm::StringRef, 32> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    auto [kind, rest] = line.split(' ');
    if (kind != "crc32")
      continue;
    auto [name, hex] = rest.rsplit(' ');
    uint32_t want = 0;
    if (hex.getAsInteger(16, want))
      return makeError("{0}/{1}: bad line \"{2}\"", path, kManifest, line);
    std::string file = path + "/" + name.str();
    auto got = fileCrc(file);
    if (!got)
      return got.takeError();
    if (*got != want)
      return makeError("{0}: its bytes do not match the checksum in {1} (CRC-32 {2:x-8}, recorded "
                       "{3:x-8}): the file was damaged after it was written; the checkpoint is "
                       "not loaded",
                       file, kManifest, *got, want);
  }
  return llvm::Error::success();
}

std::vector<int64_t> checkpointSteps(const std::string &dir) {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int64_t step = 0;
    if (name.consume_front("step-") && !name.getAsInteger(10, step) && step >= 0)
      steps.push_back(step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

std::optional<CheckpointManifest> readCompleteCheckpoint(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path + "/" + kManifest, /*IsText=*/true);
  if (!buffer)
    return std::nullopt;
  llvm::SmallVector<llvm::StringRef, 32> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.size() < 2 || lines[0] != "oar-checkpoint 1" || !lines[1].startswith("plan "))
    return std::nullopt;
  CheckpointManifest m;
  m.digest = lines[1].drop_front(5).str();
  std::vector<std::pair<std::string, uint64_t>> listed;
  for (size_t i = 2; i < lines.size(); ++i) {
    auto [kind, rest] = lines[i].split(' ');
    if (kind == "field") {
      auto [key, value] = rest.split(' ');
      m.fields[key.str()] = value.str();
      continue;
    }
    if (kind == "crc32") // checked by verifyCheckpointFiles, before a load
      continue;
    auto [name, size] = rest.rsplit(' ');
    uint64_t bytes = 0;
    if (kind != "file" || size.getAsInteger(10, bytes))
      return std::nullopt;
    listed.push_back({name.str(), bytes});
  }
  std::sort(listed.begin(), listed.end());
  if (listed.empty() || listed != filesUnder(path))
    return std::nullopt;
  return m;
}

void StepCheckpoints::dropAfter(int64_t step) {
  bool dropped = false;
  for (int64_t s : checkpointSteps(dir_))
    if (s > step) {
      llvm::sys::fs::remove_directories(pathOf(s));
      dropped = true;
    }
  if (dropped)
    syncDirectory(dir_);
}

std::string StepCheckpoints::pathOf(int64_t step) const {
  return dir_ + "/step-" + std::to_string(step);
}

std::optional<CheckpointManifest> StepCheckpoints::manifest(int64_t step) const {
  std::optional<CheckpointManifest> m = readCompleteCheckpoint(pathOf(step));
  if (!m || m->digest != digest_)
    return std::nullopt;
  return m;
}

std::optional<int64_t> StepCheckpoints::latest() const {
  for (int64_t step : checkpointSteps(dir_))
    if (manifest(step))
      return step;
  return std::nullopt;
}

llvm::Error StepCheckpoints::write(int64_t step,
                                   llvm::function_ref<llvm::Error(const std::string &)> fill,
                                   const std::map<std::string, std::string> &fields) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir_))
    return makeError("{0}: cannot create the checkpoint directory: {1}", dir_, ec.message());
  std::string final = pathOf(step);
  std::string tmp = llvm::formatv("{0}/.step-{1}.tmp-{2}", dir_, step, getpid()).str();
  llvm::sys::fs::remove_directories(tmp);
  if (std::error_code ec = llvm::sys::fs::create_directories(tmp))
    return makeError("{0}: cannot create: {1}", tmp, ec.message());
  if (llvm::Error err = fill(tmp)) {
    llvm::sys::fs::remove_directories(tmp);
    return err;
  }
  std::string text = "oar-checkpoint 1\nplan " + digest_ + "\n";
  for (const auto &[key, value] : fields)
    text += "field " + key + " " + value + "\n";
  for (const auto &[name, bytes] : filesUnder(tmp)) {
    auto crc = fileCrc(tmp + "/" + name); // read back from the page cache, just written
    if (!crc) {
      llvm::sys::fs::remove_directories(tmp);
      return crc.takeError();
    }
    text += "file " + name + " " + std::to_string(bytes) + "\n";
    text += llvm::formatv("crc32 {0} {1:x-8}\n", name, *crc).str();
  }
  std::string manifestPath = tmp + "/" + kManifest;
  if (llvm::Error err = writeTextSynced(manifestPath, manifestPath, "", text)) {
    llvm::sys::fs::remove_directories(tmp);
    return err;
  }
  syncTree(tmp);
  llvm::sys::fs::remove_directories(final); // a torn one of the same step, from before a restart
  if (std::error_code ec = llvm::sys::fs::rename(tmp, final))
    return makeError("{0}: cannot rename to {1}: {2}", tmp, final, ec.message());
  syncDirectory(dir_);
  // Keep the newest `keep_` complete ones; drop the rest, anything torn and the temporaries
  // of writers killed before their rename.
  int kept = 0;
  for (int64_t s : checkpointSteps(dir_))
    if (!manifest(s) || ++kept > keep_)
      llvm::sys::fs::remove_directories(pathOf(s));
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir_, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::StringRef name = llvm::sys::path::filename(it->path());
        name.startswith(".step-") && name.contains(".tmp-"))
      llvm::sys::fs::remove_directories(it->path());
  return llvm::Error::success();
}

} // namespace oar
