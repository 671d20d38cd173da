// Reading and writing the parts of saved sparse tables.
#include "checkpoint/table_files.h"

#include <map>
#include <set>
#include <tuple>

#include "executor/npy.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace oar {

int64_t tableStateFloats(llvm::StringRef optimizer, bool rowWise, int64_t width) {
  if (optimizer == "adagrad")
    return rowWise ? 1 : width;
  if (optimizer == "adam")
    return 2 * width + 2;
  return 0;
}

int64_t TableInfo::stateFloats() const { return tableStateFloats(optimizer, rowWise, width); }

std::string TableInfo::text() const {
  return llvm::formatv("oar-table 1\nname {0}\nwidth {1}\noptimizer {2}\nrow_wise {3}\n"
                       "init {4} {5} {6}\nseed {7}\nstep {8}\n",
                       name, width, optimizer.empty() ? "none" : optimizer, rowWise ? 1 : 0,
                       init.kind, llvm::formatv("{0:e9}", init.a).str(),
                       llvm::formatv("{0:e9}", init.b).str(), init.seed, step)
      .str();
}

llvm::Expected<TableInfo> TableInfo::parse(llvm::StringRef text, llvm::StringRef path) {
  llvm::SmallVector<llvm::StringRef, 16> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.empty() || lines[0] != "oar-table 1")
    return makeError("{0}: not a table description (its first line must be \"oar-table 1\")", path);
  TableInfo info;
  std::map<std::string, llvm::StringRef> fields;
  for (size_t i = 1; i < lines.size(); ++i) {
    auto [key, value] = lines[i].split(' ');
    fields[key.str()] = value;
  }
  auto field = [&](const char *key) -> llvm::Expected<llvm::StringRef> {
    auto it = fields.find(key);
    if (it == fields.end())
      return makeError("{0}: no \"{1}\" line", path, key);
    return it->second;
  };
  auto integer = [&](const char *key, auto &out) -> llvm::Error {
    auto v = field(key);
    if (!v)
      return v.takeError();
    if (v->getAsInteger(10, out))
      return makeError("{0}: \"{1} {2}\" is not a whole number", path, key, *v);
    return llvm::Error::success();
  };
  auto name = field("name"), optimizer = field("optimizer"), init = field("init");
  if (!name)
    return name.takeError();
  if (!optimizer)
    return optimizer.takeError();
  if (!init)
    return init.takeError();
  info.name = name->str();
  info.optimizer = *optimizer == "none" ? "" : optimizer->str();
  int rowWise = 0;
  if (llvm::Error err = integer("width", info.width))
    return err;
  if (llvm::Error err = integer("row_wise", rowWise))
    return err;
  if (llvm::Error err = integer("seed", info.init.seed))
    return err;
  if (llvm::Error err = integer("step", info.step))
    return err;
  info.rowWise = rowWise != 0;
  llvm::SmallVector<llvm::StringRef, 3> parts;
  init->split(parts, ' ', -1, false);
  double a = 0, b = 0;
  if (parts.size() != 3 || parts[1].getAsDouble(a) || parts[2].getAsDouble(b) ||
      (parts[0] != "uniform" && parts[0] != "gaussian" && parts[0] != "constant"))
    return makeError("{0}: \"init {1}\" must be uniform|gaussian|constant A B", path, *init);
  info.init.kind = parts[0].str();
  info.init.a = static_cast<float>(a), info.init.b = static_cast<float>(b);
  info.init.table = info.name;
  if (info.width < 1 || (!info.optimizer.empty() && info.optimizer != "sgd" &&
                         info.optimizer != "adagrad" && info.optimizer != "adam"))
    return makeError("{0}: width {1} must be positive and optimizer \"{2}\" one of sgd, adagrad, "
                     "adam, none",
                     path, info.width, info.optimizer);
  return info;
}

