#include "strata/models/layers/graph/sage_conv.h"

#include "strata/core/error.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/graph_ops.h"
#include "strata/ops/reduction.h"

namespace strata::nn {

SAGEConv::SAGEConv(int64_t in_channels, int64_t out_channels, SAGEConvOptions options) : options_(options) {
  STRATA_CHECK(
      options.aggr == "mean" || options.aggr == "sum" || options.aggr == "max" || options.aggr == "min",
      ValueError, "SAGEConv: aggr '", options.aggr, "' is not one of mean, sum, max, min");
  lin_l = register_module(
      "lin_l", std::make_shared<Linear>(LinearOptions(in_channels, out_channels).bias(options.bias)));
  if (options.root_weight)
    lin_r = register_module("lin_r",
                            std::make_shared<Linear>(LinearOptions(in_channels, out_channels).bias(false)));
}

Tensor SAGEConv::forward(const Graph& g, const Tensor& x, int64_t num_dst) {
  ModuleScope scope(*this);
  Tensor out = (*lin_l)(first_rows(ops::gspmm(g, x, Tensor(), options_.aggr), num_dst));
  if (lin_r) out = ops::add(out, (*lin_r)(first_rows(x, num_dst)));
  if (options_.normalize) {  // F.normalize(out, p=2, dim=-1, eps=1e-12)
    Tensor n = ops::sqrt(ops::sum(ops::mul(out, out), {-1}, /*keepdim=*/true));
    out = ops::div(out, ops::clamp(n, 1e-12, 1e300));
  }
  return out;
}

}  // namespace strata::nn
