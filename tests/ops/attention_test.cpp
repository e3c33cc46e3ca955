#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "strata/autograd/engine.h"
#include "strata/autograd/saved_tensor.h"
#include "strata/core/op_observer.h"
#include "strata/ops.h"

using namespace strata;

namespace {

// The unfused reference: softmax(q k^T * scale + mask) v with explicit ops.
Tensor reference_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal) {
  const int64_t T = q.size(-2), S = k.size(-2);
  Tensor s = ops::mul(ops::matmul(q, ops::transpose(k, -1, -2)), 1.0 / std::sqrt(double(q.size(-1))));
  if (causal) {
    Tensor qi = ops::reshape(ops::arange(T), {T, 1}), ki = ops::reshape(ops::arange(S), {1, S});
    s = ops::masked_fill(s, ops::gt(ki, qi), -INFINITY);
  }
  if (mask.defined()) s = ops::masked_fill(s, ops::eq(mask, ops::zeros({}, DType::boolean)), -INFINITY);
  return ops::matmul(ops::softmax(s, -1), v);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

struct Case {
  int64_t B, H, T, S, D, Dv;
  bool causal;
  bool mask;
};

}  // namespace

class AttentionMatchesUnfusedReference : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionMatchesUnfusedReference, ForwardAndBackwardInF64) {
  const Case c = GetParam();
  manual_seed(5);
  auto opts = TensorOptions(DType::f64).requires_grad(true);
  Tensor q = ops::randn({c.B, c.H, c.T, c.D}, opts), k = ops::randn({c.B, c.H, c.S, c.D}, opts),
         v = ops::randn({c.B, c.H, c.S, c.Dv}, opts);
  Tensor mask;
  if (c.mask) {  // padding-style mask [B, 1, 1, S]: last key of batch 0 masked
    std::vector<double> m(size_t(c.B * c.S), 1.0);
    m[size_t(c.S - 1)] = 0.0;
    mask = ops::from_vector(m, {c.B, 1, 1, c.S}, DType::boolean);
  }
  Tensor w = ops::randn({c.B, c.H, c.T, c.Dv}, DType::f64);
  Tensor fused = ops::scaled_dot_product_attention(q, k, v, mask, 0.0, c.causal);
  Tensor ref = reference_attention(q, k, v, mask, c.causal);
  EXPECT_LT(max_abs_diff(fused, ref), 1e-12);
  std::vector<Tensor> gf = autograd::grad({ops::sum(fused * w)}, {q, k, v});
  std::vector<Tensor> gr = autograd::grad({ops::sum(ref * w)}, {q, k, v});
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(gf[size_t(i)], gr[size_t(i)]), 1e-11) << "input " << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionMatchesUnfusedReference,
                         ::testing::Values(Case{1, 1, 5, 5, 3, 3, false, false}, Case{2, 3, 70, 70, 8, 8, true, false},
                                           Case{2, 2, 65, 130, 4, 6, false, true},
                                           Case{1, 2, 129, 129, 16, 16, true, false}));

TEST(Attention, F32AgreesWithF64AndThreeDInputsWork) {
  manual_seed(9);
  Tensor q = ops::randn({4, 33, 16}), k = ops::randn({4, 33, 16}), v = ops::randn({4, 33, 16});
  Tensor a = ops::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true);
  Tensor b = ops::scaled_dot_product_attention(q.to(DType::f64), k.to(DType::f64), v.to(DType::f64), Tensor(), 0.0, true);
  EXPECT_EQ(a.shape(), (Shape{4, 33, 16}));
  EXPECT_LT(max_abs_diff(a, b), 1e-5);
}

TEST(Attention, SavesOnlyLinearMemoryForBackward) {
  // What the node saves must not grow with T * S: q, k, v, out and lse only.
  manual_seed(1);
  auto opts = TensorOptions(DType::f32).requires_grad(true);
  const int64_t T = 512, D = 16;
  Tensor q = ops::randn({1, 1, T, D}, opts), k = ops::randn({1, 1, T, D}, opts), v = ops::randn({1, 1, T, D}, opts);
  struct Sizes final : autograd::SavePolicy {
    autograd::Packed pack(const Tensor& t, const autograd::SaveInfo& i) override {
      bytes += i.bytes;
      return {t, nullptr};
    }
    Tensor unpack(autograd::Packed& p, const autograd::SaveInfo&) override { return p.tensor; }
    size_t bytes = 0;
  };
  auto sizes = std::make_shared<Sizes>();
  {
    autograd::SavePolicyGuard g(sizes);
    ops::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true);
  }
  EXPECT_EQ(sizes->bytes, size_t(4 * (4 * T * D + T)));
}

