// Reading checkpoints of every layout.
#include "checkpoint/checkpoint_reader.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "checkpoint/step_checkpoints.h"
#include "executor/finite_check.h"
#include "executor/npy.h"
#include "executor/save_set.h"
#include "support/error.h"
#include "train/training_loop.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace oar {

namespace {

bool isDir(const std::string &path) { return llvm::sys::fs::is_directory(path); }

/// The pserver.<i> directories under `dir`, by index.
std::map<int64_t, std::string> pserverDirs(const std::string &dir) {
  std::map<int64_t, std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int64_t i = 0;
    if (name.consume_front("pserver.") && !name.getAsInteger(10, i) && i >= 0 && isDir(it->path()))
      out[i] = it->path();
  }
  return out;
}

/// Rows of a tensor as blocks cut it (a scalar: one).
int64_t rowsOf(const Tensor &t) { return t.rank() == 0 ? 1 : t.dim(0); }

} // namespace

llvm::Error CheckpointReader::addTables(const std::string &tablesDir) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(tablesDir, ec), end; it != end && !ec;
       it.increment(ec)) {
    if (!isDir(it->path()))
      continue;
    std::string name = llvm::sys::path::filename(it->path()).str();
    if (llvm::Error err = collectTableParts(it->path(), tables_[name]))
      return err;
    if (tables_[name].empty())
      tables_.erase(name);
  }
  return llvm::Error::success();
}

llvm::Error CheckpointReader::addPserverDir(const std::string &dir) {
  std::string index = dir + "/" + kBlockIndexFile;
  if (llvm::sys::fs::exists(index)) {
    auto buffer = llvm::MemoryBuffer::getFile(index, /*IsText=*/true);
    if (!buffer)
      return makeError("{0}: cannot read: {1}", index, buffer.getError().message());
    auto blocks = parseBlockIndex((*buffer)->getBuffer(), index);
    if (!blocks)
      return blocks.takeError();
    if (llvm::Error err = finishInterruptedSaves(dir))
      return err;
    pservers_.push_back({dir, std::move(*blocks)});
  }
  // A save before the index: its blocks cannot be put together; trainer 0's params stand.
  return addTables(dir + "/tables");
}

namespace {

/// The steps in words, for an error: "300, 200 and 100".
std::string stepList(const std::vector<int64_t> &steps) {
  std::string out;
  for (size_t i = 0; i < steps.size(); ++i)
    out += (i == 0 ? "" : i + 1 == steps.size() ? " and " : ", ") + std::to_string(steps[i]);
  return out.empty() ? "none" : out;
}

} // namespace

