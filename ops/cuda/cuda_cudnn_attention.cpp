// cuDNN's fused attention through its frontend's graph API (sdpa and sdpa_backward): one graph per
// problem (dtype, shapes, strides, causality, scale, direction), built on first use and cached per
// device, including the problems cuDNN refused, so a refusal costs one build. The row statistics
// cuDNN keeps are the natural log-sum-exp of the scaled scores, Strata's lse, so a forward through
// cuDNN and a backward through another path (or the reverse) agree. The CPU is the oracle
// (tests/ops/cuda_fused_attention_test.cpp).
#include "ops/cuda/cuda_cudnn_attention.h"

#include "strata/config.h"

#if STRATA_HAVE_CUDNN && STRATA_HAVE_CUDNN_FRONTEND
#include <cudnn_frontend.h>

#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ops/common/dtype_dispatch.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_cudnn_handle.h"

namespace strata::gpu {

namespace fe = cudnn_frontend;

namespace {

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kdO, kdQ, kdK, kdV };

using Graph = fe::graph::Graph;

// Everything a graph is built from: direction, device, dtype, causality, the scale's bits, and the
// dims and strides of every tensor it binds.
struct Key {
  bool backward;
  int device;
  DType dtype;
  bool causal;
  uint32_t scale_bits;
  std::vector<int64_t> layout;
  auto operator<=>(const Key&) const = default;
};

std::vector<int64_t> dims(const Tensor& t) { return {t.size(0), t.size(1), t.size(2), t.size(3)}; }
std::vector<int64_t> strides(const Tensor& t) { return {t.stride(0), t.stride(1), t.stride(2), t.stride(3)}; }

Key key_of(bool backward, bool causal, double scale, std::initializer_list<const Tensor*> ts) {
  const float s = float(scale);
  Key key{backward, (*ts.begin())->device().index, (*ts.begin())->dtype(), causal, 0, {}};
  std::memcpy(&key.scale_bits, &s, sizeof s);
  for (const Tensor* t : ts) {
    for (int64_t d : dims(*t)) key.layout.push_back(d);
    for (int64_t st : strides(*t)) key.layout.push_back(st);
  }
  return key;
}

// cuDNN's attention engines read 16-byte vectors: every pointer 16-byte aligned, unit stride along
// the head dim, every other stride a multiple of 8 elements.
bool aligned(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 != 0 || t->stride(3) != 1) return false;
    for (int d = 0; d < 3; ++d)
      if (t->size(d) > 1 && t->stride(d) % 8 != 0) return false;
  }
  return true;
}

fe::DataType_t fe_dtype(DType dt) {
  return dt == DType::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
}

std::shared_ptr<fe::graph::Tensor_attributes> bind(Graph& g, const char* name, Uid uid, const Tensor& t) {
  return g.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims(t)).set_stride(strides(t)));
}

// lse, f32 [B, H, T], as cuDNN's [B, H, T, 1] statistics.
void as_stats(fe::graph::Tensor_attributes& s, const Tensor& lse) {
  s.set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({lse.size(0), lse.size(1), lse.size(2), 1})
      .set_stride({lse.size(1) * lse.size(2), lse.size(2), 1, 1});
}

// Validates the graph and builds its plan; false where any step reports the problem unsupported.
bool build(Graph& g, cudnnHandle_t h) {
  if (!g.validate().is_good()) return false;
  if (!g.build_operation_graph(h).is_good()) return false;
  if (!g.create_execution_plans({fe::HeurMode_t::A}).is_good()) return false;
  if (!g.check_support(h).is_good()) return false;
  return g.build_plans(h).is_good();
}

std::shared_ptr<Graph> new_graph(DType dt) {
  auto g = std::make_shared<Graph>();
  g->set_io_data_type(fe_dtype(dt))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

// The cached graph for `key`, built by `make` on first use; null where cuDNN refused it.
template <class Make>
std::shared_ptr<Graph> cached(const Key& key, Make&& make) {
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<Graph>> graphs;
  std::lock_guard<std::mutex> lk(mu);
  auto it = graphs.find(key);
  if (it == graphs.end()) {
    std::shared_ptr<Graph> g;
    try {
      g = make();
    } catch (const std::exception&) {  // the frontend throws where it cannot load a library it needs
      g = nullptr;
    }
    it = graphs.emplace(key, std::move(g)).first;
  }
  return it->second;
}

void run(CudaBackend& be, const Graph& g, int dev, std::unordered_map<int64_t, void*>& pack, const char* op,
         const Tensor& q) {
  int64_t bytes = 0;
  STRATA_CHECK(g.get_workspace_size(bytes).is_good(), DeviceError, op, ": cuDNN gave no workspace size for ",
               q.str());
  Tensor work = bytes > 0 ? be.empty({bytes}, DType::u8, dev) : Tensor();
  auto st = g.execute(cudnn_handle(dev), pack, work.defined() ? work.data_ptr() : nullptr);
  STRATA_CHECK(st.is_good(), DeviceError, op, ": cuDNN's attention failed on ", q.str(), ": ",
               st.get_message());
}

bool problem_ok(const Tensor& q, const Tensor& lse) {
  return common::is_half(q.dtype()) && q.size(2) > 0 && lse.dtype() == DType::f32 && lse.is_contiguous();
}

}  // namespace

