#include "strata/models/layers/container.h"

namespace strata::nn {

ModuleSequence::ModuleSequence(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}

const std::shared_ptr<Module>& ModuleSequence::operator[](size_t i) const {
  STRATA_CHECK(i < items_.size(), IndexError, type_name(), ": index ", i, " out of range for ",
               items_.size(), " modules");
  return items_[i];
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& m : *this) y = (*m)(y);
  return y;
}

}  // namespace strata::nn
