// A small MLP with one parameter forward never uses, and per-rank batches made up front: the model
// and data of the in-process data-parallel tests (DDP, ZeRO-2).
#pragma once

#include <memory>
#include <vector>

#include "strata/nn.h"
#include "strata/ops.h"

namespace strata::dist::testing {

class Mlp : public nn::Module {
 public:
  explicit Mlp(int64_t hidden = 16) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(6, hidden));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, 16));
    fc3 = register_module("fc3", std::make_shared<nn::Linear>(16, 3));
    unused = register_parameter("unused", ops::ones({5}));
  }
  Tensor forward(const Tensor& x) override { return (*fc3)(ops::tanh((*fc2)(ops::tanh((*fc1)(x))))); }
  Tensor loss(const Tensor& x, const Tensor& y) { return ops::mean(ops::square(ops::sub(forward(x), y))); }
  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
  Tensor unused;
};

inline std::shared_ptr<Mlp> make_mlp(int64_t hidden = 16) {
  manual_seed(7);
  return std::make_shared<Mlp>(hidden);
}

// Per-rank data made up front on one thread: rank r gets batch r.
struct Data {
  std::vector<Tensor> x, y;
};
inline Data make_data(int batches) {
  manual_seed(99);
  Data d;
  for (int i = 0; i < batches; ++i) {
    d.x.push_back(ops::randn({4, 6}));
    d.y.push_back(ops::randn({4, 3}));
  }
  return d;
}

}  // namespace strata::dist::testing
