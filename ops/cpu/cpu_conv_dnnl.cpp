// oneDNN convolution (f32): forward, backward-data and backward-weights primitives built once
// per problem (shapes + geometry) and cached, as PyTorch's mkldnn path does. The primitives pick
// their own blocked layouts (format_tag::any: the JIT AVX-512 kernels want nChw16c activations
// and blocked weights); Strata's NCHW / OIHW tensors are reordered in and out around each call
// into scratch tensors from the CPU allocator. cpu_conv.cpp's im2col kernels are the oracle.
#include "strata/config.h"

#if STRATA_HAVE_DNNL
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "ops/cpu/cpu_backend.h"

namespace strata::cpu {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, bool>;

// A reorder between a plain (user) layout and the layout a primitive chose, when they differ.
struct Reorder {
  std::optional<dnnl::reorder> prim;
  static Reorder make(const memory::desc& from, const memory::desc& to, const dnnl::engine& eng) {
    Reorder r;
    if (from != to) r.prim = dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to));
    return r;
  }
};

struct ConvProblem {
  memory::desc user_src, user_wei, user_dst, bias;
  memory::dims strides, dilates, pad_l, pad_r;
  bool has_bias;
  std::optional<dnnl::convolution_forward::primitive_desc> fwd_pd;
  std::optional<dnnl::convolution_forward> fwd;
  Reorder src_in, wei_in, dst_out;
  // backward, built on first use
  std::optional<dnnl::convolution_backward_data> bwd_data;
  std::optional<dnnl::convolution_backward_data::primitive_desc> bwd_data_pd;
  Reorder bd_ddst_in, bd_wei_in, bd_dsrc_out;
  std::optional<dnnl::convolution_backward_weights> bwd_wei;
  std::optional<dnnl::convolution_backward_weights::primitive_desc> bwd_wei_pd;
  Reorder bw_src_in, bw_ddst_in, bw_dwei_out;
  bool bwd_ok = true;
};

struct ConvCache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mu;
  std::map<Key, std::unique_ptr<ConvProblem>> problems;
};

ConvCache& cache() {
  static ConvCache* c = new ConvCache();  // process-wide like the CPU itself; leaked on purpose
  return *c;
}

// One stream per calling thread (the data-parallel tests run a rank per thread): primitives
// and reorders are shared, streams are not.
dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(cache().engine);
  return s;
}

memory::desc plain(const memory::dims& d, Tag tag) { return memory::desc(d, memory::data_type::f32, tag); }
memory::desc any(const memory::dims& d) { return memory::desc(d, memory::data_type::f32, Tag::any); }

// The problem for x [N, C, H, W], weight [K, C/G, R, S], out [N, K, P, Q]; null when oneDNN has
// no implementation for it.
ConvProblem* problem(const Tensor& x, const Tensor& w, const Tensor& y, bool has_bias, const Conv2dParams& p) {
  ConvCache& c = cache();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), K = w.size(0), R = w.size(2),
                S = w.size(3), P = y.size(2), Q = y.size(3), G = p.groups;
  const Key key{N, C, H, W, K, R, S, p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.dilation[0],
                p.dilation[1], G, has_bias};
  std::lock_guard<std::mutex> lk(c.mu);
  auto it = c.problems.find(key);
  if (it != c.problems.end()) return it->second.get();
  auto pr = std::make_unique<ConvProblem>();
  pr->has_bias = has_bias;
  pr->user_src = plain({N, C, H, W}, Tag::nchw);
  pr->user_dst = plain({N, K, P, Q}, Tag::nchw);
  memory::dims wdims = G == 1 ? memory::dims{K, C, R, S} : memory::dims{G, K / G, C / G, R, S};
  pr->user_wei = plain(wdims, G == 1 ? Tag::oihw : Tag::goihw);
  pr->bias = plain({K}, Tag::x);
  pr->strides = {p.stride[0], p.stride[1]};
  pr->dilates = {p.dilation[0] - 1, p.dilation[1] - 1};  // oneDNN counts the gaps
  pr->pad_l = {p.padding[0], p.padding[1]};
  // oneDNN wants (H - extent + pad_l + pad_r) / stride + 1 == P; torch's floor can leave the
  // right padding "negative" (a stride-2 1x1 conv on an even size): 0 gives the same P then.
  const int64_t eh = (R - 1) * p.dilation[0] + 1, ew = (S - 1) * p.dilation[1] + 1;
  pr->pad_r = {std::max<int64_t>(0, (P - 1) * p.stride[0] + eh - H - p.padding[0]),
               std::max<int64_t>(0, (Q - 1) * p.stride[1] + ew - W - p.padding[1])};
  try {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                      any({N, C, H, W}), any(wdims), has_bias ? pr->bias : memory::desc(),
                                      any({N, K, P, Q}), pr->strides, pr->dilates, pr->pad_l, pr->pad_r);
    pr->fwd_pd.emplace(d, c.engine);
    pr->fwd.emplace(*pr->fwd_pd);
    pr->src_in = Reorder::make(pr->user_src, pr->fwd_pd->src_desc(), c.engine);
    pr->wei_in = Reorder::make(pr->user_wei, pr->fwd_pd->weights_desc(), c.engine);
    pr->dst_out = Reorder::make(pr->fwd_pd->dst_desc(), pr->user_dst, c.engine);
  } catch (const dnnl::error&) {
    pr.reset();
  }
  ConvProblem* raw = pr.get();
  c.problems.emplace(key, std::move(pr));
  return raw;
}

