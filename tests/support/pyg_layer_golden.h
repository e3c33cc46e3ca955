// check_layer_golden: one layer case against the PyTorch Geometric goldens that tools/goldens
// writes (parameters, output, loss and every gradient under "<case>.").
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "strata/strata.h"
#include "support/fixture_file.h"
#include "support/tensor_compare.h"

namespace strata::testing {

// The fixture's PyG edge_index [2, E] as its source and destination rows.
inline std::pair<Tensor, Tensor> edge_index_rows(const FixtureFile& fixture) {
  Tensor ei = fixture.tensor("edge_index", DType::i64);
  return {ops::select(ei, 0, 0).contiguous(), ops::select(ei, 0, 1).contiguous()};
}

// Loads the case's parameters into `layer` (f64, PyG's names, strict), moves it to `dev`, runs
// forward(x) on the fixture's x and checks the output, the loss sum(out * seed) and every gradient
// (x's and each parameter's) against PyG's. The seed is "<case>.seed" where the file has one.
template <class Layer, class Forward>
void check_layer_golden(const FixtureFile& fixture, const std::string& name, Layer& layer, Forward forward,
                        Device dev = kCPU) {
  SCOPED_TRACE(name + " on " + dev.str());
  layer.to(DType::f64);
  nn::StateDict params;
  for (const std::string& p : fixture.names(name + ".param."))
    params.insert(p, fixture.tensor(name + ".param." + p));
  layer.load_state_dict(params);
  layer.to(dev);
  Tensor x = fixture.tensor("x").to(dev).set_requires_grad(true);
  Tensor out = forward(x);
  expect_close(out, fixture.tensor(name + ".out"), 1e-10, 1e-10, "output");
  const std::string seed = fixture.names(name + ".seed").empty() ? "seed" : name + ".seed";
  Tensor loss = ops::sum(ops::mul(out, fixture.tensor(seed).to(dev)));
  EXPECT_NEAR(loss.item(), fixture.tensor(name + ".loss").item(), 1e-9);
  loss.backward();
  expect_close(x.grad(), fixture.tensor(name + ".grad.x"), 1e-10, 1e-10, "grad of x");
  for (const auto& [pname, p] : layer.named_parameters())
    expect_close(p.grad(), fixture.tensor(name + ".grad." + pname), 1e-10, 1e-10, "grad of " + pname);
}

}  // namespace strata::testing
