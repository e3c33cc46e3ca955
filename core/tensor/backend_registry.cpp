#include "strata/core/backend.h"

namespace strata {

void Backend::attention(const Tensor& out, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                        const Tensor&, bool, double) {
  throw NotImplementedError("attention: no fused kernel on " + out.device().str());
}

void Backend::attention_backward(const Tensor& grad_q, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool,
                                 double) {
  throw NotImplementedError("attention_backward: no fused kernel on " + grad_q.device().str());
}

BackendRegistry& BackendRegistry::instance() {
  // Leaked on purpose: tensors may be freed during static destruction.
  static BackendRegistry* r = new BackendRegistry();
  return *r;
}

void BackendRegistry::add(DeviceType type, std::unique_ptr<Backend> backend) {
  backends_[size_t(type)] = std::move(backend);
}

bool BackendRegistry::has(DeviceType type) const { return backends_[size_t(type)] != nullptr; }

Backend& BackendRegistry::get(DeviceType type) const {
  Backend* b = backends_[size_t(type)].get();
  STRATA_CHECK(b != nullptr, DeviceError, "no backend for device type ", Device(type).str(),
               type == DeviceType::CUDA ? " (Strata was built without CUDA, or no ops ran yet)"
                                        : " (no ops ran yet)");
  return *b;
}

}  // namespace strata
