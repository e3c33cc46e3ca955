// What the graph loaders and generators share when they assemble a GraphDataset: CPU tensors
// from host vectors, reverse edges for undirected input, class ids from label names.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "strata/core/tensor.h"

namespace strata::io {

// The largest node count a loader allocates for (a corrupt count, an id of 10^15, is refused):
// 2^30 nodes, about ten times ogbn-papers100M.
constexpr int64_t kMaxGraphNodes = int64_t(1) << 30;

// The node count a file implies (its largest id + 1, or a count it states), checked before
// anything is sized by it. The file's rows name at most `described` distinct nodes (two per edge,
// one per node row); nodes beyond them would be isolated and described by nothing. A count above
// max(2^20, 4 x described) is refused (a 13-byte edge list "0 1073741823" asked for 8 GiB), naming
// `what` and the flag that raises the cap, unless `max_nodes` (>= 0: train_gnn's --max-nodes)
// allows it; never above kMaxGraphNodes.
void check_node_count(int64_t n, int64_t described, int64_t max_nodes, const std::string& what);

// A new contiguous CPU tensor of `shape` holding `values` (numel must match).
template <class T>
Tensor host_tensor(const std::vector<T>& values, const Shape& shape) {
  Tensor t = Tensor::empty(shape, dtype_of<T>::value);
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(T));
  return t;
}
template <class T>
Tensor host_tensor(const std::vector<T>& values) {
  return host_tensor(values, {int64_t(values.size())});
}
// A boolean tensor [flags.size()] (flags 0 or 1).
Tensor bool_tensor(const std::vector<uint8_t>& flags);

// Undirected input: appends edge (dst[e], src[e]) for every edge e, so edge e + E is edge e's
// reverse.
void append_reverse_edges(std::vector<int64_t>* src, std::vector<int64_t>* dst);
// [E, ...] -> [2E, ...] with row e + E equal to row e: edge properties after append_reverse_edges.
Tensor repeat_rows_twice(const Tensor& t);

// Class ids of `names` by the sorted order of the distinct non-empty names (written to
// `classes`); an empty name gets -1.
std::vector<int64_t> class_ids_of(const std::vector<std::string>& names, std::vector<std::string>* classes);

// Refuses features holding NaN or an infinity (IoError naming `source`, the row and the column of
// the first): ReLU-based layers turned a NaN feature into a finite loss near ln C and chance
// accuracy, training on garbage without a word. Takes a CPU f32 or f64 [N, F] tensor.
void check_finite_features(const Tensor& features, const std::string& source);

// The largest label + 1 (0 when none is >= 0). Labels are class indices: a label that would make more
// classes than max(2^16, the labelled nodes) is an IoError naming `source`, the node and the label
// (a stray 999999999 once asked for a 256 GB output layer).
int64_t count_classes(const std::vector<int64_t>& labels, const std::string& source);

}  // namespace strata::io
