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

DataIdentity data_identity(const GraphDataset& data) {
  const Graph& g = data.graph;
  DataDigest digest;
  for (int64_t t = 0; t < g.num_node_types(); ++t)
    digest.add(std::string_view(g.node_types()[size_t(t)])).add(g.nodes_of_type(t));
  for (int64_t r = 0; r < g.num_relations(); ++r) {
    const Relation& rel = g.relations()[size_t(r)];
    digest.add(rel.src_type).add(std::string_view(rel.name)).add(rel.dst_type).add(g.relation_offset(r));
  }
  digest.add(g.src()).add(g.dst()).add(data.labels).add(data.num_classes);
  digest.add(data.train_mask).add(data.val_mask).add(data.test_mask).add(data.features);
  for (const auto& [type, features] : data.typed_features) digest.add(std::string_view(type)).add(features);
  return {detail::concat(data.name, ": ", g.num_nodes(), " nodes, ", g.num_edges(), " edges, ",
                         data.num_classes, " classes"),
          digest.str()};
}

}  // namespace strata::io
