// Saving a set of files atomically through a journal of renames.
#include "executor/save_set.h"

#include <fcntl.h>
#include <unistd.h>

#include "executor/npy.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace oar {

namespace {

constexpr llvm::StringLiteral kStaged = ".staged";
constexpr llvm::StringLiteral kJournalPrefix = ".oar-save.", kJournalSuffix = ".journal";

std::string join(llvm::StringRef dir, llvm::StringRef rel) { return (dir + "/" + rel).str(); }

/// Renames every staged file the journal lists over its file, syncs their directories and removes
/// the journal. A staged file already gone was renamed before (by this process before it was
/// killed, or by another reader of the directory).
llvm::Error replay(llvm::StringRef dir, llvm::StringRef journal,
                   const std::vector<std::string> &files) {
  llvm::SmallVector<std::string, 4> dirs;
  for (const std::string &rel : files) {
    std::string file = join(dir, rel), staged = file + kStaged.str();
    std::error_code ec = llvm::sys::fs::rename(staged, file);
    if (ec == std::errc::no_such_file_or_directory)
      continue;
    if (ec)
      return makeError("{0}: cannot put the saved file in place: {1}", file, ec.message());
    std::string parent = llvm::sys::path::parent_path(file).str();
    if (llvm::find(dirs, parent) == dirs.end())
      dirs.push_back(parent);
  }
  for (const std::string &d : dirs)
    syncDirectory(d);
  llvm::sys::fs::remove(journal);
  syncDirectory(dir);
  return llvm::Error::success();
}

} // namespace

void syncDirectory(llvm::StringRef dir) {
  int fd = open(dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

llvm::Error writeTextSynced(llvm::StringRef file, llvm::StringRef shown, llvm::StringRef what,
                            llvm::StringRef text) {
  std::string path = file.str();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            fsync(fd) == 0;
  int err = errno;
  if (fd >= 0)
    close(fd);
  if (ok)
    return llvm::Error::success();
  llvm::sys::fs::remove(path);
  return makeError("{0}: cannot write{1}: {2}", shown, what, strerror(err));
}

SaveSet::~SaveSet() {
  if (!committed_)
    for (const std::string &rel : files_)
      llvm::sys::fs::remove(join(dir_, rel) + kStaged.str());
}

llvm::Expected<std::string> SaveSet::relativePath(llvm::StringRef path) const {
  llvm::StringRef rel = path;
  if (!rel.consume_front(dir_) || !rel.consume_front("/") || rel.empty() || rel.contains('\n'))
    return makeError("{0}: not a file name under the saved directory {1}", path, dir_);
  return rel.str();
}

llvm::Error SaveSet::add(llvm::StringRef path, const Tensor &t, bool asF16) {
  auto rel = relativePath(path);
  if (!rel)
    return rel.takeError();
  if (llvm::Error err = writeNpySynced((path + kStaged).str(), path, t, asF16))
    return err;
  files_.push_back(std::move(*rel));
  bytes_ += asF16 ? t.bytes() / 2 : t.bytes();
  return llvm::Error::success();
}

llvm::Error SaveSet::addText(llvm::StringRef path, llvm::StringRef text) {
  auto rel = relativePath(path);
  if (!rel)
    return rel.takeError();
  if (llvm::Error err = writeTextSynced((path + kStaged).str(), path, "", text))
    return err;
  files_.push_back(std::move(*rel));
  bytes_ += text.size();
  return llvm::Error::success();
}

llvm::Error SaveSet::commit() {
  std::string journal =
      llvm::formatv("{0}/{1}{2}{3}", dir_, kJournalPrefix, getpid(), kJournalSuffix).str();
  std::string text = "oar-save 1\n" + llvm::join(files_, "\n") + "\n";
  std::string tmp = journal + ".tmp";
  if (llvm::Error err = writeTextSynced(tmp, journal, " the save's journal", text))
    return err;
  if (std::error_code ec = llvm::sys::fs::rename(tmp, journal))
    return makeError("{0}: cannot publish the save's journal: {1}", journal, ec.message());
  syncDirectory(dir_);
  committed_ = true; // from here on the journal finishes the set, even after a crash
  return replay(dir_, journal, files_);
}

llvm::Error finishInterruptedSaves(llvm::StringRef dir) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (!name.startswith(kJournalPrefix) || !name.endswith(kJournalSuffix))
      continue;
    auto buffer = llvm::MemoryBuffer::getFile(it->path(), /*IsText=*/true);
    if (!buffer && buffer.getError() == std::errc::no_such_file_or_directory)
      continue; // another reader of the directory finished it
    if (!buffer)
      return makeError("{0}: cannot read the journal of an interrupted save: {1}", it->path(),
                       buffer.getError().message());
    llvm::SmallVector<llvm::StringRef, 64> lines;
    (*buffer)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
    if (lines.empty() || lines[0] != "oar-save 1")
      return makeError("{0}: not a journal of an oar save; remove it if you know what it is",
                       it->path());
    std::vector<std::string> files;
    for (size_t i = 1; i < lines.size(); ++i) {
      llvm::SmallVector<llvm::StringRef, 4> parts;
      lines[i].split(parts, '/');
      if (lines[i].startswith("/") || llvm::is_contained(parts, ".."))
        return makeError("{0}: line {1} names a file outside {2}", it->path(), i + 1, dir);
      files.push_back(lines[i].str());
    }
    if (llvm::Error err = replay(dir, it->path(), files))
      return err;
  }
  return llvm::Error::success();
}

} // namespace oar
