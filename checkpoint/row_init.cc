// Initial weights of sparse-table rows.
#include "checkpoint/row_init.h"

#include <cmath>

#include "ops/op_registry.h"
#include "support/hash.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

/// A uniform float in [0, 1) from 24 bits of a hash.
static float unit(uint64_t h) { return static_cast<float>(h >> 40) * (1.0f / 16777216.0f); }

uint64_t RowInit::streamSeed() const {
  return mixKey(static_cast<uint64_t>(seed) ^ mixKey(fnv1a64(table)));
}

void RowInit::weightsFrom(uint64_t tableSeed, uint64_t key, int64_t width, float *out) const {
  uint64_t base = mixKey(tableSeed ^ mixKey(key));
  // Element j draws from its own counter: no element depends on another's draw.
  auto draw = [&](int64_t j) { return mixKey(base + kGoldenGamma * (j + 1)); };
  for (int64_t j = 0; j < width; ++j) {
    if (kind == "constant") {
      out[j] = a;
    } else if (kind == "gaussian") { // Box-Muller on two draws of the element's stream
      uint64_t h = draw(j);
      float u1 = 1.0f - unit(h), u2 = unit(mixKey(h));
      out[j] = a + b * std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
    } else {
      out[j] = a + (b - a) * unit(draw(j));
    }
  }
}

std::string RowInit::describe() const {
  return llvm::formatv("{0} {1} {2} seed {3}", kind, a, b, seed).str();
}

/// Attr `name` of `op` as its schema reads it, or `fallback` when the op has no such attr.
static const proto::Attr *schemaAttr(const proto::Op &op, llvm::StringRef name,
                                     proto::Attr &storage) {
  const ops::OpSchema *schema = ops::lookupOp(op.type());
  if (!schema || !schema->findAttr(name))
    return nullptr;
  storage = ops::AttrReader(op, *schema).get(name);
  return &storage;
}

RowInit rowInitOf(const proto::Op &init, llvm::StringRef table) {
  RowInit r;
  r.table = table.str();
  proto::Attr storage;
  auto f = [&](llvm::StringRef name) {
    const proto::Attr *a = schemaAttr(init, name, storage);
    return a ? a->f() : 0.0f;
  };
  r.kind = "constant", r.a = f("value"), r.b = 0.0f;
  if (init.type() == "uniform_random")
    r.kind = "uniform", r.a = f("min"), r.b = f("max");
  else if (init.type() == "gaussian_random")
    r.kind = "gaussian", r.a = f("mean"), r.b = f("std");
  const proto::Attr *seed = schemaAttr(init, "seed", storage);
  r.seed = seed ? seed->i() : 0;
  return r;
}

const proto::Op *initializerOf(const proto::Program &startup, llvm::StringRef var) {
  const proto::Op *found = nullptr;
  for (const proto::Op &op : startup.blocks(0).ops())
    if (llvm::is_contained(allOutputNames(op), var))
      found = &op; // the last writer wins, as running the startup does
  return found;
}

} // namespace oar
