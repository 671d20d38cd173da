// Saving and loading the rows of distributed tables by virtual shard.
#include "runtime/table_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "executor/npy.h"
#include "ir/error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

static std::string shardPath(llvm::StringRef dir, const SparseTable &table, int64_t shard,
                             llvm::StringRef what) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, table.config().name,
                          "shard." + std::to_string(shard) + "." + what + ".npy");
  return path.str().str();
}

llvm::Error saveTable(const SparseTable &table, const SparseRouting &routing, llvm::StringRef dir,
                      SaveSet &files) {
  std::map<int64_t, std::vector<uint64_t>> shards; // shard -> its keys here
  table.forEachRow(
      [&](uint64_t key, const float *) { shards[routing.shardOf(key)].push_back(key); });
  llvm::SmallString<256> tableDir(dir);
  llvm::sys::path::append(tableDir, table.config().name);
  if (std::error_code ec = llvm::sys::fs::create_directories(tableDir))
    return makeError("{0}: cannot create directory: {1}", tableDir, ec.message());
  int64_t stride = table.stride();
  for (auto &[shard, keys] : shards) {
    std::sort(keys.begin(), keys.end()); // the same rows give the same bytes
    auto n = static_cast<int64_t>(keys.size());
    Tensor keyTensor(proto::I64, {n}), values(proto::F32, {n, stride});
    std::memcpy(keyTensor.raw(), keys.data(), keys.size() * sizeof(uint64_t));
    for (int64_t i = 0; i < n; ++i)
      table.readRow(keys[i], values.data<float>() + i * stride);
    if (llvm::Error err = files.add(shardPath(dir, table, shard, "values"), values))
      return err;
    if (llvm::Error err = files.add(shardPath(dir, table, shard, "keys"), keyTensor))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error loadTable(SparseTable &table, const SparseRouting &routing, int64_t pserverIndex,
                      llvm::StringRef dir) {
  int64_t stride = table.stride();
  for (int64_t shard = pserverIndex; shard < routing.numShards; shard += routing.numPservers) {
    std::string keysPath = shardPath(dir, table, shard, "keys");
    if (!llvm::sys::fs::exists(keysPath))
      continue;
    std::string valuesPath = shardPath(dir, table, shard, "values");
    auto keys = readNpy(keysPath);
    if (!keys)
      return keys.takeError();
    auto values = readNpy(valuesPath);
    if (!values)
      return values.takeError();
    int64_t n = keys->numel();
    if (keys->dtype() != proto::I64 || keys->rank() != 1)
      return makeError("{0}: holds {1}{2}; keys must be i64 [n]", keysPath,
                       dtypeName(keys->dtype()), dimsString(keys->dims()));
    if (values->dtype() != proto::F32 || values->rank() != 2 || values->dim(0) != n ||
        values->dim(1) != stride)
      return makeError("{0}: holds {1}{2}; table {3} ({4}) needs f32[{5}, {6}]", valuesPath,
                       dtypeName(values->dtype()), dimsString(values->dims()), table.config().name,
                       table.config().optimizer, n, stride);
    const auto *k = static_cast<const uint64_t *>(keys->raw());
    for (int64_t i = 0; i < n; ++i) {
      if (routing.shardOf(k[i]) != shard || reservedKey(k[i]))
        return makeError("{0}: key {1} at position {2} does not belong to shard {3}", keysPath,
                         k[i], i, shard);
      table.setRow(k[i], values->data<float>() + i * stride);
    }
  }
  return llvm::Error::success();
}

} // namespace oar::runtime
