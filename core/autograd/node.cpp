#include "strata/autograd/node.h"

#include <atomic>

#include "strata/autograd/grad_mode.h"
#include "strata/autograd/scope.h"
#include "strata/core/backend.h"

namespace strata::autograd {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
}

Node::Node() : sequence_nr(next_sequence_nr.fetch_add(1)), scope(current_scope_path()) {}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  AutogradMeta* m = t.autograd_meta_if_exists();
  if (!m) return {};
  if (m->grad_fn) return Edge{m->grad_fn, m->output_nr};
  if (!m->requires_grad) return {};
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    acc->output_meta.push_back({t.shape(), t.dtype(), t.device()});
    m->grad_accumulator = acc;
  }
  return Edge{acc, 0};
}

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void attach(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs) {
  node->next_edges.clear();
  for (const Tensor& t : inputs) node->next_edges.push_back(gradient_edge(t));
  node->output_meta.clear();
  set_grad_fn(node, outputs);
}

void set_grad_fn(const std::shared_ptr<Node>& node, const std::vector<Tensor*>& outputs) {
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    Tensor* out = outputs[i];
    node->output_meta.push_back({out->shape(), out->dtype(), out->device()});
    if (!is_floating(out->dtype())) continue;
    AutogradMeta& m = out->autograd_meta();
    m.grad_fn = node;
    m.output_nr = i;
  }
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor leaf(leaf_);
  Tensor incoming = std::move(grads.at(0));
  AutogradMeta& m = leaf.autograd_meta();
  STRATA_CHECK(incoming.shape() == leaf.shape(), AutogradError,
               "AccumulateGrad: gradient ", incoming.str(), " does not match leaf ", leaf.str());
  if (!m.grad.defined()) {
    bool exclusive = incoming.impl_ptr().use_count() == 1 && incoming.storage().use_count() == 1 &&
                     incoming.is_contiguous();
    if (exclusive) {
      m.grad = incoming;
    } else {
      MemoryCategoryGuard cat(MemoryCategory::Gradient);
      m.grad = Tensor::empty(leaf.shape(), leaf.dtype(), leaf.device());
      backend_for(leaf.device()).copy(m.grad, incoming);
    }
    m.grad.storage()->set_category(MemoryCategory::Gradient);
  } else {
    Tensor inputs[2] = {m.grad, incoming};
    backend_for(leaf.device()).elementwise(EwOp::Add, m.grad, inputs);
    m.grad.bump_version();
  }
  for (auto& hook : m.post_accumulate_hooks) hook(leaf);
  return {};
}

}  // namespace strata::autograd

namespace strata {
void Tensor::retain_grad() {
  if (is_leaf()) return;  // leaves keep their grad anyway
  AutogradMeta& m = autograd_meta();
  if (m.retains_grad) return;
  m.retains_grad = true;
  m.grad_fn->retained_outputs.push_back({m.output_nr, impl_ptr()});
}
}  // namespace strata
