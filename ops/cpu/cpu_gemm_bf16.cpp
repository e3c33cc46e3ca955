// bf16 x bf16 -> f32 GEMM through oneDNN's matmul primitive (AVX512-BF16 / AMX kernels where the
// CPU has them). oneDNN 2.6 exports no bf16 BLAS-style call, so one primitive is built per
// problem (shapes, layouts, alpha/beta) and cached; a training step repeats the same few.
#include "strata/config.h"

#if STRATA_HAVE_DNNL
#include <map>
#include <mutex>
#include <tuple>

#include <oneapi/dnnl/dnnl.hpp>

#include "ops/cpu/cpu_backend.h"

namespace strata::cpu {

namespace {

using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float, float>;

struct Gemm {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c;
};

struct Bf16Gemms {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mu;
  std::map<Key, Gemm> cache;
};

Bf16Gemms& gemms() {
  static Bf16Gemms* g = new Bf16Gemms();  // process-wide like the CPU itself; leaked on purpose
  return *g;
}

}  // namespace

// C[M, N] (f32, row stride ldc) = alpha * op(A) @ op(B) + beta * C, A and B bf16 row-major with
// leading dims lda / ldb (transposed: stored column-major).
void gemm_bf16_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const void* A, int64_t lda,
                   const void* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  using dt = dnnl::memory::data_type;
  Bf16Gemms& g = gemms();
  const Key key{ta, tb, M, N, K, lda, ldb, ldc, alpha, beta};
  Gemm* gm;
  {
    std::lock_guard<std::mutex> lk(g.mu);
    auto it = g.cache.find(key);
    if (it == g.cache.end()) {
      dnnl::memory::desc a({M, K}, dt::bf16, ta ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1});
      dnnl::memory::desc b({K, N}, dt::bf16, tb ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
      dnnl::memory::desc c({M, N}, dt::f32, dnnl::memory::dims{ldc, 1});
      dnnl::primitive_attr attr;
      if (alpha != 1.f) attr.set_output_scales(0, {alpha});
      if (beta != 0.f) {
        dnnl::post_ops po;
        po.append_sum(beta);
        attr.set_post_ops(po);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, g.engine);
      it = g.cache.emplace(key, Gemm{dnnl::matmul(pd), a, b, c}).first;
    }
    gm = &it->second;
  }
  dnnl::memory ma(gm->a, g.engine, const_cast<void*>(A)), mb(gm->b, g.engine, const_cast<void*>(B)),
      mc(gm->c, g.engine, C);
  gm->prim.execute(g.stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  g.stream.wait();
}

}  // namespace strata::cpu
#endif
