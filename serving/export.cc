// Exporting a trained model for serving.
#include "serving/export.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <unistd.h>

#include "checkpoint/load_model.h"
#include "checkpoint/table_rows.h"
#include "executor/npy.h"
#include "executor/save_set.h"
#include "ir/names.h"
#include "ops/verify.h"
#include "serving/inference_program.h"
#include "support/error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace oar {

namespace {

/// The rows of table `t` that the shrink options keep, weights only, sorted by key.
llvm::Expected<ExportedTable> exportTable(const proto::Program &main, const proto::Program &startup,
                                          const CheckpointReader &ckpt, llvm::StringRef name,
                                          const ExportOptions &opts) {
  ExportedTable out;
  TableInfo want = wantedTable(main, startup, name);
  // A part's own description says how its job started the rows it lacks.
  if (const std::vector<TablePartFiles> *parts = ckpt.tableParts(name); parts && !parts->empty()) {
    auto info = readTableInfo(parts->front());
    if (!info)
      return info.takeError();
    if (*info)
      want.init = (*info)->init;
  }
  bool shrink = opts.minPushes > 0 || opts.maxUnseenSteps > 0;
  std::vector<uint64_t> keys;
  std::vector<float> weights;
  int64_t width = want.width;
  bool noStats = false;
  auto counts = readTableRows(
      ckpt, want, {}, [](uint64_t) { return true; },
      [&](const SavedRow &r) -> llvm::Error {
        if (shrink && !r.stats) {
          noStats = true;
          return llvm::Error::success();
        }
        if (shrink && ((opts.minPushes > 0 && r.stats[0] < opts.minPushes) ||
                       (opts.maxUnseenSteps > 0 && r.stats[1] > opts.maxUnseenSteps))) {
          ++out.dropped;
          return llvm::Error::success();
        }
        keys.push_back(r.key);
        weights.insert(weights.end(), r.weights, r.weights + width);
        return llvm::Error::success();
      });
  if (!counts)
    return counts.takeError();
  if (!*counts)
    return makeError("{0} holds nothing for table {1} (no tables/{1}/, no {1}.npy); was it saved "
                     "from this model?",
                     ckpt.describe(), name);
  if (noStats)
    return makeError("{0} holds no push counts for table {1} (one machine trained it dense, or an "
                     "older oar saved it): export it without --min-pushes and --max-unseen-steps",
                     ckpt.describe(), name);
  // Parts are sorted each; together they need one more sort.
  std::vector<int64_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  auto n = static_cast<int64_t>(keys.size());
  out.keys = Tensor(proto::I64, {n});
  out.values = Tensor(proto::F32, {n, width});
  for (int64_t i = 0; i < n; ++i) {
    out.keys.data<int64_t>()[i] = static_cast<int64_t>(keys[order[i]]);
    std::memcpy(out.values.data<float>() + i * width, weights.data() + order[i] * width,
                width * sizeof(float));
  }
  out.info = want;
  out.info.optimizer.clear(); // weights alone
  return out;
}

std::string inDir(llvm::StringRef dir, llvm::StringRef rel) { return (dir + "/" + rel).str(); }

/// The vars of an inference program that hold tables (keys, values, index): they come from
/// tables/, not params/.
std::set<std::string> servedTableVars(const proto::Program &inference) {
  std::set<std::string> names;
  for (const proto::Op &op : inference.blocks(0).ops())
    if (op.type() == "lookup_sorted_table")
      for (const char *slot : {"Keys", "Values", "Index"})
        for (const std::string &n : opInputs(op, slot))
          names.insert(n);
  return names;
}

} // namespace

