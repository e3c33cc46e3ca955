#include "strata/autograd/checkpoint.h"

#include <memory>
#include <string>

#include "strata/autograd/grad_mode.h"
#include "strata/autograd/saved_tensor.h"
#include "strata/autograd/scope.h"
#include "strata/core/error.h"
#include "strata/core/generator.h"

namespace strata::autograd {

namespace {

thread_local int tl_recompute_depth = 0;

// What one placeholder stood for: enough to check that the recompute made the same tensor.
struct PackedShape {
  Shape shape;
  DType dtype;
  std::string op;
};

// The state one segment shares among its placeholders.
struct Segment {
  SegmentFn fn;
  std::vector<SavedTensor> inputs;  // saved through the outer policy
  std::vector<bool> input_requires_grad;
  RngState rng{};
  std::string scope, block;  // where the segment was called from
  std::shared_ptr<SavePolicy> outer;
  std::vector<PackedShape> packed;  // forward's packs, in order
  std::vector<Tensor> filled;       // recompute's packs, cleared as placeholders die
  std::vector<std::weak_ptr<StorageImpl>> filled_storage;
  size_t recomputes = 0;

  void recompute();
  void clear(size_t k) {
    if (k >= filled.size() || !filled[k].defined()) return;
    if (auto s = filled_storage[k].lock()) s->release_saved();
    filled[k] = Tensor();
  }
};

struct Placeholder {
  std::shared_ptr<Segment> segment;
  size_t index = 0;
  ~Placeholder() { segment->clear(index); }
};

// Installed while the segment's forward runs: saves become placeholders.
class SegmentForwardPolicy final : public SavePolicy {
 public:
  explicit SegmentForwardPolicy(std::shared_ptr<Segment> s) : seg_(std::move(s)) {}
  Packed pack(const Tensor& t, const SaveInfo& info) override {
    if (info.is_parameter) return Packed{t, nullptr};  // parameters are never dropped
    auto ph = std::make_shared<Placeholder>();
    ph->segment = seg_;
    ph->index = seg_->packed.size();
    seg_->packed.push_back({t.shape(), t.dtype(), info.op});
    return Packed{Tensor(), ph};
  }
  Tensor unpack(Packed& p, const SaveInfo& info) override {
    if (p.tensor.defined()) return p.tensor;
    auto* ph = static_cast<Placeholder*>(p.handle.get());
    Segment& s = *ph->segment;
    if (ph->index >= s.filled.size() || !s.filled[ph->index].defined()) s.recompute();
    STRATA_CHECK(ph->index < s.filled.size() && s.filled[ph->index].defined(), AutogradError,
                 info.op, ": recompute segment at '", s.scope,
                 "' did not reproduce saved tensor #", ph->index);
    return s.filled[ph->index];
  }
  void on_scope(ScopeEvent e, Phase ph, const std::string& path) override {
    seg_->outer->on_scope(e, ph, path);
  }
  bool wants_segment(const std::string&) override { return false; }  // no nesting by policy

 private:
  std::shared_ptr<Segment> seg_;
};

// Installed while the segment re-runs: the k-th save fills placeholder k.
class SegmentRecomputePolicy final : public SavePolicy {
 public:
  explicit SegmentRecomputePolicy(Segment& s) : seg_(s) {}
  Packed pack(const Tensor& t, const SaveInfo& info) override {
    if (info.is_parameter) return Packed{t, nullptr};
    size_t k = next_++;
    STRATA_CHECK(k < seg_.packed.size(), AutogradError, "recompute segment at '", seg_.scope,
                 "': the recompute saved more tensors than the forward did (", seg_.packed.size(),
                 "); the segment's forward is not deterministic");
    const PackedShape& want = seg_.packed[k];
    STRATA_CHECK(t.shape() == want.shape && t.dtype() == want.dtype, AutogradError,
                 "recompute segment at '", seg_.scope, "': saved tensor #", k, " of ", want.op,
                 " was ", shape_str(want.shape), " ", dtype_name(want.dtype),
                 " in forward but ", shape_str(t.shape()), " ", dtype_name(t.dtype()),
                 " in the recompute");
    seg_.filled[k] = t;
    seg_.filled_storage[k] = t.storage();
    seg_.outer->observe_recompute(t, info);
    t.storage()->acquire_saved();  // a recompute transient is a saved activation
    return Packed{Tensor(), nullptr};
  }
  Tensor unpack(Packed& p, const SaveInfo&) override { return p.tensor; }
  void on_scope(ScopeEvent e, Phase ph, const std::string& path) override {
    seg_.outer->on_scope(e, ph, path);
  }
  size_t count() const { return next_; }

 private:
  Segment& seg_;
  size_t next_ = 0;
};

struct DepthGuard {
  DepthGuard() { ++tl_recompute_depth; }
  ~DepthGuard() { --tl_recompute_depth; }
};

void Segment::recompute() {
  ++recomputes;
  std::vector<Tensor> in;
  in.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor t = inputs[i].unpack();
    if (t.defined()) {
      t = t.detach();
      if (input_requires_grad[i]) t.set_requires_grad(true);
    }
    in.push_back(std::move(t));
  }
  filled.assign(packed.size(), Tensor());
  filled_storage.assign(packed.size(), {});
  auto policy = std::make_shared<SegmentRecomputePolicy>(*this);
  {
    DepthGuard depth;
    PhaseGuard phase(Phase::Recompute);
    bool grad_was = GradMode::is_enabled();
    GradMode::set_enabled(true);
    Generator& gen = current_generator();
    RngState after = gen.state();
    gen.set_state(rng);
    try {
      SavePolicyGuard guard(policy);
      ScopeGuard where(ScopeGuard::Absolute{}, scope, block);
      std::vector<Tensor> out = fn(in);
      (void)out;  // the recompute graph dies here; only the filled tensors are kept
    } catch (...) {
      gen.set_state(after);
      GradMode::set_enabled(grad_was);
      throw;
    }
    gen.set_state(after);
    GradMode::set_enabled(grad_was);
  }
  STRATA_CHECK(policy->count() == packed.size(), AutogradError, "recompute segment at '", scope,
               "': the forward saved ", packed.size(), " tensors but the recompute saved ",
               policy->count(), "; the segment's forward is not deterministic");
}

}  // namespace

bool in_recompute() { return tl_recompute_depth > 0; }

std::vector<Tensor> checkpoint(SegmentFn fn, const std::vector<Tensor>& inputs, const std::string& block) {
  if (!GradMode::is_enabled()) return fn(inputs);
  auto seg = std::make_shared<Segment>();
  seg->outer = current_save_policy_ptr();
  seg->scope = current_scope_path();
  seg->block = current_block_path();
  seg->rng = current_generator().state();
  seg->input_requires_grad.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    SaveInfo info;
    info.op = "checkpoint";
    info.slot = uint32_t(seg->inputs.size());
    if (!block.empty()) info.scope = info.block = block;
    seg->inputs.emplace_back(t, std::move(info));  // packed by the outer policy
    seg->input_requires_grad.push_back(t.defined() && t.requires_grad());
  }
  std::vector<Tensor> out;
  {
    SavePolicyGuard guard(std::make_shared<SegmentForwardPolicy>(seg));
    SaveKeysOffGuard no_keys;
    out = fn(inputs);
  }
  seg->fn = std::move(fn);
  return out;
}

}  // namespace strata::autograd
