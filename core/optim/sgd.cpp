#include "strata/optim/sgd.h"

#include "core/optim/cpu_update.h"
#include "strata/core/memory_stats.h"

namespace strata::optim {

void SGDOptions::validate(const char* optimizer) const {
  OptimizerOptions::validate(optimizer);
  STRATA_CHECK(momentum_ >= 0.0, ValueError, optimizer, ": invalid momentum value: ", momentum_);
  STRATA_CHECK(!nesterov_ || (momentum_ > 0.0 && dampening_ == 0.0), ValueError, optimizer,
               ": Nesterov momentum requires a momentum and zero dampening");
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults)
    : Optimizer(std::move(groups), defaults, "SGD") {}

namespace {

// One parameter's update; `buf` is null without momentum. Scalars are rounded to T first, as
// PyTorch does with its alpha/value arguments.
template <class T>
void sgd_update(T* p, const T* g, T* buf, bool first_step, int64_t n, const SGDOptions& o) {
  const T weight_decay = T(o.weight_decay()), momentum = T(o.momentum());
  const T one_minus_dampening = T(1.0 - o.dampening()), neg_lr = T(-o.lr());
  const bool nesterov = o.nesterov();
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) {
    T d = g[i];
    if (weight_decay != T(0)) d = d + weight_decay * p[i];
    if (buf != nullptr) {
      buf[i] = first_step ? d : buf[i] * momentum + one_minus_dampening * d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] = p[i] + neg_lr * d;
  }
}

}  // namespace

std::vector<std::string> SGD::buffer_names(const OptimizerOptions& options) const {
  if (static_cast<const SGDOptions&>(options).momentum() == 0.0) return {};
  return {"momentum_buffer"};
}

void SGD::update_host_chunk(const OptimizerOptions& options, const TensorDict&, const HostChunk& c) const {
  const auto& o = static_cast<const SGDOptions&>(options);
  detail::dispatch_floating(c.dtype, [&](auto t) {
    using T = decltype(t);
    sgd_update<T>(static_cast<T*>(c.param), static_cast<const T*>(c.grad),
                  c.buffers.empty() ? nullptr : static_cast<T*>(c.buffers[0]), c.first, c.numel, o);
  });
}

void SGD::step() {
  for_each_update([](const OptimizerOptions& options, Tensor& p, const Tensor& g, TensorDict& state) {
    const auto& o = static_cast<const SGDOptions&>(options);
    Tensor buf;
    bool first_step = false;
    if (o.momentum() != 0.0) {
      if (Tensor* b = state.find("momentum_buffer")) {
        buf = *b;
      } else {
        MemoryCategoryGuard category(MemoryCategory::OptimizerState);
        buf = state.insert("momentum_buffer", Tensor::empty(p.shape(), p.dtype(), p.device()));
        first_step = true;
      }
      detail::check_updatable("SGD.step", "momentum buffer", buf);
    }
    if (p.device().is_host_memory()) {
      detail::dispatch_floating(p.dtype(), [&](auto t) {
        using T = decltype(t);
        sgd_update<T>(p.data<T>(), g.data<T>(), buf.defined() ? buf.data<T>() : nullptr, first_step,
                      p.numel(), o);
      });
    } else {
      backend_for(p.device())
          .sgd_update(
              p, g, buf,
              SgdUpdate{o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov(), first_step});
    }
    if (buf.defined()) buf.bump_version();
  });
}

}  // namespace strata::optim
