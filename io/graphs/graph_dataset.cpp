// split_nodes: a stratified, seeded train/val/test split of the labelled nodes.
#include "strata/io/graphs/graph_dataset.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "io/graphs/graph_assembly.h"
#include "io/graphs/random_draws.h"
#include "strata/core/error.h"

namespace strata::io {

void split_nodes(GraphDataset* data, double train, double val, uint64_t seed) {
  STRATA_CHECK(data != nullptr, ValueError, "split_nodes: no dataset");
  STRATA_CHECK(data->labels.defined(), ValueError, "split_nodes: '", data->name, "' has no labels");
  STRATA_CHECK(train >= 0 && train <= 1 && val >= 0 && val <= 1 && train + val <= 1 + 1e-12, ValueError,
               "split_nodes: fractions train=", train, " val=", val,
               " must lie in [0, 1] with train + val <= 1");
  std::vector<int64_t> labels = data->labels.to_vector<int64_t>();
  const int64_t n = int64_t(labels.size());
  std::map<int64_t, std::vector<int64_t>> members;  // by class: any label values, no table of them
  for (int64_t i = 0; i < n; ++i)
    if (labels[size_t(i)] >= 0) members[labels[size_t(i)]].push_back(i);

  std::vector<uint8_t> train_mask(size_t(n), 0), val_mask(size_t(n), 0), test_mask(size_t(n), 0);
  for (auto& [c, m] : members) {
    // Each class draws from its own stream (keyed by the class id), so its split does not
    // depend on the sizes of the other classes.
    shuffle(&m, seed, uint64_t(c));
    const int64_t size = int64_t(m.size());
    int64_t n_train = std::llround(train * double(size));
    if (train > 0 && size > 0) n_train = std::max<int64_t>(n_train, 1);
    n_train = std::min(n_train, size);
    int64_t n_val = std::min<int64_t>(std::llround(val * double(size)), size - n_train);
    for (int64_t k = 0; k < size; ++k) {
      auto& mask = k < n_train ? train_mask : k < n_train + n_val ? val_mask : test_mask;
      mask[size_t(m[size_t(k)])] = 1;
    }
  }
  data->train_mask = bool_tensor(train_mask);
  data->val_mask = bool_tensor(val_mask);
  data->test_mask = bool_tensor(test_mask);
}

}  // namespace strata::io
