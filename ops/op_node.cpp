#include "ops/op_node.h"

#include "strata/autograd/grad_mode.h"

namespace strata::ops::detail {

size_t OpNode::save(const Tensor& t, bool is_output, RngState rng) {
  autograd::SaveInfo info;
  info.op = name_;
  info.is_output = is_output;
  info.slot = uint32_t(saved_.size());
  info.rng = rng;
  saved_.emplace_back(t, std::move(info));
  return saved_.size() - 1;
}

Tensor OpNode::recompute_output(uint32_t output_nr) {
  if (!can_recompute(output_nr)) return Tensor();
  autograd::NoGradGuard no_grad;
  return forward_again(*this);
}

std::shared_ptr<OpNode> make_node(const char* name, const std::vector<Tensor>& inputs) {
  if (!autograd::any_requires_grad(inputs)) return nullptr;
  auto node = std::make_shared<OpNode>(name);
  for (const Tensor& t : inputs) node->next_edges.push_back(autograd::gradient_edge(t));
  return node;
}

void set_outputs(const std::shared_ptr<OpNode>& node, const std::vector<Tensor*>& outputs) {
  autograd::set_grad_fn(node, outputs);
}

}  // namespace strata::ops::detail
