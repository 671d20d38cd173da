// Serving the rows of distributed tables.
#include "runtime/pserver/pserver_tables.h"

#include <cmath>

#include "executor/finite_check.h"
#include "ops/op_registry.h"
#include "ops/table_limits.h"
#include "runtime/tables/table_checkpoint.h"
#include "support/error.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FileSystem.h"

namespace oar::runtime {

llvm::Error PserverTables::init(const proto::Program &program, Scope &scope, int64_t fanin,
                                const TableBudget &budget) {
  pserverIndex_ = program.dist().pserver_index();
  routing_.numPservers = std::max(1, program.dist().pservers_size());
  for (const proto::Op &op : program.blocks(0).ops()) {
    if (op.type() != "sparse_table")
      continue;
    ops::AttrReader attrs(op, *ops::lookupOp("sparse_table"));
    SparseTableConfig c;
    c.name = attrs.getString("table");
    c.width = attrs.getInt("width");
    c.optimizer = attrs.getString("optimizer");
    c.rowWise = attrs.getBool("row_wise");
    c.epsilon = attrs.getFloat("epsilon");
    c.initialAccumulator = attrs.getFloat("initial_accumulator");
    c.weightDecay = attrs.getFloat("weight_decay");
    c.beta1 = attrs.getFloat("beta1");
    c.beta2 = attrs.getFloat("beta2");
    c.init = attrs.getString("init");
    c.initA = attrs.getFloat("init_a");
    c.initB = attrs.getFloat("init_b");
    c.seed = attrs.getInt("seed");
    c.admitAfter = attrs.getInt("admit_after");
    c.admitProbability = attrs.getFloat("admit_probability");
    c.evictAfter = attrs.getInt("evict_after");
    if (c.admitAfter < 1 || c.admitProbability <= 0.0f || c.admitProbability > 1.0f ||
        c.evictAfter < 0)
      return makeError("sparse_table {0}: admit_after {1} must be >= 1, admit_probability {2} in "
                       "(0, 1] and evict_after {3} >= 0",
                       c.name, c.admitAfter, c.admitProbability, c.evictAfter);
    if (llvm::Error err = ops::checkSparseOptimizer(c.optimizer))
      return makeError("sparse_table {0}: {1}", c.name, llvm::toString(std::move(err)));
    if (c.width < 1 || c.width > ops::kMaxTableWidth)
      return makeError("sparse_table {0}: width {1} is out of range", c.name, c.width);
    routing_.numShards = attrs.getInt("num_shards");
    if (routing_.numShards < 1)
      return makeError("sparse_table {0}: num_shards {1} must be at least 1", c.name,
                       routing_.numShards);
    const std::string *lr = slotName(findInputSlot(op, "LearningRate"));
    if (!lr)
      return makeError("sparse_table {0}: no LearningRate input", c.name);
    const Tensor *rate = scope.find(*lr);
    if (!rate || rate->dtype() != proto::F32 || rate->numel() != 1)
      return makeError("sparse_table {0}: its learning rate {1} is not an initialised f32 [1]",
                       c.name, *lr);
    index_[c.name] = held_.size();
    Held h;
    for (llvm::StringRef entry : attrs.getStrings("state_vars")) {
      auto [slot, var] = entry.split('=');
      if (slot.empty() || var.empty())
        return makeError("sparse_table {0}: state_vars entry \"{1}\" is not SLOT=VAR", c.name,
                         entry);
      h.stateVars[slot.str()] = var.str();
    }
    h.table = std::make_unique<SparseTable>(std::move(c));
    h.learningRate = rate;
    h.kept.resize(fanin);
    held_.push_back(std::move(h));
  }
  if (!budget.limited() || held_.empty())
    return llvm::Error::success();
  std::vector<SparseTableConfig> configs;
  for (const Held &h : held_)
    configs.push_back(h.table->config());
  auto rows = runtime::rowsPerTable(budget, configs);
  if (!rows)
    return rows.takeError();
  rowsPerTable_ = *rows;
  for (Held &h : held_)
    h.table->setRoom(rowsPerTable_, budget.whenFull);
  return llvm::Error::success();
}

RoomCounts PserverTables::roomCounts() const {
  RoomCounts all;
  for (const Held &h : held_)
    all += h.table->roomCounts();
  return all;
}

llvm::Expected<size_t> PserverTables::check(const Message &m) const {
  const proto::MsgHeader &h = m.header;
  auto it = index_.find(h.var());
  if (it == index_.end())
    return makeError("{0} is not a distributed table this pserver holds", h.var());
  const SparseTable &t = *held_[it->second].table;
  if (h.keys_size() > kMaxKeysPerMessage)
    return makeError("{0}: {1} keys in one message; at most {2}", h.var(), h.keys_size(),
                     kMaxKeysPerMessage);
  for (uint64_t key : h.keys())
    if (reservedKey(key) || routing_.pserverOf(key) != pserverIndex_)
      return makeError("{0}: key {1} belongs to pserver {2}, not this one ({3})", h.var(), key,
                       routing_.pserverOf(key), pserverIndex_);
  if (h.kind() == proto::PULL_ROWS) {
    if (m.hasTensor())
      return makeError("{0}: a pull carries no rows", h.var());
    return it->second;
  }
  std::vector<int64_t> dims = m.dims();
  if (h.dtype() != proto::F32 || dims.size() != 2 || dims[0] != h.keys_size() ||
      dims[1] != t.width())
    return makeError("{0}: a push of {1} keys needs f32[{1}, {2}] rows but holds {3}{4}", h.var(),
                     h.keys_size(), t.width(), dtypeName(h.dtype()), dimsString(dims));
  return it->second;
}

// Rows holding NaN or inf are never applied (see the pserver's gradients).
std::string PserverTables::nonFiniteRows(const Message &m) const {
  const proto::MsgHeader &h = m.header;
  int64_t n = h.keys_size() * (m.dims().size() == 2 ? m.dims()[1] : 0);
  auto bad = firstNonFinite(m.payload.data(), proto::F32, n);
  if (!bad)
    return "";
  float v = static_cast<const float *>(m.payload.data())[*bad];
  return llvm::formatv("rows of {0} from trainer {1} for step {2} hold {3} (key {4})", h.var(),
                       h.trainer_id(), h.step(), std::isnan(v) ? "nan" : "inf",
                       h.keys(static_cast<int>(*bad / m.dims()[1])))
      .str();
}

Tensor PserverTables::pull(size_t table, const proto::MsgHeader &h) const {
  const SparseTable &t = *held_[table].table;
  Tensor rows;
  rows.resize(proto::F32, {h.keys_size(), t.width()}, /*zero=*/false);
  t.pull({h.keys().data(), static_cast<size_t>(h.keys_size())}, rows.data<float>());
  return rows;
}

void PserverTables::apply(size_t table, const Message &push) {
  Held &h = held_[table];
  const proto::MsgHeader &m = push.header;
  h.table->push({m.keys().data(), static_cast<size_t>(m.keys_size())},
                static_cast<const float *>(push.payload.data()), learningRate(h), 1.0f);
  // Async has no steps: a table's step is one push from each trainer.
  if (++h.asyncPushes % static_cast<int64_t>(h.kept.size()) == 0)
    h.table->endStep();
}

void PserverTables::keep(size_t table, int64_t t, std::shared_ptr<Message> push) {
  held_[table].kept[t].push_back(std::move(push));
}

void PserverTables::applyStep(size_t table, const std::vector<bool> &live) {
  Held &h = held_[table];
  int64_t width = h.table->width(), liveCount = 0;
  llvm::DenseMap<uint64_t, uint32_t> at; // key -> its row in `sums`
  std::vector<uint64_t> keys;
  std::vector<float> sums;
  for (size_t t = 0; t < h.kept.size(); ++t) {
    if (!live[t]) {
      h.kept[t].clear();
      continue;
    }
    ++liveCount;
    for (const std::shared_ptr<Message> &push : h.kept[t]) {
      const float *g = static_cast<const float *>(push->payload.data());
      for (int k = 0; k < push->header.keys_size(); ++k) {
        auto [it, fresh] = at.try_emplace(push->header.keys(k), keys.size());
        if (fresh) {
          keys.push_back(push->header.keys(k));
          sums.resize(sums.size() + width, 0.0f);
        }
        float *row = sums.data() + static_cast<size_t>(it->second) * width;
        for (int64_t j = 0; j < width; ++j)
          row[j] += g[k * width + j];
      }
    }
    h.kept[t].clear();
  }
  if (liveCount > 0)
    h.table->push(keys, sums.data(), learningRate(h), 1.0f / static_cast<float>(liveCount));
  h.table->endStep();
}

PserverTables::Snapshot PserverTables::snapshot() const {
  Snapshot s;
  s.index = pserverIndex_, s.count = routing_.numPservers;
  for (const Held &h : held_)
    s.tables.emplace_back(tableInfoOf(*h.table), snapshotRows(*h.table));
  return s;
}

llvm::Error PserverTables::Snapshot::stage(llvm::StringRef dir, SaveSet &files) const {
  for (const auto &[info, rows] : tables)
    if (llvm::Error err = stageTablePart(info, rows, dir, index, count, files))
      return err;
  return llvm::Error::success();
}

llvm::Error PserverTables::save(llvm::StringRef dir) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("{0}: cannot create directory: {1}", dir, ec.message());
  if (llvm::Error err = finishInterruptedSaves(dir))
    return err;
  SaveSet files(dir.str()); // this pserver's part of every table, replaced together
  if (llvm::Error err = snapshot().stage(dir, files))
    return err;
  return files.commit();
}

llvm::Error PserverTables::load(const CheckpointReader &ckpt, bool ownPartOnly,
                                LoadReport &report) {
  for (Held &h : held_)
    if (llvm::Error err =
            loadTable(*h.table, ckpt, h.stateVars, routing_, pserverIndex_, ownPartOnly, report))
      return err;
  return llvm::Error::success();
}

int64_t PserverTables::largestMessage() const {
  int64_t largest = 0;
  for (const Held &h : held_)
    largest = std::max(largest, kMaxKeysPerMessage * h.table->width() * 4);
  return std::max(largest, kMaxKeysPerMessage * 8 + 4096); // a header full of keys
}

size_t PserverTables::rows() const {
  size_t n = 0;
  for (const Held &h : held_)
    n += h.table->rows();
  return n;
}

size_t PserverTables::bytesHeld() const {
  size_t n = 0;
  for (const Held &h : held_)
    n += h.table->bytesHeld();
  return n;
}

} // namespace oar::runtime
