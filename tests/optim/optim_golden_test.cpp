// Replays the PyTorch runs in tests/goldens/optim/*.json (tools/goldens/optim_goldens.py):
// same initial parameters, same gradients, and every parameter after every step must match,
// along with each group's learning rate and clip_grad_norm_'s total norm where a run uses them.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/ops.h"
#include "strata/optim/adamw.h"
#include "strata/optim/clip_grad.h"
#include "strata/optim/lr_schedule.h"
#include "strata/optim/sgd.h"

using namespace strata;
using json = nlohmann::json;

namespace {

json load_golden(const std::string& name) {
  std::string path = std::string(STRATA_TEST_DATA_DIR) + "/goldens/optim/" + name + ".json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden " + path + " (run tools/goldens/optim_goldens.py)");
  return json::parse(in);
}

std::unique_ptr<optim::Optimizer> make_optimizer(const json& g, const std::vector<Tensor>& params) {
  std::vector<optim::ParamGroup> groups;
  for (const json& grp : g["groups"]) {
    std::vector<Tensor> ps;
    for (int i : grp["params"]) ps.push_back(params[size_t(i)]);
    if (g["optimizer"] == "SGD") {
      groups.emplace_back(ps, optim::SGDOptions(grp["lr"])
                                  .momentum(grp["momentum"])
                                  .dampening(grp["dampening"])
                                  .nesterov(grp["nesterov"])
                                  .weight_decay(grp["weight_decay"]));
    } else {
      groups.emplace_back(ps, optim::AdamWOptions(grp["lr"])
                                  .betas(grp["betas"][0], grp["betas"][1])
                                  .eps(grp["eps"])
                                  .weight_decay(grp["weight_decay"]));
    }
  }
  if (g["optimizer"] == "SGD") return std::make_unique<optim::SGD>(groups, optim::SGDOptions(0.1));
  return std::make_unique<optim::AdamW>(groups, optim::AdamWOptions());
}

std::unique_ptr<optim::LRSchedule> make_schedule(const json& s) {
  if (s.is_null()) return nullptr;
  if (s["kind"] == "cosine")
    return std::make_unique<optim::WarmupCosineSchedule>(s["peak"], s["warmup"], s["total"], s["min_lr"]);
  return std::make_unique<optim::WarmupLinearSchedule>(s["peak"], s["warmup"], s["total"], s["min_lr"]);
}

double norm_type_of(const json& v) {
  return v.is_string() && v == "inf" ? std::numeric_limits<double>::infinity() : v.get<double>();
}

class OptimGolden : public ::testing::TestWithParam<std::string> {};

// f64 runs match far tighter than the 1e-6 relative the issue asks for; f32 runs agree to
// a few ulps of their values.
TEST_P(OptimGolden, EveryParameterOfEveryStepMatchesPyTorch) {
  const json g = load_golden(GetParam());
  const DType dt = g["dtype"] == "f64" ? DType::f64 : DType::f32;
  const double rtol = dt == DType::f64 ? 1e-9 : 1e-6, atol = dt == DType::f64 ? 1e-12 : 1e-7;

  std::vector<Tensor> params;
  for (size_t i = 0; i < g["shapes"].size(); ++i) {
    Shape shape = g["shapes"][i].get<Shape>();
    params.push_back(ops::from_vector(g["initial"][i].get<std::vector<double>>(), shape, dt));
    params.back().set_requires_grad(true);
  }
  auto opt = make_optimizer(g, params);
  auto schedule = make_schedule(g["schedule"]);
  const json& clip = g["clip"];

  const json& steps = g["steps"];
  ASSERT_EQ(steps.size(), 20u);
  for (size_t step = 0; step < steps.size(); ++step) {
    SCOPED_TRACE(GetParam() + " step " + std::to_string(step));
    const json& rec = steps[step];
    for (size_t i = 0; i < params.size(); ++i) {
      if (rec["grads"][i].is_null())
        params[i].set_grad(Tensor());
      else
        params[i].set_grad(ops::from_vector(rec["grads"][i].get<std::vector<double>>(), params[i].shape(), dt));
    }
    if (schedule) schedule->apply(*opt, int64_t(step));
    for (size_t k = 0; k < opt->param_groups().size(); ++k)
      EXPECT_NEAR(opt->param_groups()[k].lr(), rec["lr"][k].get<double>(), 1e-15) << "group " << k;
    if (!clip.is_null()) {
      double total = optim::clip_grad_norm_(params, clip["max_norm"], norm_type_of(clip["norm_type"]));
      double want = rec["total_norm"];
      EXPECT_NEAR(total, want, rtol * std::abs(want)) << "clip_grad_norm_ total norm";
    }
    opt->step();
    for (size_t i = 0; i < params.size(); ++i) {
      std::vector<double> got = params[i].to_double_vector();
      std::vector<double> want = rec["params"][i].get<std::vector<double>>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t e = 0; e < got.size(); ++e)
        ASSERT_NEAR(got[e], want[e], atol + rtol * std::abs(want[e]))
            << "param " << i << " element " << e;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OptimPyTorch, OptimGolden,
                         ::testing::Values("sgd_plain", "sgd_momentum_nesterov_weight_decay",
                                           "sgd_momentum_dampening", "adamw_default", "adamw_default_f32",
                                           "adamw_two_groups", "adamw_clip_warmup_cosine",
                                           "sgd_clip_inf_warmup_linear"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