TEST(Attention, FullyMaskedRowsGiveZerosNotNaN) {
  Tensor q = ops::randn({1, 1, 2, 4}, DType::f64), k = ops::randn({1, 1, 3, 4}, DType::f64),
         v = ops::randn({1, 1, 3, 4}, DType::f64);
  Tensor mask = ops::from_vector(std::vector<double>{0, 0, 0, 1, 1, 0}, {2, 3}, DType::boolean);
  std::vector<double> o = ops::scaled_dot_product_attention(q, k, v, mask).to_double_vector();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(o[size_t(i)], 0.0);
  for (double x : o) EXPECT_FALSE(std::isnan(x));
}

TEST(Attention, BadShapesAndDropoutAreRejected) {
  Tensor q = ops::zeros({1, 2, 4, 8}), k = ops::zeros({1, 2, 4, 7});
  EXPECT_THROW(ops::scaled_dot_product_attention(q, k, k), ShapeError);
  EXPECT_THROW(ops::scaled_dot_product_attention(q, q, q, Tensor(), 0.1), NotImplementedError);
}

TEST(Attention, MetaReportsCost) {
  Tensor q = ops::empty({2, 12, 256, 64}, kMeta);
  CostCounter c;
  {
    OpObserverGuard g(&c);
    Tensor o = ops::scaled_dot_product_attention(q, q, q, Tensor(), 0.0, true);
    EXPECT_EQ(o.shape(), q.shape());
  }
  EXPECT_GT(c.total.flops, 2.0 * 2 * 12 * 256 * 256 * 64);
}

TEST(PackedSelfAttention, PaddingMaskMatchesScaledDotProductAttentionForwardAndBackward) {
  // BERT's path: qkv [B, T, 3C] and a key-padding mask [B, 1, 1, T] against splitting the heads
  // and running scaled_dot_product_attention, in f64, with both mask kinds; T > 64 so the kernel
  // crosses key blocks, and batch 1 masks keys in both blocks.
  manual_seed(17);
  const int64_t B = 2, T = 70, H = 3, D = 4, C = H * D;
  Tensor qkv = ops::randn({B, T, 3 * C}, TensorOptions(DType::f64).requires_grad(true));
  std::vector<double> keep(size_t(B * T), 1.0);
  for (int64_t t = 60; t < T; ++t) keep[size_t(t)] = 0.0;  // batch 0: the last 10 keys are padding
  for (int64_t t : {3, 64, 69}) keep[size_t(T + t)] = 0.0;
  Tensor bool_mask = ops::from_vector(keep, {B, 1, 1, T}, DType::boolean);
  Tensor add_mask = ops::masked_fill(ops::zeros({B, 1, 1, T}, DType::f64),
                                     ops::eq(bool_mask, 0.0), -std::numeric_limits<double>::infinity());
  Tensor w = ops::randn({B, T, C}, DType::f64);
  std::vector<Tensor> parts = ops::split(qkv, C, 2);
  auto heads = [&](const Tensor& t) { return ops::transpose(ops::view(t, {B, T, H, D}), 1, 2); };
  Tensor ref = ops::reshape(ops::transpose(ops::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]),
                                                                             heads(parts[2]), bool_mask),
                                           1, 2),
                            {B, T, C});
  Tensor g_ref = autograd::grad({ops::sum(ref * w)}, {qkv})[0];
  for (const Tensor& mask : {bool_mask, add_mask}) {
    Tensor y = ops::packed_self_attention(qkv, H, mask);
    EXPECT_EQ(y.shape(), (Shape{B, T, C}));
    EXPECT_LT(max_abs_diff(y, ref), 1e-13);
    EXPECT_LT(max_abs_diff(autograd::grad({ops::sum(y * w)}, {qkv})[0], g_ref), 1e-12);
  }
  // The padded keys get no gradient through k and v.
  std::vector<double> g = g_ref.to_double_vector();
  for (int64_t t = 60; t < T; ++t)
    for (int64_t c = C; c < 3 * C; ++c) EXPECT_EQ(g[size_t(t * 3 * C + c)], 0.0) << "t " << t << " c " << c;
}

TEST(PackedSelfAttention, MaskShapesAreCheckedAndMetaGivesShapesAndCost) {
  Tensor qkv = ops::zeros({2, 5, 12});
  EXPECT_THROW(ops::packed_self_attention(qkv, 2, ops::ones({3, 1, 1, 5}, DType::boolean)), ShapeError);
  EXPECT_THROW(ops::packed_self_attention(qkv, 2, ops::ones({2, 1, 1, 4}, DType::boolean)), ShapeError);
  EXPECT_THROW(ops::packed_self_attention(qkv, 2, ops::ones({2, 1, 1, 5}, DType::boolean), true), ValueError);
  Tensor m = ops::empty({8, 128, 3 * 768}, TensorOptions(DType::f32).device(kMeta).requires_grad(true));
  CostCounter c;
  {
    OpObserverGuard g(&c);
    Tensor o = ops::packed_self_attention(m, 12, ops::empty({8, 1, 1, 128}, TensorOptions(DType::boolean).device(kMeta)));
    EXPECT_EQ(o.shape(), (Shape{8, 128, 768}));
    EXPECT_EQ(autograd::grad({ops::sum(o)}, {m})[0].shape(), m.shape());
  }
  EXPECT_GT(c.total.flops, 4.0 * 8 * 12 * 128 * 128 * 64);
}

