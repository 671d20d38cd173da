// Pserver checkpoints.
#include "runtime/pserver_checkpoint.h"

#include <algorithm>
#include <fcntl.h>
#include <unistd.h>

#include "executor/trainer.h"
#include "ir/error.h"
#include "runtime/pserver_tables.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

namespace {

constexpr const char *kManifest = "MANIFEST";

/// Flushes a directory's entries (the names renamed or created in it) to disk.
void syncDirectory(const std::string &dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

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

/// The steps of the entries named step-<N> in `dir`, newest first.
std::vector<int64_t> stepsIn(const std::string &dir) {
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

} // namespace

std::string PserverCheckpoints::pathOf(int64_t step) const {
  return dir_ + "/step-" + std::to_string(step);
}

bool PserverCheckpoints::complete(const std::string &path) const {
  auto buffer = llvm::MemoryBuffer::getFile(path + "/" + kManifest, /*IsText=*/true);
  if (!buffer)
    return false;
  llvm::SmallVector<llvm::StringRef, 32> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.size() < 2 || lines[0] != "oar-checkpoint 1" || lines[1] != "plan " + digest_)
    return false;
  std::vector<std::pair<std::string, uint64_t>> listed;
  for (size_t i = 2; i < lines.size(); ++i) {
    auto [kind, rest] = lines[i].split(' ');
    auto [name, size] = rest.rsplit(' ');
    uint64_t bytes = 0;
    if (kind != "file" || size.getAsInteger(10, bytes))
      return false;
    listed.push_back({name.str(), bytes});
  }
  std::sort(listed.begin(), listed.end());
  return !listed.empty() && listed == filesUnder(path);
}

std::optional<int64_t> PserverCheckpoints::latest() const {
  for (int64_t step : stepsIn(dir_))
    if (complete(pathOf(step)))
      return step;
  return std::nullopt;
}

llvm::Error PserverCheckpoints::write(int64_t step, const proto::Program &program,
                                      const Scope &scope, const PserverTables &tables) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir_))
    return makeError("{0}: cannot create the checkpoint directory: {1}", dir_, ec.message());
  std::string final = pathOf(step);
  std::string tmp = llvm::formatv("{0}/.step-{1}.tmp-{2}", dir_, step, getpid()).str();
  llvm::sys::fs::remove_directories(tmp);
  if (llvm::Error err = savePersistables(program, scope, tmp)) // each file synced
    return err;
  if (tables.size() > 0)
    if (llvm::Error err = tables.save(tmp + "/tables"))
      return err;
  std::string manifest = "oar-checkpoint 1\nplan " + digest_ + "\n";
  for (const auto &[name, bytes] : filesUnder(tmp))
    manifest += "file " + name + " " + std::to_string(bytes) + "\n";
  std::string manifestPath = tmp + "/" + kManifest;
  int fd = open(manifestPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok =
      fd >= 0 &&
      ::write(fd, manifest.data(), manifest.size()) == static_cast<ssize_t>(manifest.size()) &&
      fsync(fd) == 0;
  int err = errno;
  if (fd >= 0)
    close(fd);
  if (!ok)
    return makeError("{0}: cannot write: {1}", manifestPath, strerror(err));
  syncTree(tmp);
  llvm::sys::fs::remove_directories(final); // a torn one of the same step, from before a restart
  if (std::error_code ec = llvm::sys::fs::rename(tmp, final))
    return makeError("{0}: cannot rename to {1}: {2}", tmp, final, ec.message());
  syncDirectory(dir_);
  // Keep the newest `keep_` complete ones; drop the rest, anything torn and the temporaries
  // of writers killed before their rename.
  int kept = 0;
  for (int64_t s : stepsIn(dir_))
    if (!complete(pathOf(s)) || ++kept > keep_)
      llvm::sys::fs::remove_directories(pathOf(s));
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir_, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::StringRef name = llvm::sys::path::filename(it->path());
        name.startswith(".step-") && name.contains(".tmp-"))
      llvm::sys::fs::remove_directories(it->path());
  return llvm::Error::success();
}

llvm::Error PserverCheckpoints::load(int64_t step, const proto::Program &program, Scope &scope,
                                     PserverTables &tables) const {
  std::string path = pathOf(step);
  if (!complete(path))
    return makeError("{0}: no complete checkpoint of step {1} for this job", path, step);
  if (auto loaded = loadPersistables(program, scope, path); !loaded)
    return loaded.takeError();
  if (tables.size() > 0)
    return tables.load(path + "/tables");
  return llvm::Error::success();
}

} // namespace oar::runtime
