#include "io/graphs/graph_assembly.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "strata/core/error.h"

namespace strata::io {

void check_node_count(int64_t n, int64_t described, int64_t max_nodes, const std::string& what) {
  STRATA_CHECK(n <= kMaxGraphNodes, IoError, what, " implies ", n,
               " nodes, above the largest graph loaded (2^30)");
  if (max_nodes >= 0) {
    STRATA_CHECK(n <= max_nodes, IoError, what, " implies ", n, " nodes, above --max-nodes ", max_nodes);
    return;
  }
  const int64_t cap = std::max<int64_t>(int64_t(1) << 20, 4 * std::max<int64_t>(described, 0));
  STRATA_CHECK(
      n <= cap, IoError, what, " implies ", n, " nodes, but the file's rows name at most ", described,
      ": the rest would be isolated nodes it says nothing about. Without --max-nodes at most ", cap,
      " nodes are taken (max(2^20, 4 x that)); set --max-nodes ", n, " if the graph is meant to be so");
}

Tensor bool_tensor(const std::vector<uint8_t>& flags) {
  Tensor t = Tensor::empty({int64_t(flags.size())}, DType::boolean);
  if (!flags.empty()) std::memcpy(t.data_ptr(), flags.data(), flags.size());
  return t;
}

void append_reverse_edges(std::vector<int64_t>* src, std::vector<int64_t>* dst) {
  size_t e = src->size();
  src->reserve(2 * e);
  dst->reserve(2 * e);
  src->insert(src->end(), dst->begin(), dst->begin() + std::ptrdiff_t(e));
  dst->insert(dst->end(), src->begin(), src->begin() + std::ptrdiff_t(e));
}

Tensor repeat_rows_twice(const Tensor& t) {
  Tensor c = t.is_contiguous() ? t : t.contiguous();
  Shape shape = c.shape();
  shape[0] *= 2;
  Tensor out = Tensor::empty(shape, c.dtype());
  if (c.nbytes() > 0) {
    std::memcpy(out.data_ptr(), c.data_ptr(), c.nbytes());
    std::memcpy(static_cast<char*>(out.data_ptr()) + c.nbytes(), c.data_ptr(), c.nbytes());
  }
  return out;
}

std::vector<int64_t> class_ids_of(const std::vector<std::string>& names, std::vector<std::string>* classes) {
  std::map<std::string, int64_t> ids;
  for (const std::string& n : names)
    if (!n.empty()) ids.emplace(n, 0);
  classes->clear();
  for (auto& [name, id] : ids) {
    id = int64_t(classes->size());
    classes->push_back(name);
  }
  std::vector<int64_t> out(names.size(), -1);
  for (size_t i = 0; i < names.size(); ++i)
    if (!names[i].empty()) out[i] = ids[names[i]];
  return out;
}

int64_t count_classes(const std::vector<int64_t>& labels, const std::string& source) {
  int64_t top = -1, top_node = -1, labelled = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    labelled += labels[i] >= 0;
    if (labels[i] > top) top = labels[i], top_node = int64_t(i);
  }
  constexpr int64_t kFewClasses = int64_t(1) << 16;
  STRATA_CHECK(top < std::max(kFewClasses, labelled), IoError, source, ": node ", top_node, " has the label ",
               top, ", which would make ", top + 1, " classes for ", labelled,
               " labelled nodes; labels are class indices 0, 1, ..., C - 1");
  return top + 1;
}

void check_finite_features(const Tensor& features, const std::string& source) {
  if (!features.defined() || features.numel() == 0) return;
  const Tensor f = features.is_contiguous() ? features : features.contiguous();
  const int64_t F = f.dim() >= 2 ? f.numel() / f.size(0) : 1;
  auto scan = [&](const auto* v) {
    for (int64_t i = 0; i < f.numel(); ++i)
      STRATA_CHECK(std::isfinite(double(v[i])), IoError, source, ": feature row ", i / F, ", column ", i % F,
                   " is ", double(v[i]), "; non-finite features are refused");
  };
  if (f.dtype() == DType::f64)
    scan(f.data<double>());
  else if (f.dtype() == DType::f32)
    scan(f.data<float>());
}

}  // namespace strata::io
