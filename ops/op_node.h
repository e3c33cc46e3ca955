// OpNode: the autograd node every op uses. Its backward is a function of the output
// gradients and of the node's SavedTensors; the function may capture shapes and scalars,
// never tensors (docs/design.md, "Layer 2: autograd and the SavedTensor seam").
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strata/autograd/node.h"
#include "strata/autograd/saved_tensor.h"

namespace strata::ops::detail {

class OpNode final : public autograd::Node {
 public:
  using BackwardFn = std::function<std::vector<Tensor>(OpNode& self, std::vector<Tensor>& grads)>;

  explicit OpNode(const char* name) : name_(name) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override { return backward(*this, grads); }
  void release_saved() override {
    for (auto& s : saved_) s.release();
  }

  // Saves `t` through the current SavePolicy; returns its slot.
  size_t save(const Tensor& t, bool is_output = false, RngState rng = {});
  Tensor saved(size_t slot) const { return saved_.at(slot).unpack(); }
  // Whether forward input `i` needs a gradient.
  bool needs_grad(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }
  bool can_recompute(uint32_t output_nr) const override { return output_nr == 0 && bool(forward_again); }
  Tensor recompute_output(uint32_t output_nr) override;

  BackwardFn backward;
  // Optional: output 0 from the saved tensors alone (set by cheap ops, e.g. GELU from its input),
  // so the cache can drop that output and make it again when a consumer's backward needs it.
  std::function<Tensor(OpNode& self)> forward_again;

 private:
  const char* name_;
  std::vector<autograd::SavedTensor> saved_;
};

// A node wired to `inputs` when any of them requires grad (and grad mode is on), else null.
std::shared_ptr<OpNode> make_node(const char* name, const std::vector<Tensor>& inputs);
// Makes `node` the grad_fn of `outputs`.
void set_outputs(const std::shared_ptr<OpNode>& node, const std::vector<Tensor*>& outputs);

}  // namespace strata::ops::detail
