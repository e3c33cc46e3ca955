#include "strata/io/images/image_dataset.h"

namespace strata::io {

std::vector<std::string> ImageDataset::class_names() const {
  std::vector<std::string> names;
  for (int64_t k = 0; k < num_classes(); ++k) names.push_back(std::to_string(k));
  return names;
}

}  // namespace strata::io