bool cudnn_attention_built() { return true; }

bool cudnn_attention_forward(CudaBackend& be, const Tensor& out, const Tensor& lse, const Tensor& q,
                             const Tensor& k, const Tensor& v, bool causal, double scale) {
  if (!problem_ok(q, lse) || k.size(2) == 0 || !aligned({&q, &k, &v, &out})) return false;
  const int dev = q.device().index;
  const Key key = key_of(false, causal, scale, {&q, &k, &v, &out});
  std::shared_ptr<Graph> g = cached(key, [&]() -> std::shared_ptr<Graph> {
    auto gr = new_graph(q.dtype());
    auto Q = bind(*gr, "q", kQ, q), K = bind(*gr, "k", kK, k), V = bind(*gr, "v", kV, v);
    auto opts = fe::graph::SDPA_attributes()
                    .set_name("attention")
                    .set_generate_stats(true)
                    .set_attn_scale(float(scale))
                    .set_causal_mask(causal);
    auto [O, stats] = gr->sdpa(Q, K, V, opts);
    O->set_output(true).set_uid(kO).set_dim(dims(out)).set_stride(strides(out));
    stats->set_output(true);
    as_stats(*stats, lse);
    return build(*gr, cudnn_handle(dev)) ? gr : nullptr;
  });
  if (!g) return false;
  std::unordered_map<int64_t, void*> pack{{kQ, q.data_ptr()},
                                          {kK, k.data_ptr()},
                                          {kV, v.data_ptr()},
                                          {kO, out.data_ptr()},
                                          {kStats, lse.data_ptr()}};
  run(be, *g, dev, pack, "attention", q);
  return true;
}

bool cudnn_attention_backward(CudaBackend& be, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, bool causal, double scale) {
  if (!problem_ok(q, lse) || k.size(2) == 0) return false;
  const int dev = q.device().index;
  auto or_scratch = [&](const Tensor& g, const Tensor& like) {
    return g.defined() ? g : be.empty(like.shape(), like.dtype(), dev);
  };
  const Tensor gq = or_scratch(dq, q), gk = or_scratch(dk, k), gv = or_scratch(dv, v);
  if (!aligned({&q, &k, &v, &out, &dout, &gq, &gk, &gv})) return false;
  const Key key = key_of(true, causal, scale, {&q, &k, &v, &out, &dout, &gq, &gk, &gv});
  std::shared_ptr<Graph> g = cached(key, [&]() -> std::shared_ptr<Graph> {
    auto gr = new_graph(q.dtype());
    auto Q = bind(*gr, "q", kQ, q), K = bind(*gr, "k", kK, k), V = bind(*gr, "v", kV, v);
    auto O = bind(*gr, "o", kO, out), dO = bind(*gr, "do", kdO, dout);
    auto stats = gr->tensor(fe::graph::Tensor_attributes().set_name("lse"));
    as_stats(*stats, lse);
    auto opts = fe::graph::SDPA_backward_attributes()
                    .set_name("attention_backward")
                    .set_attn_scale(float(scale))
                    .set_causal_mask(causal)
                    .set_deterministic_algorithm(true);
    auto [dQ, dK, dV] = gr->sdpa_backward(Q, K, V, O, dO, stats, opts);
    dQ->set_output(true).set_uid(kdQ).set_dim(dims(gq)).set_stride(strides(gq));
    dK->set_output(true).set_uid(kdK).set_dim(dims(gk)).set_stride(strides(gk));
    dV->set_output(true).set_uid(kdV).set_dim(dims(gv)).set_stride(strides(gv));
    return build(*gr, cudnn_handle(dev)) ? gr : nullptr;
  });
  if (!g) return false;
  std::unordered_map<int64_t, void*> pack{
      {kQ, q.data_ptr()},   {kK, k.data_ptr()},     {kV, v.data_ptr()},
      {kO, out.data_ptr()}, {kdO, dout.data_ptr()}, {kStats, lse.data_ptr()},
      {kdQ, gq.data_ptr()}, {kdK, gk.data_ptr()},   {kdV, gv.data_ptr()}};
  run(be, *g, dev, pack, "attention_backward", q);
  return true;
}

}  // namespace strata::gpu

#else

namespace strata::gpu {

bool cudnn_attention_built() { return false; }
bool cudnn_attention_forward(CudaBackend&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor&, bool, double) {
  return false;
}
bool cudnn_attention_backward(CudaBackend&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool,
                              double) {
  return false;
}

}  // namespace strata::gpu

#endif
