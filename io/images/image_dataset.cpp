#include "strata/io/images/image_dataset.h"

namespace strata::io {

std::vector<std::string> ImageDataset::class_names() const {
  std::vector<std::string> names;
  for (int64_t k = 0; k < num_classes(); ++k) names.push_back(std::to_string(k));
  return names;
}

DataIdentity ImageDataset::identity() const {
  DataDigest digest;
  digest.add(size()).add(num_classes());
  for (const std::string& name : class_names()) digest.add(std::string_view(name));
  for (int64_t i = 0; i < size(); ++i) digest.add(std::string_view(sample_name(i))).add(label(i));
  return {describe(), digest.str()};
}

}  // namespace strata::io