llvm::Expected<CheckpointReader> CheckpointReader::open(llvm::StringRef dirRef,
                                                        std::optional<int64_t> wanted) {
  CheckpointReader r;
  r.dir_ = dirRef.str();
  const std::string &dir = r.dir_;
  if (!isDir(dir))
    return makeError("{0}: not a directory to load a model from", dir);
  bool isExport = llvm::sys::fs::exists(dir + "/inference.pb");
  if (wanted && (isExport || checkpointSteps(dir).empty())) {
    bool pserverSteps = false;
    for (auto &[i, pdir] : pserverDirs(dir))
      pserverSteps |= !checkpointSteps(pdir).empty();
    if (isExport || !pserverSteps)
      return makeError("{0}: --step {1} picks a step of a checkpoint directory (step-<N>/ or "
                       "pserver.<i>/step-<N>/); this is {2}, which has none",
                       dir, *wanted, isExport ? "an export" : "a save");
  }
  if (isExport) { // an export
    r.what_ = "the export " + dir;
    r.flatDir_ = dir + "/params";
    if (llvm::Error err = r.addTables(dir + "/tables"))
      return err;
    return r;
  }
  std::map<int64_t, std::string> pservers = pserverDirs(dir);
  bool pserverCheckpoints = false;
  for (auto &[i, pdir] : pservers)
    pserverCheckpoints |= !checkpointSteps(pdir).empty();
  if (!checkpointSteps(dir).empty()) { // one machine's checkpoints
    std::vector<int64_t> steps = checkpointSteps(dir);
    if (wanted && !llvm::is_contained(steps, *wanted))
      return makeError("{0}: has no checkpoint step {1} (it has {2})", dir, *wanted,
                       stepList(steps));
    for (int64_t step : steps)
      if (wanted && step != *wanted)
        continue;
      else if (auto m = readCompleteCheckpoint(dir + "/step-" + std::to_string(step))) {
        r.step_ = step, r.fields_ = m->fields;
        break;
      }
    if (!r.step_ && wanted)
      return makeError("{0}: checkpoint step {1} is not complete (cut off while it was written)",
                       dir, *wanted);
    if (!r.step_)
      return makeError("{0}: holds step-<N> checkpoints but none is complete (each was cut off "
                       "while it was written)",
                       dir);
    r.flatDir_ = dir + "/step-" + std::to_string(*r.step_);
    if (llvm::Error err = verifyCheckpointFiles(r.flatDir_))
      return std::move(err);
    r.what_ = llvm::formatv("checkpoint step {0} in {1}", *r.step_, dir).str();
    if (llvm::Error err = r.addTables(r.flatDir_ + "/tables"))
      return err;
    return r;
  }
  if (pserverCheckpoints) { // every pserver's checkpoints: the newest step all of them hold
    int64_t count = 0;
    while (pservers.count(count))
      ++count;
    std::optional<int64_t> common;
    std::string digest;
    std::vector<int64_t> steps = checkpointSteps(pservers[0]);
    if (wanted && !llvm::is_contained(steps, *wanted))
      return makeError("{0}: pserver.0 has no checkpoint step {1} (it has {2})", dir, *wanted,
                       stepList(steps));
    for (int64_t step : steps) {
      if (wanted && step != *wanted)
        continue;
      bool all = true;
      for (int64_t i = 0; i < count && all; ++i) {
        auto m = readCompleteCheckpoint(pservers[i] + "/step-" + std::to_string(step));
        all = m && (i == 0 || m->digest == digest);
        if (m && i == 0)
          digest = m->digest, r.fields_ = m->fields;
      }
      if (all) {
        common = step;
        break;
      }
    }
    if (!common && wanted)
      return makeError("{0}: checkpoint step {1} is not complete on all of its {2} pserver "
                       "directories (pserver.0 to pserver.{3})",
                       dir, *wanted, count, count - 1);
    if (!common)
      return makeError("{0}: no checkpoint step is complete on all of its {1} pserver "
                       "directories (pserver.0 to pserver.{2})",
                       dir, count, count - 1);
    r.step_ = common;
    r.what_ = llvm::formatv("checkpoint step {0} of {1} pserver(s) in {2}", *common, count, dir);
    for (int64_t i = 0; i < count; ++i) {
      std::string stepDir = pservers[i] + "/step-" + std::to_string(*common);
      if (llvm::Error err = verifyCheckpointFiles(stepDir))
        return std::move(err);
      if (!llvm::sys::fs::exists(stepDir + "/" + kBlockIndexFile))
        return makeError("{0}: has no {1} index (written by an oar before it): its blocks cannot "
                         "be put together; resume that job with its own programs instead",
                         stepDir, kBlockIndexFile);
      if (llvm::Error err = r.addPserverDir(stepDir))
        return err;
    }
    return r;
  }
  // A save.
  if (llvm::Error err = finishInterruptedSaves(dir))
    return err;
  r.flatDir_ = dir;
  r.what_ = pservers.empty()
                ? "the save " + dir
                : llvm::formatv("the save of {0} pserver(s) in {1}", pservers.size(), dir).str();
  for (auto &[i, pdir] : pservers)
    if (llvm::Error err = r.addPserverDir(pdir))
      return err;
  if (llvm::Error err = r.addTables(dir + "/tables"))
    return err;
  return r;
}