std::string tablePartPrefix(llvm::StringRef tableDir, int64_t index, int64_t count) {
  return llvm::formatv("{0}/part.{1}-of-{2}.", tableDir, index, count).str();
}

llvm::Error writeTablePart(const TableInfo &info, const TableRows &rows, llvm::StringRef prefix,
                           SaveSet &files, bool asF16) {
  TablePartFiles part{prefix.str()};
  if (llvm::Error err = files.addText(part.file("table.txt"), info.text()))
    return err;
  // Values first, keys after: a reader that finds the keys finds the rest (within a set all land
  // together anyway).
  if (llvm::Error err = files.add(part.file("values.npy"), rows.values, asF16))
    return err;
  if (rows.stats.initialized())
    if (llvm::Error err = files.add(part.file("stats.npy"), rows.stats))
      return err;
  return files.add(part.file("keys.npy"), rows.keys);
}

namespace {

/// A file name of a part: (kind, index, count) for part.I-of-N.<what>, or shard.S.<what>.
struct PartName {
  bool legacy = false;
  int64_t index = 0, count = 0;
  std::string prefix; ///< the name up to and with the dot before <what>
};

std::optional<PartName> parsePartName(llvm::StringRef name) {
  PartName p;
  llvm::StringRef rest = name;
  if (rest.consume_front("part.")) {
    auto [index, afterIndex] = rest.split("-of-");
    auto [count, what] = afterIndex.split('.');
    if (index.getAsInteger(10, p.index) || count.getAsInteger(10, p.count) || p.count < 1 ||
        p.index < 0 || p.index >= p.count || what.empty())
      return std::nullopt;
  } else if (rest.consume_front("shard.")) {
    auto [shard, what] = rest.split('.');
    if (shard.getAsInteger(10, p.index) || what.empty())
      return std::nullopt;
    p.legacy = true;
  } else {
    return std::nullopt;
  }
  p.prefix = name.drop_back(name.size() - name.rfind(".keys.npy") - 1).str();
  return p;
}

} // namespace