llvm::Expected<ExportedModel> exportModel(const proto::Program &main, const proto::Program &startup,
                                          const CheckpointReader &ckpt,
                                          const ExportOptions &options) {
  if (options.minPushes < 0 || options.maxUnseenSteps < 0)
    return makeError("--min-pushes {0} and --max-unseen-steps {1} must not be negative",
                     options.minPushes, options.maxUnseenSteps);
  ExportedModel model;
  model.options = options;
  model.source = ckpt.describe();
  std::vector<std::string> outputs = options.outputs;
  if (outputs.empty()) {
    auto served = servedOutputs(main);
    if (!served)
      return served.takeError();
    outputs = std::move(*served);
  }
  std::set<std::string> tables = servedTables(main);
  auto program = inferenceProgram(main, startup, outputs, tables);
  if (!program)
    return program.takeError();
  model.program = std::move(*program);
  const proto::Block &block = model.program.blocks(0);
  for (const std::string &t : tables) {
    if (!findVar(block, tableKeysName(t)))
      continue; // not on the way to the outputs
    auto exported = exportTable(main, startup, ckpt, t, options);
    if (!exported)
      return exported.takeError();
    model.tables[t] = std::move(*exported);
  }
  std::set<std::string> tableVars = servedTableVars(model.program);
  for (const proto::Var &v : block.vars()) {
    if (!v.persistable() || tableVars.count(v.name()))
      continue;
    auto t = ckpt.dense(v.name(), &v);
    if (!t)
      return t.takeError();
    if (!*t)
      return makeError("{0} holds nothing for {1}, which the prediction reads (no {1}.npy, no "
                       "pserver block of it); was it saved from this model?",
                       ckpt.describe(), v.name());
    model.params[v.name()] = std::move(**t);
  }
  return model;
}

llvm::Error writeExport(const ExportedModel &model, llvm::StringRef dirRef) {
  std::string dir = dirRef.str();
  if (llvm::sys::fs::exists(dir) && !llvm::sys::fs::exists(dir + "/inference.pb")) {
    std::error_code ec;
    llvm::sys::fs::directory_iterator it(dir, ec);
    if (ec || it != llvm::sys::fs::directory_iterator())
      return makeError("{0}: exists and is not an export; give a new or empty directory", dir);
  }
  std::string parent = llvm::sys::path::parent_path(dir).str();
  if (!parent.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(parent))
      return makeError("{0}: cannot create directory: {1}", parent, ec.message());
  std::string tmp = llvm::formatv("{0}.tmp-{1}", dir, getpid()).str();
  llvm::sys::fs::remove_directories(tmp);
  for (const char *sub : {"params", "tables"})
    if (std::error_code ec = llvm::sys::fs::create_directories(inDir(tmp, sub)))
      return makeError("{0}: cannot create directory: {1}", tmp, ec.message());
  auto fail = [&](llvm::Error err) {
    llvm::sys::fs::remove_directories(tmp);
    return err;
  };
  std::string origin = "exported by oar-export from " + model.source;
  if (llvm::Error err = saveProgram(model.program, inDir(tmp, "inference.pb"), origin))
    return fail(std::move(err));
  if (llvm::Error err = saveProgram(model.program, inDir(tmp, "inference.pbtxt"), origin))
    return fail(std::move(err));
  SaveSet files(tmp);
  for (const auto &[name, t] : model.params)
    if (llvm::Error err = files.add(inDir(tmp, "params/" + name + ".npy"), t))
      return fail(std::move(err));
  std::string manifest = llvm::formatv("oar-export 1\nsource {0}\nvalues {1}\n", model.source,
                                       model.options.f16 ? "f16" : "f32")
                             .str();
  for (const auto &[name, t] : model.tables) {
    std::string tableDir = inDir(tmp, "tables/" + name);
    if (std::error_code ec = llvm::sys::fs::create_directories(tableDir))
      return fail(makeError("{0}: cannot create directory: {1}", tableDir, ec.message()));
    if (llvm::Error err = writeTablePart(t.info, TableRows{t.keys, t.values, Tensor()},
                                         tableDir + "/", files, model.options.f16))
      return fail(std::move(err));
    manifest +=
        llvm::formatv("table {0} rows {1} dropped {2}\n", name, t.keys.numel(), t.dropped).str();
  }
  if (model.options.minPushes > 0 || model.options.maxUnseenSteps > 0)
    manifest += llvm::formatv("shrink min_pushes {0} max_unseen_steps {1}\n",
                              model.options.minPushes, model.options.maxUnseenSteps)
                    .str();
  if (llvm::Error err = files.addText(inDir(tmp, "EXPORT"), manifest))
    return fail(std::move(err));
  if (llvm::Error err = files.commit())
    return fail(std::move(err));
  // Put it in place: an export there before goes aside first, then away.
  std::string old = tmp + ".old";
  bool replaced = llvm::sys::fs::exists(dir);
  if (replaced)
    if (std::error_code ec = llvm::sys::fs::rename(dir, old))
      return fail(makeError("{0}: cannot replace it: {1}", dir, ec.message()));
  if (std::error_code ec = llvm::sys::fs::rename(tmp, dir))
    return fail(makeError("{0}: cannot put the export in place: {1}", dir, ec.message()));
  if (replaced)
    llvm::sys::fs::remove_directories(old);
  return llvm::Error::success();
}