void build_backward(ConvProblem& pr, const dnnl::engine& eng) {
  const memory::desc& fs = pr.fwd_pd->src_desc();
  const memory::desc& fw = pr.fwd_pd->weights_desc();
  const memory::desc& fd = pr.fwd_pd->dst_desc();
  try {
    dnnl::convolution_backward_data::desc dd(dnnl::algorithm::convolution_direct, any(fs.dims()), any(fw.dims()),
                                             any(fd.dims()), pr.strides, pr.dilates, pr.pad_l, pr.pad_r);
    pr.bwd_data_pd.emplace(dd, eng, *pr.fwd_pd);
    pr.bwd_data.emplace(*pr.bwd_data_pd);
    pr.bd_ddst_in = Reorder::make(pr.user_dst, pr.bwd_data_pd->diff_dst_desc(), eng);
    pr.bd_wei_in = Reorder::make(pr.user_wei, pr.bwd_data_pd->weights_desc(), eng);
    pr.bd_dsrc_out = Reorder::make(pr.bwd_data_pd->diff_src_desc(), pr.user_src, eng);
    auto dw = pr.has_bias ? dnnl::convolution_backward_weights::desc(
                                dnnl::algorithm::convolution_direct, any(fs.dims()), any(fw.dims()), pr.bias,
                                any(fd.dims()), pr.strides, pr.dilates, pr.pad_l, pr.pad_r)
                          : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct,
                                                                     any(fs.dims()), any(fw.dims()), any(fd.dims()),
                                                                     pr.strides, pr.dilates, pr.pad_l, pr.pad_r);
    pr.bwd_wei_pd.emplace(dw, eng, *pr.fwd_pd);
    pr.bwd_wei.emplace(*pr.bwd_wei_pd);
    pr.bw_src_in = Reorder::make(pr.user_src, pr.bwd_wei_pd->src_desc(), eng);
    pr.bw_ddst_in = Reorder::make(pr.user_dst, pr.bwd_wei_pd->diff_dst_desc(), eng);
    pr.bw_dwei_out = Reorder::make(pr.bwd_wei_pd->diff_weights_desc(), pr.user_wei, eng);
  } catch (const dnnl::error&) {
    pr.bwd_ok = false;
  }
}

// Scratch memory in a primitive's layout, from Strata's allocator (counted as temporaries).
struct Scratch {
  Tensor buf;
  memory mem;
};
Scratch scratch(const memory::desc& md, const dnnl::engine& eng) {
  Scratch s;
  s.buf = Tensor::empty({int64_t((md.get_size() + 3) / 4)}, DType::f32, kCPU);
  s.mem = memory(md, eng, s.buf.data_ptr());
  return s;
}

// `user` as the primitive wants it: itself, or a reordered copy held in `keep`.
memory into(const Reorder& r, memory user, const memory::desc& md, Scratch& keep, ConvCache& c) {
  if (!r.prim) return user;
  keep = scratch(md, c.engine);
  r.prim->execute(thread_stream(), user, keep.mem);
  return keep.mem;
}