TEST(LinearCrossEntropy, MatchesUnfusedLossAndGradientsAcrossChunkSizes) {
  manual_seed(21);
  auto opts = TensorOptions(DType::f64).requires_grad(true);
  Tensor x = ops::randn({3, 7, 10}, opts), w = ops::randn({13, 10}, opts);
  std::vector<int64_t> tv;
  for (int i = 0; i < 21; ++i) tv.push_back(i % 5 == 0 ? -100 : (i * 7) % 13);
  Tensor t = ops::from_vector(tv, {3, 7});
  Tensor ref = ops::cross_entropy(ops::matmul(x, ops::transpose(w, 0, 1)), t);
  std::vector<Tensor> gr = autograd::grad({ref}, {x, w});
  for (int64_t chunk : {int64_t(8 * 13), int64_t(8 * 13 * 4), int64_t(1) << 20}) {  // 1 row, 4 rows, all rows
    Tensor fused = ops::linear_cross_entropy(x, w, t, -100, ops::Reduction::Mean, chunk);
    EXPECT_NEAR(fused.item(), ref.item(), 1e-12);
    std::vector<Tensor> gf = autograd::grad({ops::mul(fused, 1.0)}, {x, w});
    EXPECT_LT(max_abs_diff(gf[0], gr[0]), 1e-12);
    EXPECT_LT(max_abs_diff(gf[1], gr[1]), 1e-12);
  }
  Tensor s = ops::linear_cross_entropy(x, w, t, -100, ops::Reduction::Sum);
  Tensor rs = ops::cross_entropy(ops::matmul(x, ops::transpose(w, 0, 1)), t, -100, ops::Reduction::Sum);
  EXPECT_NEAR(s.item(), rs.item(), 1e-11);
}

namespace {

// Keeps everything, noting the storages saved tensors live in (as the tensor cache keys them).
class StorageRecorder final : public autograd::SavePolicy {
 public:
  autograd::Packed pack(const Tensor& t, const autograd::SaveInfo&) override {
    if (t.defined() && !t.is_parameter() && !t.storage()->holds_parameter()) storages[t.storage()->id()] = t.storage()->nbytes();
    return autograd::Packed{t, nullptr};
  }
  Tensor unpack(autograd::Packed& p, const autograd::SaveInfo&) override { return p.tensor; }
  std::map<uint64_t, uint64_t> storages;  // id -> bytes
};

}  // namespace

TEST(PackedSelfAttention, OffTheCpuTheHeadsMergeIsAViewOfTheOutputAttentionSaves) {
  // The composite every non-CPU backend runs (Meta here, CUDA alike): the attention output is
  // laid out [B, T, H, D], so merging the heads is a view and the output projection saves the
  // storage the attention saved. Saved storages: q, k, v (contiguous heads), out, lse; the
  // projection's input adds nothing (it used to add a merged copy of out).
  const int64_t B = 2, T = 24, H = 4, D = 8, C = H * D;
  auto meta = [](Shape s) { return ops::empty(s, TensorOptions(DType::f32).device(kMeta).requires_grad(true)); };
  Tensor qkv = meta({B, T, 3 * C}), w = meta({C, C});
  w.set_is_parameter(true);
  auto recorder = std::make_shared<StorageRecorder>();
  Tensor y;
  {
    autograd::SavePolicyGuard g(recorder);
    Tensor a = ops::packed_self_attention(qkv, H, /*is_causal=*/true);
    EXPECT_TRUE(a.is_contiguous()) << "heads merged by a view";
    y = ops::linear(a, w);
  }
  uint64_t btc = 0, total = 0;
  for (const auto& [id, bytes] : recorder->storages) {
    btc += bytes == uint64_t(B * T * C * 4);
    total += bytes;
  }
  EXPECT_EQ(btc, 4u) << "q, k, v and the output, which the projection shares";
  EXPECT_EQ(total, uint64_t(4 * B * T * C * 4 + B * H * T * 4));
  std::vector<Tensor> grads = autograd::grad({ops::sum(y)}, {qkv, w});
  EXPECT_EQ(grads[0].shape(), qkv.shape());
  EXPECT_EQ(grads[1].shape(), w.shape());
}