bool CheckpointReader::holdsDense(llvm::StringRef name) const {
  if (!flatDir_.empty() && llvm::sys::fs::exists(flatDir_ + "/" + name + ".npy"))
    return true;
  for (const PserverDir &p : pservers_)
    for (const SavedBlock &b : p.blocks)
      if (b.whole == name)
        return true;
  return false;
}

llvm::Expected<std::optional<Tensor>> CheckpointReader::dense(llvm::StringRef name,
                                                              const proto::Var *declared) const {
  auto check = [&](Tensor t, const std::string &source) -> llvm::Expected<std::optional<Tensor>> {
    if (declared)
      if (llvm::Error err = checkAgainstVar(t, *declared, source))
        return err;
    if (llvm::Error err = checkFinite(t, source))
      return err;
    return std::optional<Tensor>(std::move(t));
  };
  std::string file = flatDir_ + "/" + name.str() + ".npy";
  if (!flatDir_.empty() && llvm::sys::fs::exists(file)) {
    auto t = readNpy(file);
    if (!t)
      return t.takeError();
    return check(std::move(*t), file);
  }
  // Put together from the pservers' blocks: sliced ones by rows, or any copy of a whole var.
  struct Piece {
    Tensor t;
    int64_t rowBegin;
    std::string file;
  };
  std::vector<Piece> pieces;
  for (const PserverDir &p : pservers_)
    for (const SavedBlock &b : p.blocks) {
      if (b.whole != name)
        continue;
      std::string path = p.dir + "/" + b.saved + ".npy";
      auto t = readNpy(path);
      if (!t)
        return t.takeError();
      if (!b.sliced)
        return check(std::move(*t), path);
      pieces.push_back({std::move(*t), b.rowBegin, path});
    }
  if (pieces.empty())
    return std::optional<Tensor>();
  llvm::sort(pieces, [](const Piece &a, const Piece &b) { return a.rowBegin < b.rowBegin; });
  const Tensor &first = pieces[0].t;
  int64_t width = rowWidth(first), rows = 0;
  for (const Piece &p : pieces) {
    if (p.rowBegin != rows || p.t.dtype() != first.dtype() || rowWidth(p.t) != width ||
        p.t.rank() != first.rank())
      return makeError("{0}: the pservers' blocks of {1} do not fit together: {2} holds "
                       "{3}{4} from row {5}, after {6} rows of width {7}",
                       describe(), name, p.file, dtypeName(p.t.dtype()), dimsString(p.t.dims()),
                       p.rowBegin, rows, width);
    rows += rowsOf(p.t);
  }
  llvm::SmallVector<int64_t, 4> dims(first.dims().begin(), first.dims().end());
  if (dims.empty())
    dims.push_back(1);
  dims[0] = rows;
  Tensor whole(first.dtype(), dims);
  size_t rowBytes = static_cast<size_t>(width) * dtypeSize(first.dtype());
  for (const Piece &p : pieces)
    std::memcpy(static_cast<char *>(whole.raw()) + p.rowBegin * rowBytes, p.t.raw(), p.t.bytes());
  return check(std::move(whole),
               llvm::formatv("{0} (the pservers' blocks of {1})", describe(), name).str());
}

llvm::Expected<std::optional<std::vector<TablePartFiles>>>
CheckpointReader::table(llvm::StringRef name) const {
  auto it = tables_.find(name);
  if (it == tables_.end())
    return std::optional<std::vector<TablePartFiles>>();
  if (llvm::Error err = checkTableParts(it->second, name, describe()))
    return err;
  return std::optional<std::vector<TablePartFiles>>(it->second);
}

std::vector<std::string> CheckpointReader::tableNames() const {
  std::vector<std::string> names;
  for (const auto &entry : tables_)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

} // namespace oar
