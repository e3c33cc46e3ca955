#include "strata/autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "strata/autograd/grad_mode.h"
#include "strata/autograd/node.h"
#include "strata/autograd/saved_tensor.h"
#include "strata/core/backend.h"
#include "strata/core/op_observer.h"

namespace strata::autograd {

namespace {

Tensor ones_like_meta(const TensorMeta& m, double value) {
  Tensor t = Tensor::empty(m.shape, m.dtype, m.device);
  if (!m.device.is_meta()) backend_for(m.device).fill(t, value);
  return t;
}

// a + b into a fresh tensor (the engine sums gradients through the Backend, not through ops).
Tensor add_gradients(const Tensor& a, const Tensor& b) {
  STRATA_CHECK(a.shape() == b.shape(), AutogradError, "backward: gradients of ", a.str(),
               " and ", b.str(), " for the same tensor differ in shape");
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  if (!a.device().is_meta()) {
    Tensor in[2] = {a, b};
    backend_for(a.device()).elementwise(EwOp::Add, out, in);
  }
  return out;
}

struct ByLatest {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

// Shared by backward() and grad(): `capture` maps (node, input slot) to an output index.
void run(const std::vector<Edge>& roots, const std::vector<Tensor>& seeds, bool retain_graph,
         bool accumulate_leaves, const std::vector<Edge>& capture, std::vector<Tensor>* captured) {
  // Dependency counts over the reachable graph.
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Edge& e : roots)
    if (e.valid() && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      ++deps[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_to_buffer = [&](Node* n, uint32_t slot, Tensor g) {
    // A gradient has the dtype of the tensor it belongs to (PyTorch casts the same way).
    const TensorMeta& meta = n->output_meta.at(slot);
    if (g.dtype() != meta.dtype && is_floating(meta.dtype)) {
      Tensor cast = Tensor::empty(g.shape(), meta.dtype, g.device());
      if (!g.device().is_meta()) backend_for(g.device()).copy(cast, g);
      g = cast;
    }
    auto& buf = buffers[n];
    if (buf.size() < n->output_meta.size()) buf.resize(n->output_meta.size());
    Tensor& cur = buf.at(slot);
    cur = cur.defined() ? add_gradients(cur, g) : std::move(g);
  };
  for (size_t i = 0; i < roots.size(); ++i)
    if (roots[i].valid()) add_to_buffer(roots[i].fn.get(), roots[i].input_nr, seeds[i]);

  std::priority_queue<Node*, std::vector<Node*>, ByLatest> ready;
  for (const Edge& e : roots)
    if (e.valid() && deps[e.fn.get()] == 0) {
      deps[e.fn.get()] = -1;  // queued
      ready.push(e.fn.get());
    }

  SavePolicy& policy = current_save_policy();
  PhaseGuard phase(Phase::Backward);  // saves made while backward runs (create_graph) say so
  detail::note_backward_ran();
  std::string scope;
  bool in_scope = false;
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(n->output_meta.size());

    bool skip = false;
    for (size_t c = 0; c < capture.size(); ++c) {
      if (capture[c].fn.get() != n) continue;
      (*captured)[c] = grads.at(capture[c].input_nr);
      if (dynamic_cast<AccumulateGrad*>(n)) skip = true;
    }
    if (!accumulate_leaves && dynamic_cast<AccumulateGrad*>(n)) skip = true;
    if (skip) continue;

    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined()) grads[i] = ones_like_meta(n->output_meta[i], 0.0);
    for (auto& [slot, weak] : n->retained_outputs)
      if (auto impl = weak.lock()) Tensor(impl).autograd_meta().grad = grads.at(slot);

    if (!in_scope || n->scope != scope) {
      if (in_scope) policy.on_scope(ScopeEvent::Exit, Phase::Backward, scope);
      scope = n->scope;
      in_scope = true;
      policy.on_scope(ScopeEvent::Enter, Phase::Backward, scope);
    }
    OpObserver* observer = OpObserverGuard::current();
    if (observer) observer->on_node_begin(n->name());
    std::vector<Tensor> out = n->apply(std::move(grads));
    if (observer) observer->on_node_end();
    if (!retain_graph) n->release_saved();

    for (size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.valid()) continue;
      if (i < out.size() && out[i].defined()) add_to_buffer(e.fn.get(), e.input_nr, std::move(out[i]));
      if (--deps[e.fn.get()] == 0) ready.push(e.fn.get());
    }
  }
  if (in_scope) policy.on_scope(ScopeEvent::Exit, Phase::Backward, scope);
}

std::vector<Edge> root_edges(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                             std::vector<Tensor>* seeds) {
  STRATA_CHECK(grads.empty() || grads.size() == roots.size(), AutogradError,
               "backward: got ", grads.size(), " gradients for ", roots.size(), " outputs");
  std::vector<Edge> edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    STRATA_CHECK(r.requires_grad(), AutogradError, "backward: output ", i, " (", r.str(),
                 ") does not require grad and has no grad_fn");
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      STRATA_CHECK(r.numel() == 1, AutogradError,
                   "backward: a gradient must be given for non-scalar output ", r.str());
      g = ones_like_meta({r.shape(), r.dtype(), r.device()}, 1.0);
    } else {
      STRATA_CHECK(g.shape() == r.shape(), AutogradError, "backward: gradient ", g.str(),
                   " does not match output ", r.str());
    }
    edges.push_back(gradient_edge(r));
    seeds->push_back(g);
  }
  return edges;
}

}  // namespace

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
              bool retain_graph) {
  NoGradGuard no_grad;
  std::vector<Tensor> seeds;
  std::vector<Edge> edges = root_edges(roots, grads, &seeds);
  run(edges, seeds, retain_graph, /*accumulate_leaves=*/true, {}, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool allow_unused) {
  NoGradGuard no_grad;
  std::vector<Tensor> seeds;
  std::vector<Edge> edges = root_edges(outputs, grad_outputs, &seeds);
  std::vector<Edge> capture;
  for (const Tensor& in : inputs) {
    Edge e = gradient_edge(in);
    STRATA_CHECK(e.valid(), AutogradError, "grad: input ", in.str(), " does not require grad");
    capture.push_back(e);
  }
  std::vector<Tensor> result(inputs.size());
  run(edges, seeds, retain_graph, /*accumulate_leaves=*/false, capture, &result);
  for (size_t i = 0; i < result.size(); ++i)
    STRATA_CHECK(allow_unused || result[i].defined(), AutogradError, "grad: input ", i,
                 " was not used in the graph (pass allow_unused=true)");
  return result;
}

}  // namespace strata::autograd

namespace strata {
void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph);
}
}  // namespace strata
