// Node and Edge: the backward graph. Each differentiable op defines a Node subclass that
// holds SavedTensors (never Tensors) and computes input gradients from output gradients.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/core/tensor.h"

namespace strata::autograd {

class Node;

// Where a gradient flows: input `input_nr` of node `fn`.
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// Shape/dtype/device of a forward output, so a missing gradient can be zero-filled.
struct TensorMeta {
  Shape shape;
  DType dtype = DType::f32;
  Device device;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  virtual std::string name() const = 0;
  // grads[i] is the gradient of forward output i (zero-filled if nothing flowed into it);
  // returns one gradient per next edge (undefined where the input needs none).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  // Drops saved tensors; called after apply when backward runs without retain_graph.
  virtual void release_saved() {}
  // Op-level recompute (the tensor cache's Recompute action): whether forward output
  // `output_nr` can be made again from this node's saved tensors, and making it (grad mode off).
  virtual bool can_recompute(uint32_t output_nr) const { return false; }
  virtual Tensor recompute_output(uint32_t output_nr) { return Tensor(); }

  std::vector<Edge> next_edges;
  std::vector<TensorMeta> output_meta;
  // Creation order; the engine runs ready nodes latest-first, as PyTorch does.
  uint64_t sequence_nr;
  // Non-leaf outputs that asked for retain_grad().
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained_outputs;
  // Module path at creation, so backward can report scope events.
  std::string scope;
};

// The gradient edge of `t`: its grad_fn, its leaf accumulator, or none.
Edge gradient_edge(const Tensor& t);

// Whether any input requires grad and grad mode is on.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
bool any_requires_grad(const std::vector<Tensor>& inputs);

// Connects `node` to `inputs` (next edges) and makes it the grad_fn of `outputs`.
void attach(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs);

// Makes `node` the grad_fn of `outputs` (appending their metadata to node->output_meta).
void set_grad_fn(const std::shared_ptr<Node>& node, const std::vector<Tensor*>& outputs);

// Sink node of a leaf: accumulates into .grad() and runs post-accumulate hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

}  // namespace strata::autograd