// A primitive's output: written straight into the user tensor when the layouts agree, else into
// scratch that `out` reorders back afterwards.
memory outof(const Reorder& r, memory user, const memory::desc& md, Scratch& keep, ConvCache& c) {
  if (!r.prim) return user;
  keep = scratch(md, c.engine);
  return keep.mem;
}
void finish(const Reorder& r, Scratch& keep, memory user, ConvCache& c) {
  if (r.prim) r.prim->execute(thread_stream(), keep.mem, user);
}

}  // namespace

bool conv2d_dnnl(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const Conv2dParams& p) {
  ConvProblem* pr = problem(x, weight, out, bias.defined(), p);
  if (!pr) return false;
  ConvCache& c = cache();
  memory ux(pr->user_src, c.engine, x.data_ptr()), uw(pr->user_wei, c.engine, weight.data_ptr()),
      uy(pr->user_dst, c.engine, out.data_ptr());
  Scratch sx, sw, sy;
  memory mx = into(pr->src_in, ux, pr->fwd_pd->src_desc(), sx, c);
  memory mw = into(pr->wei_in, uw, pr->fwd_pd->weights_desc(), sw, c);
  memory my = outof(pr->dst_out, uy, pr->fwd_pd->dst_desc(), sy, c);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, my}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, memory(pr->bias, c.engine, bias.data_ptr()));
  pr->fwd->execute(thread_stream(), args);
  finish(pr->dst_out, sy, uy, c);
  thread_stream().wait();
  return true;
}

bool conv2d_backward_dnnl(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                          const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Conv2dParams& p) {
  // A bias gradient without a weight gradient (weight frozen) is rare: the oracle does it.
  if (grad_bias.defined() && !grad_weight.defined()) return false;
  ConvProblem* pr = problem(x, weight, grad_out, grad_bias.defined(), p);
  if (!pr) return false;
  ConvCache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (pr->bwd_ok && !pr->bwd_data) build_backward(*pr, c.engine);
  }
  if (!pr->bwd_ok) return false;
  memory udy(pr->user_dst, c.engine, grad_out.data_ptr());
  if (grad_x.defined()) {
    memory uw(pr->user_wei, c.engine, weight.data_ptr()), udx(pr->user_src, c.engine, grad_x.data_ptr());
    Scratch sdy, sw, sdx;
    memory mdy = into(pr->bd_ddst_in, udy, pr->bwd_data_pd->diff_dst_desc(), sdy, c);
    memory mw = into(pr->bd_wei_in, uw, pr->bwd_data_pd->weights_desc(), sw, c);
    memory mdx = outof(pr->bd_dsrc_out, udx, pr->bwd_data_pd->diff_src_desc(), sdx, c);
    pr->bwd_data->execute(thread_stream(), {{DNNL_ARG_DIFF_DST, mdy}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DIFF_SRC, mdx}});
    finish(pr->bd_dsrc_out, sdx, udx, c);
  }
  if (grad_weight.defined()) {
    memory ux(pr->user_src, c.engine, x.data_ptr()), udw(pr->user_wei, c.engine, grad_weight.data_ptr());
    Scratch sx, sdy, sdw;
    memory mx = into(pr->bw_src_in, ux, pr->bwd_wei_pd->src_desc(), sx, c);
    memory mdy = into(pr->bw_ddst_in, udy, pr->bwd_wei_pd->diff_dst_desc(), sdy, c);
    memory mdw = outof(pr->bw_dwei_out, udw, pr->bwd_wei_pd->diff_weights_desc(), sdw, c);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mx}, {DNNL_ARG_DIFF_DST, mdy}, {DNNL_ARG_DIFF_WEIGHTS, mdw}};
    if (grad_bias.defined()) args.emplace(DNNL_ARG_DIFF_BIAS, memory(pr->bias, c.engine, grad_bias.data_ptr()));
    pr->bwd_wei->execute(thread_stream(), args);
    finish(pr->bw_dwei_out, sdw, udw, c);
  }
  thread_stream().wait();
  return true;
}

}  // namespace strata::cpu
#endif