void removeStaleTableParts(llvm::StringRef tableDir, int64_t count) {
  std::error_code ec;
  std::vector<std::string> stale;
  for (llvm::sys::fs::directory_iterator it(tableDir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    llvm::StringRef rest = name;
    int64_t index = 0, n = 0;
    if (rest.consume_front("shard.")) {
      stale.push_back(it->path());
    } else if (rest.consume_front("part.")) {
      auto [i, afterIndex] = rest.split("-of-");
      auto [c, what] = afterIndex.split('.');
      if (!i.getAsInteger(10, index) && !c.getAsInteger(10, n) && n != count)
        stale.push_back(it->path());
    }
  }
  for (const std::string &path : stale)
    llvm::sys::fs::remove(path);
}

llvm::Error collectTableParts(llvm::StringRef tableDir, std::vector<TablePartFiles> &parts) {
  if (llvm::sys::fs::exists(tableDir + "/keys.npy")) { // an export's single part
    parts.push_back({(tableDir + "/").str(), false, 0, 1});
    return llvm::Error::success();
  }
  std::error_code ec;
  std::vector<TablePartFiles> found;
  for (llvm::sys::fs::directory_iterator it(tableDir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (!name.endswith(".keys.npy"))
      continue;
    if (std::optional<PartName> p = parsePartName(name))
      found.push_back({(tableDir + "/" + p->prefix).str(), p->legacy, p->index, p->count});
  }
  if (ec)
    return makeError("{0}: cannot list: {1}", tableDir, ec.message());
  llvm::sort(found, [](const TablePartFiles &a, const TablePartFiles &b) {
    return std::tie(a.count, a.index) < std::tie(b.count, b.index);
  });
  parts.insert(parts.end(), found.begin(), found.end());
  return llvm::Error::success();
}

llvm::Error checkTableParts(const std::vector<TablePartFiles> &parts, llvm::StringRef table,
                            llvm::StringRef where) {
  std::map<int64_t, std::set<int64_t>> byCount; // count (0: legacy shards) -> indices
  for (const TablePartFiles &p : parts)
    if (!byCount[p.legacy ? 0 : p.count].insert(p.index).second)
      return makeError("{0}: table {1} has part {2} twice ({3}keys.npy and another)", where, table,
                       p.index, p.prefix);
  if (byCount.size() > 1)
    return makeError("{0}: table {1} holds the rows of saves by {2} pserver counts (or the old "
                     "shard layout beside parts); each save replaces the last, so some were "
                     "copied in: remove the parts that do not belong",
                     where, table, byCount.size());
  for (auto &[count, indices] : byCount)
    for (int64_t i = 0; count > 0 && i < count; ++i)
      if (!indices.count(i))
        return makeError("{0}: table {1} misses part {2} of {3} (part.{2}-of-{3}.keys.npy): every "
                         "pserver of the save writes one",
                         where, table, i, count);
  return llvm::Error::success();
}

llvm::Expected<std::optional<TableInfo>> readTableInfo(const TablePartFiles &part) {
  if (part.legacy)
    return std::optional<TableInfo>();
  std::string infoPath = part.file("table.txt");
  auto buffer = llvm::MemoryBuffer::getFile(infoPath, /*IsText=*/true);
  if (!buffer)
    return makeError("{0}: cannot read: {1}", infoPath, buffer.getError().message());
  auto info = TableInfo::parse((*buffer)->getBuffer(), infoPath);
  if (!info)
    return info.takeError();
  return std::optional<TableInfo>(std::move(*info));
}

llvm::Expected<TablePart> readTablePart(const TablePartFiles &part) {
  TablePart out;
  auto info = readTableInfo(part);
  if (!info)
    return info.takeError();
  out.info = std::move(*info);
  std::string keysPath = part.file("keys.npy"), valuesPath = part.file("values.npy");
  auto keys = readNpy(keysPath);
  if (!keys)
    return keys.takeError();
  auto values = readNpy(valuesPath);
  if (!values)
    return values.takeError();
  int64_t n = keys->numel();
  if (keys->dtype() != proto::I64 || keys->rank() != 1)
    return makeError("{0}: holds {1}{2}; keys must be i64 [n]", keysPath, dtypeName(keys->dtype()),
                     dimsString(keys->dims()));
  int64_t stride = out.info ? out.info->stride() : (values->rank() == 2 ? values->dim(1) : -1);
  if (values->dtype() != proto::F32 || values->rank() != 2 || values->dim(0) != n ||
      values->dim(1) != stride || stride < 1)
    return makeError("{0}: holds {1}{2}; {3} keys of table {4} need f32[{3}, {5}]", valuesPath,
                     dtypeName(values->dtype()), dimsString(values->dims()), n,
                     out.info ? out.info->name : llvm::sys::path::parent_path(keysPath).str(),
                     stride);
  const auto *k = static_cast<const uint64_t *>(keys->raw());
  for (int64_t i = 1; i < n; ++i)
    if (k[i] <= k[i - 1])
      return makeError("{0}: keys are not sorted and distinct: {1} at position {2} follows {3}",
                       keysPath, k[i], i, k[i - 1]);
  std::string statsPath = part.file("stats.npy");
  if (!part.legacy && llvm::sys::fs::exists(statsPath)) {
    auto stats = readNpy(statsPath);
    if (!stats)
      return stats.takeError();
    if (stats->dtype() != proto::I64 || stats->rank() != 2 || stats->dim(0) != n ||
        stats->dim(1) != 2)
      return makeError("{0}: holds {1}{2}; {3} rows need i64[{3}, 2]", statsPath,
                       dtypeName(stats->dtype()), dimsString(stats->dims()), n);
    out.rows.stats = std::move(*stats);
  }
  out.rows.keys = std::move(*keys);
  out.rows.values = std::move(*values);
  return out;
}

} // namespace oar
