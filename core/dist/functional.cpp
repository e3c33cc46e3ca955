#include "strata/dist/functional.h"

#include "strata/autograd/grad_mode.h"
#include "strata/autograd/node.h"

namespace strata::dist {

namespace {

// A contiguous copy of `t` summed over ranks in place.
Tensor summed_copy(const Tensor& t, ProcessGroup& group) {
  autograd::NoGradGuard no_grad;
  Tensor out = t.detach().contiguous();
  if (out.storage() == t.storage()) out = out.clone();
  group.all_reduce(out, ReduceOp::Sum)->wait();
  return out;
}

class AllReduceSumBackward final : public autograd::Node {
 public:
  explicit AllReduceSumBackward(std::shared_ptr<ProcessGroup> group) : group_(std::move(group)) {}
  std::string name() const override { return "AllReduceSumBackward"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    return {summed_copy(grads.at(0), *group_)};
  }

 private:
  std::shared_ptr<ProcessGroup> group_;
};

}  // namespace

Tensor all_reduce_sum(const Tensor& t, const std::shared_ptr<ProcessGroup>& group) {
  STRATA_CHECK(group != nullptr, ValueError, "all_reduce_sum: no process group for ", t.str());
  Tensor out = summed_copy(t, *group);
  if (autograd::any_requires_grad({&t}))
    autograd::attach(std::make_shared<AllReduceSumBackward>(group), {t}, {&out});
  return out;
}

}  // namespace strata::dist
