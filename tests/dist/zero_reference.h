// The one-process reference of the ZeRO tests: the MLP of mlp_fixture.h trained with
// --grad-accum 2 (batches 2s and 2s + 1 at half weight), its parameters after each step, the
// norms clipping saw, and the optimizer's state at the end.
#pragma once

#include <vector>

#include "strata/optim/adamw.h"
#include "strata/optim/clip_grad.h"
#include "tests/dist/mlp_fixture.h"

namespace strata::dist::testing {

inline std::vector<std::vector<float>> values_of(const std::vector<Tensor>& ts) {
  std::vector<std::vector<float>> v;
  for (const Tensor& t : ts) v.push_back(t.to_vector<float>());
  return v;
}

// Weight decay on the layers, none on the unused parameter (its gradient is zeros under data
// parallel and absent in one process: without decay AdamW leaves it alone either way).
inline std::vector<optim::ParamGroup> groups_of(Mlp& m) {
  return {optim::ParamGroup({m.fc1->weight, m.fc2->weight, m.fc3->weight},
                            optim::AdamWOptions(1e-2).weight_decay(0.1)),
          optim::ParamGroup({m.fc1->bias, m.fc2->bias, m.fc3->bias, m.unused},
                            optim::AdamWOptions(1e-2).weight_decay(0))};
}

constexpr int kSteps = 3;
constexpr int64_t kWide = 4000;  // hidden width whose first layer (6 x 4000) spans two blocks

// One process: each step accumulates batches 2s and 2s + 1 at half weight (--grad-accum 2), then
// clips (when max_norm > 0) and steps. Returns the parameters after each step and the optimizer.
struct Reference {
  std::vector<std::vector<std::vector<float>>> params;  // per step
  std::vector<double> norms;
  optim::TensorDict state;
};
inline Reference train_one_process(const Data& d, double max_norm, int64_t hidden = 16) {
  auto model = make_mlp(hidden);
  optim::AdamW opt(groups_of(*model), optim::AdamWOptions(1e-2));
  Reference ref;
  for (int s = 0; s < kSteps; ++s) {
    model->zero_grad();
    for (int r = 0; r < 2; ++r)
      ops::mul(model->loss(d.x[size_t(2 * s + r)], d.y[size_t(2 * s + r)]), 0.5).backward();
    if (max_norm > 0) ref.norms.push_back(optim::clip_grad_norm_(model->parameters(), max_norm));
    opt.step();
    ref.params.push_back(values_of(model->parameters()));
  }
  ref.state = opt.state_dict();
  return ref;
}

}  // namespace strata::dist::testing