llvm::Expected<ExportedModel> readExport(llvm::StringRef dirRef) {
  std::string dir = dirRef.str();
  if (!llvm::sys::fs::exists(dir + "/inference.pb"))
    return makeError("{0}: not an export (no inference.pb); write one with oar-export", dir);
  ExportedModel model;
  auto program = loadVerifiedProgram(dir + "/inference.pb");
  if (!program)
    return program.takeError();
  model.program = std::move(*program);
  if (auto manifest = llvm::MemoryBuffer::getFile(dir + "/EXPORT", /*IsText=*/true)) {
    llvm::StringRef text = (*manifest)->getBuffer();
    size_t at = text.find("\nsource ");
    if (at != llvm::StringRef::npos)
      model.source = text.drop_front(at + 8).take_until([](char c) { return c == '\n'; }).str();
    model.options.f16 = text.contains("\nvalues f16\n");
  }
  auto ckpt = CheckpointReader::open(dir);
  if (!ckpt)
    return ckpt.takeError();
  const proto::Block &block = model.program.blocks(0);
  for (const proto::Op &op : block.ops()) {
    if (op.type() != "lookup_sorted_table")
      continue;
    std::string name = findAttr(op, "table") ? findAttr(op, "table")->s() : "";
    if (model.tables.count(name))
      continue;
    const std::vector<TablePartFiles> *parts = ckpt->tableParts(name);
    if (!parts || parts->size() != 1)
      return makeError("{0}/tables/{1}: missing; the inference program looks its keys up", dir,
                       name);
    auto part = readTablePart(parts->front());
    if (!part)
      return part.takeError();
    if (!part->info)
      return makeError("{0}/tables/{1}/table.txt: missing", dir, name);
    ExportedTable t;
    t.info = *part->info;
    t.keys = std::move(part->rows.keys);
    t.values = std::move(part->rows.values);
    if (t.values.dim(1) != t.info.width)
      return makeError("{0}/tables/{1}/values.npy: rows of {2} floats, but the table is {3} wide",
                       dir, name, t.values.dim(1), t.info.width);
    model.tables[name] = std::move(t);
  }
  std::set<std::string> tableVars = servedTableVars(model.program);
  for (const proto::Var &v : block.vars()) {
    if (!v.persistable() || tableVars.count(v.name()))
      continue;
    auto t = ckpt->dense(v.name(), &v);
    if (!t)
      return t.takeError();
    if (!*t)
      return makeError("{0}/params/{1}.npy: missing; the inference program reads it", dir,
                       v.name());
    model.params[v.name()] = std::move(**t);
  }
  return model;
}

std::string describeExport(const ExportedModel &m) {
  std::string out;
  llvm::raw_string_ostream os(out);
  const proto::Program &p = m.program;
  os << "export of " << (m.source.empty() ? "an unknown checkpoint" : m.source) << "\n";
  os << "inputs:";
  for (const std::string &in : p.inputs()) {
    const proto::Var *v = findVar(p.blocks(0), in);
    os << " " << in << (v ? " " + typeString(v->type()) : std::string());
  }
  os << "\noutputs:";
  for (const std::string &o : p.predictions()) {
    const proto::Var *v = findVar(p.blocks(0), o);
    os << " " << o << (v ? " " + typeString(v->type()) : std::string());
  }
  os << "\n" << p.blocks(0).ops_size() << " ops:";
  for (const proto::Op &op : p.blocks(0).ops())
    os << " " << op.type();
  int64_t paramFloats = 0;
  for (const auto &[name, t] : m.params)
    paramFloats += t.numel();
  os << "\n" << m.params.size() << " dense params, " << paramFloats << " values\n";
  for (const auto &[name, t] : m.tables)
    os << "table " << name << ": " << t.keys.numel() << " rows of " << t.info.width
       << (m.options.f16 ? " (f16 on disk)" : "") << "; a key it lacks starts "
       << t.info.init.describe() << "\n";
  if (p.test_feed().columns_size() > 0)
    os << "reads " << p.test_feed().format() << " rows into "
       << llvm::join(p.test_feed().columns(), ", ") << "\n";
  return out;
}

} // namespace oar
