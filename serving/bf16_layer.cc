// oneDNN's bf16 matmul behind bf16Layer. Each calling thread keeps its own engine, stream and the
// primitives of the shapes it ran: making one takes milliseconds the first time.
#include "serving/bf16_layer.h"

#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "support/error.h"

namespace oar {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// One layer shape's primitives: the rounding of x to bf16, and the matmul.
struct LayerPrimitives {
  dnnl::memory::desc xF32, xBf16, w, bias, out;
  dnnl::reorder round;
  dnnl::matmul matmul;
};

struct ThreadState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::tuple<int64_t, int64_t, int64_t, bool>, LayerPrimitives> layers;
  std::vector<uint16_t> xBf16; // this thread's rounded input
};

ThreadState &threadState() {
  thread_local ThreadState state;
  return state;
}

LayerPrimitives makeLayer(ThreadState &s, int64_t m, int64_t k, int64_t n, bool relu) {
  LayerPrimitives p;
  p.xF32 = dnnl::memory::desc({m, k}, dt::f32, tag::ab);
  p.xBf16 = dnnl::memory::desc({m, k}, dt::bf16, tag::ab);
  p.w = dnnl::memory::desc({k, n}, dt::bf16, tag::ab);
  p.bias = dnnl::memory::desc({1, n}, dt::f32, tag::ab);
  p.out = dnnl::memory::desc({m, n}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.xBf16, p.w, p.bias, p.out), attr, s.engine);
  p.matmul = dnnl::matmul(pd);
  p.round = dnnl::reorder(dnnl::reorder::primitive_desc(s.engine, p.xF32, s.engine, p.xBf16));
  return p;
}

} // namespace

llvm::Error checkBf16Layers() {
  try {
    makeLayer(threadState(), 1, 16, 16, true);
  } catch (const dnnl::error &e) {
    return makeError("this CPU has no bfloat16 matrix product in oneDNN (it needs AVX-512; "
                     "oneDNN: {0}): run the model in f32",
                     e.what());
  }
  return llvm::Error::success();
}

void floatsToBf16(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { // NaN: keep it one (rounding could make it inf)
      out[i] = static_cast<uint16_t>((bits >> 16) | 0x40);
      continue;
    }
    bits += 0x7fffu + ((bits >> 16) & 1);
    out[i] = static_cast<uint16_t>(bits >> 16);
  }
}

llvm::Error bf16Layer(const float *x, int64_t m, int64_t k, const uint16_t *w, int64_t n,
                      const float *bias, bool relu, float *out) {
  try {
    ThreadState &s = threadState();
    auto key = std::make_tuple(m, k, n, relu);
    auto it = s.layers.find(key);
    if (it == s.layers.end()) {
      if (s.layers.size() >= 64) // batch sizes that change every call: keep the cache bounded
        s.layers.clear();
      it = s.layers.emplace(key, makeLayer(s, m, k, n, relu)).first;
    }
    LayerPrimitives &p = it->second;
    s.xBf16.resize(static_cast<size_t>(m * k));
    dnnl::memory xF32(p.xF32, s.engine, const_cast<float *>(x));
    dnnl::memory xBf16(p.xBf16, s.engine, s.xBf16.data());
    p.round.execute(s.stream, xF32, xBf16);
    p.matmul.execute(s.stream,
                     {{DNNL_ARG_SRC, xBf16},
                      {DNNL_ARG_WEIGHTS, dnnl::memory(p.w, s.engine, const_cast<uint16_t *>(w))},
                      {DNNL_ARG_BIAS, dnnl::memory(p.bias, s.engine, const_cast<float *>(bias))},
                      {DNNL_ARG_DST, dnnl::memory(p.out, s.engine, out)}});
    s.stream.wait();
  } catch (const dnnl::error &e) {
    return makeError("bf16 layer [{0} x {1}] * [{1} x {2}]: oneDNN: {3}", m, k, n, e.what());
  }
  return llvm::Error::success();
}

} // namespace oar
