// oneDNN's bf16 matmul behind bf16Layer. Each calling thread keeps its own engine, stream and the
// primitives of the shapes it ran: making one takes milliseconds the first time.
#include "serving/bf16_layer.h"

#include <map>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

// matmul::desc and the primitive_desc constructors taking it are oneDNN 2's (3.0 replaced them).
#if DNNL_VERSION_MAJOR != 2
#error "serving/bf16_layer.cc is written for oneDNN 2.x (Debian 12's libdnnl-dev)"
#endif

#include "support/error.h"

namespace oar {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// One layer shape's primitives: the rounding of x to bf16, and the matmul; and, where the
/// matmul wants its weights in other blocks than packBf16Weights laid out, the reorder to them.
struct LayerPrimitives {
  dnnl::memory::desc xF32, xBf16, packed, w, bias, out;
  dnnl::reorder round, repack;
  bool repacks = false;
  dnnl::matmul matmul;
};

struct ThreadState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::tuple<int64_t, int64_t, int64_t, bool>, LayerPrimitives> layers;
  std::vector<uint16_t> xBf16, repacked; // this thread's rounded input (and weights)
};

ThreadState &threadState() {
  thread_local ThreadState state;
  return state;
}

dnnl::matmul::primitive_desc matmulFor(const dnnl::engine &engine, int64_t m, int64_t k, int64_t n,
                                       bool relu) {
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  dnnl::memory::desc x({m, k}, dt::bf16, tag::ab), w({k, n}, dt::bf16, tag::any),
      bias({1, n}, dt::f32, tag::ab), out({m, n}, dt::f32, tag::ab);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(x, w, bias, out), attr, engine);
}

/// The blocks packBf16Weights lays a [k, n] weight out in: those a one-row matmul picks (the
/// same for every row count on the CPUs tried; bf16Layer reorders where they differ).
dnnl::memory::desc packedLayout(const dnnl::engine &engine, int64_t k, int64_t n) {
  return matmulFor(engine, 1, k, n, false).weights_desc();
}

LayerPrimitives makeLayer(ThreadState &s, int64_t m, int64_t k, int64_t n, bool relu) {
  LayerPrimitives p;
  auto pd = matmulFor(s.engine, m, k, n, relu);
  p.xF32 = dnnl::memory::desc({m, k}, dt::f32, tag::ab);
  p.xBf16 = pd.src_desc();
  p.w = pd.weights_desc();
  p.bias = pd.bias_desc();
  p.out = pd.dst_desc();
  p.matmul = dnnl::matmul(pd);
  p.round = dnnl::reorder(dnnl::reorder::primitive_desc(s.engine, p.xF32, s.engine, p.xBf16));
  p.packed = packedLayout(s.engine, k, n);
  p.repacks = p.packed != p.w;
  if (p.repacks)
    p.repack = dnnl::reorder(dnnl::reorder::primitive_desc(s.engine, p.packed, s.engine, p.w));
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

llvm::Expected<Tensor> packBf16Weights(const float *w, int64_t k, int64_t n) {
  try {
    ThreadState &s = threadState();
    dnnl::memory::desc plain({k, n}, dt::f32, tag::ab), packed = packedLayout(s.engine, k, n);
    Tensor out(proto::BF16, {static_cast<int64_t>(packed.get_size() / 2)});
    dnnl::memory from(plain, s.engine, const_cast<float *>(w)), to(packed, s.engine, out.raw());
    dnnl::reorder(from, to).execute(s.stream, from, to);
    s.stream.wait();
    return out;
  } catch (const dnnl::error &e) {
    return makeError("bf16 weights [{0} x {1}]: oneDNN: {2}", k, n, e.what());
  }
}

llvm::Error bf16Layer(const float *x, int64_t m, int64_t k, const Tensor &packed, int64_t n,
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
    if (packed.bytes() != p.packed.get_size())
      return makeError("bf16 layer [{0} x {1}] * [{1} x {2}]: the packed weights hold {3} bytes, "
                       "not {4}: pack them with packBf16Weights",
                       m, k, n, packed.bytes(), p.packed.get_size());
    s.xBf16.resize(static_cast<size_t>(m * k));
    dnnl::memory xF32(p.xF32, s.engine, const_cast<float *>(x));
    dnnl::memory xBf16(p.xBf16, s.engine, s.xBf16.data());
    dnnl::memory w(p.packed, s.engine, const_cast<void *>(packed.raw()));
    p.round.execute(s.stream, xF32, xBf16);
    if (p.repacks) {
      s.repacked.resize(p.w.get_size() / 2);
      dnnl::memory to(p.w, s.engine, s.repacked.data());
      p.repack.execute(s.stream, w, to);
      w = to;
    }
    p.matmul.execute(s.stream,
                     {{DNNL_ARG_SRC, xBf16},
                      {DNNL_ARG_WEIGHTS, w},
                      {DNNL_ARG_BIAS, dnnl::memory(p.bias, s.engine, const_cast<float *>(bias))},
                      {DNNL_ARG_DST, dnnl::memory(p.out, s.engine, out)}});
    s.stream.wait();
  } catch (const dnnl::error &e) {
    return makeError("bf16 layer [{0} x {1}] * [{1} x {2}]: oneDNN: {3}", m, k, n, e.what());
  }
  return llvm::Error::success();
}

} // namespace oar
