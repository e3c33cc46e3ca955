// OGB's raw dataset folders (raw/*.csv.gz or .npy, split/<name>/*), as ogb/io/read_graph_raw.py
// and ogb/nodeproppred/dataset.py read them.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "io/graphs/graph_assembly.h"
#include "io/graphs/npy_file.h"
#include "io/graphs/text_lines.h"
#include "strata/core/error.h"
#include "strata/io/graphs/graph_formats.h"

namespace strata::io {
namespace {

namespace fs = std::filesystem;

// A numeric table [rows, cols] read from a .npy or a CSV file, with where each row lies.
struct Table {
  std::string path;
  bool npy = false;
  uint64_t data_offset = 0, row_bytes = 0;
  Tensor values;  // [rows, cols]

  int64_t rows() const { return values.size(0); }
  int64_t cols() const { return values.size(1); }
  std::string where(int64_t row) const {
    if (npy) return detail::concat("'", path, "' at byte offset ", data_offset + uint64_t(row) * row_bytes);
    return detail::concat(path, ":", row + 1);  // OGB's CSV files have no header
  }
};

// <stem>.npy, <stem>.csv.gz or <stem>.csv, the first that exists; "" when none does.
std::string find_table(const std::string& stem) {
  for (const char* ext : {".npy", ".csv.gz", ".csv"})
    if (fs::exists(stem + ext)) return stem + ext;
  return "";
}

template <class T>
T parse_field(const LineReader& in, std::string_view field) {
  if constexpr (std::is_same_v<T, int64_t>)
    return in.parse_int(field, "value");
  else
    return T(in.parse_double(field, "value"));
}

// Every row of a CSV file as T, all rows of one width.
template <class T>
Tensor read_csv_rows(const std::string& path) {
  LineReader in(path);
  std::string_view line;
  std::vector<std::string_view> f;
  std::vector<T> values;
  int64_t cols = -1, rows = 0;
  while (in.next(&line)) {
    split_fields(line, FieldSeparator::kCommaOrWhitespace, &f);
    if (cols < 0) cols = int64_t(f.size());
    if (int64_t(f.size()) != cols || cols == 0)
      in.fail(detail::concat("expected ", cols, " fields like the first row, found ", f.size()));
    for (std::string_view field : f) values.push_back(parse_field<T>(in, field));
    ++rows;
  }
  return host_tensor(values, {rows, std::max<int64_t>(cols, 0)});
}

Table read_table(const std::string& path, DType dtype) {
  Table t;
  t.path = path;
  if (path.ends_with(".npy")) {
    t.npy = true;
    Tensor v = read_npy(path, &t.data_offset);
    if (v.dim() == 1) v = v.view({v.size(0), 1});
    STRATA_CHECK(v.dim() == 2, IoError, "'", path, "' at byte offset ", t.data_offset,
                 ": expected a 1-d or 2-d array, found ", shape_str(v.shape()));
    t.row_bytes = uint64_t(v.size(1)) * v.element_size();
    if (is_floating(v.dtype()) && !is_floating(dtype)) {
      // Ids or counts stored as floats: each must be a whole number in int64's range, or the
      // conversion is undefined (NaN, 1e300).
      const Tensor f = v.to(DType::f64);
      const double* x = f.data<double>();
      for (int64_t i = 0; i < f.numel(); ++i)
        if (!(x[i] == std::floor(x[i]) && std::fabs(x[i]) < 0x1p63))
          throw IoError(detail::concat("'", path, "' at byte offset ",
                                       t.data_offset + uint64_t(i) * v.element_size(), ": ", x[i],
                                       " is not an integer"));
    }
    t.values = v.dtype() == dtype ? v : v.to(dtype);
    return t;
  }
  switch (dtype) {
    case DType::i64: t.values = read_csv_rows<int64_t>(path); break;
    case DType::f32: t.values = read_csv_rows<float>(path); break;
    default: t.values = read_csv_rows<double>(path);
  }
  return t;
}

// A table that must have `rows` rows (and `cols` columns, when >= 0).
void expect_shape(const Table& t, int64_t rows, int64_t cols, const std::string& what) {
  if (t.rows() != rows || (cols >= 0 && t.cols() != cols))
    throw IoError(detail::concat(t.where(std::min(t.rows(), rows)), ": ", what, " should be [", rows, ", ",
                                 cols >= 0 ? std::to_string(cols) : std::string("*"), "] but the file holds ",
                                 shape_str(t.values.shape())));
}

int64_t read_count(const std::string& stem, const std::string& what) {
  std::string path = find_table(stem);
  STRATA_CHECK(!path.empty(), IoError, "no ", stem, ".csv(.gz) or .npy (", what, ")");
  Table t = read_table(path, DType::i64);
  if (t.rows() != 1 || t.cols() != 1)
    throw IoError(detail::concat(t.where(0), ": expected one ", what, " (one graph), found ",
                                 shape_str(t.values.shape())));
  int64_t n = t.values.data<int64_t>()[0];
  if (n < 0 || n > kMaxGraphNodes)
    throw IoError(detail::concat(t.where(0), ": ", what, " ", n, " out of range"));
  return n;
}

// Node indices of a split file as a mask [n].
Tensor read_mask(const std::string& path, int64_t n) {
  Table t = read_table(path, DType::i64);
  std::vector<uint8_t> mask(size_t(n), 0);
  const int64_t* idx = t.values.data<int64_t>();
  if (t.cols() != 1) throw IoError(detail::concat(t.where(0), ": expected one node index per row"));
  for (int64_t r = 0; r < t.rows(); ++r) {
    if (idx[r] < 0 || idx[r] >= n)
      throw IoError(detail::concat(t.where(r), ": node index ", idx[r], " out of range [0, ", n, ")"));
    mask[size_t(idx[r])] = 1;
  }
  return bool_tensor(mask);
}

// Labels from a one-column table of numbers: nan and negatives -> -1.
std::vector<int64_t> labels_of(const Table& t) {
  std::vector<int64_t> labels(size_t(t.rows()), -1);
  const double* v = t.values.data<double>();
  for (int64_t r = 0; r < t.rows(); ++r) {
    if (std::isnan(v[r]) || v[r] < 0) continue;
    if (v[r] != std::floor(v[r]) || v[r] >= double(kMaxGraphNodes))
      throw IoError(detail::concat(t.where(r), ": label ", v[r], " is not a class id"));
    labels[size_t(r)] = int64_t(v[r]);
  }
  return labels;
}

// An additional node_/edge_ file: i64 when every value is integral (and in int64's range), else f32.
Tensor additional_values(const Table& t) {
  const double* v = t.values.data<double>();
  bool integral = true;
  for (int64_t i = 0; i < t.values.numel() && integral; ++i)
    integral = v[i] == std::floor(v[i]) && std::fabs(v[i]) < 0x1p63;
  Tensor out = t.values.to(integral ? DType::i64 : DType::f32);
  return t.cols() == 1 ? out.view({t.rows()}) : out;
}

std::string split_folder(const std::string& dir, const std::string& wanted) {
  fs::path root = fs::path(dir) / "split";
  if (!wanted.empty()) {
    STRATA_CHECK(fs::is_directory(root / wanted), IoError, "'", dir, "': no split folder '",
                 (root / wanted).string(), "'");
    return (root / wanted).string();
  }
  if (!fs::is_directory(root)) return "";
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory()) found.push_back(entry.path().filename().string());
  std::sort(found.begin(), found.end());
  if (found.empty()) return "";
  if (found.size() > 1) {
    std::string names;
    for (const auto& f : found) names += " " + f;
    throw IoError(detail::concat("'", root.string(), "' holds several splits (", names.substr(1),
                                 "): name one in OgbRawOptions::split"));
  }
  return (root / found[0]).string();
}

}  // namespace

GraphDataset load_ogb_raw(const std::string& dir, const OgbRawOptions& options) {
  const std::string raw = (fs::path(dir) / "raw").string();
  STRATA_CHECK(fs::is_directory(raw), IoError, "'", dir, "' has no raw/ folder (not an OGB dataset folder)");
  GraphDataset data;
  int64_t n = read_count(raw + "/num-node-list", "node count");

  std::string edge_path = find_table(raw + "/edge");
  STRATA_CHECK(!edge_path.empty(), IoError, "'", raw, "' has no edge.csv.gz, edge.csv or edge.npy");
  Table edges = read_table(edge_path, DType::i64);
  if (edges.cols() != 2)
    throw IoError(detail::concat(edges.where(0), ": expected two columns (src, dst), found ", edges.cols()));
  int64_t e = edges.rows();
  if (!find_table(raw + "/num-edge-list").empty()) {
    int64_t listed = read_count(raw + "/num-edge-list", "edge count");
    if (listed != e)
      throw IoError(detail::concat(find_table(raw + "/num-edge-list"), ": edge count ", listed, " but ",
                                   edge_path, " holds ", e, " edges"));
  }
  check_node_count(n, 2 * e, options.max_nodes,
                   detail::concat(find_table(raw + "/num-node-list"), ": the node count ", n));
  std::vector<int64_t> src(static_cast<size_t>(e)), dst(static_cast<size_t>(e));
  const int64_t* pairs = edges.values.data<int64_t>();
  for (int64_t i = 0; i < e; ++i) {
    for (int k = 0; k < 2; ++k)
      if (pairs[2 * i + k] < 0 || pairs[2 * i + k] >= n)
        throw IoError(
            detail::concat(edges.where(i), ": node id ", pairs[2 * i + k], " out of range [0, ", n, ")"));
    src[size_t(i)] = pairs[2 * i];
    dst[size_t(i)] = pairs[2 * i + 1];
  }
  edges.values = Tensor();
  if (options.add_inverse_edges) append_reverse_edges(&src, &dst);
  data.graph = Graph::from_edges(n, host_tensor(src), host_tensor(dst));

  if (std::string path = find_table(raw + "/node-feat"); !path.empty()) {
    Table t = read_table(path, DType::f32);
    expect_shape(t, n, -1, "node-feat");
    check_finite_features(t.values, path);
    data.features = t.values;
  }
  if (std::string path = find_table(raw + "/node-label"); !path.empty()) {
    Table t = read_table(path, DType::f64);
    expect_shape(t, n, -1, "node-label");
    if (t.cols() == 1) {
      std::vector<int64_t> labels = labels_of(t);
      data.labels = host_tensor(labels);
      data.num_classes = count_classes(labels, path);
    } else {
      data.node_properties["node-label"] = t.values.to(DType::f32);
    }
  }
  if (std::string path = find_table(raw + "/edge-feat"); !path.empty()) {
    Table t = read_table(path, DType::f32);
    expect_shape(t, e, -1, "edge-feat");
    data.edge_properties["edge-feat"] = options.add_inverse_edges ? repeat_rows_twice(t.values) : t.values;
  }
  std::vector<fs::path> extra;
  for (const auto& entry : fs::directory_iterator(raw)) extra.push_back(entry.path());
  std::sort(extra.begin(), extra.end());
  for (const fs::path& p : extra) {
    std::string file = p.filename().string();
    bool node = file.starts_with("node_"), edge = file.starts_with("edge_");
    if (!node && !edge) continue;
    std::string stem = file.substr(0, file.find('.'));
    if (find_table((p.parent_path() / stem).string()) != p.string()) continue;  // another variant wins
    Table t = read_table(p.string(), DType::f64);
    expect_shape(t, node ? n : e, -1, stem);
    Tensor v = additional_values(t);
    if (node)
      data.node_properties[stem] = v;
    else
      data.edge_properties[stem] = options.add_inverse_edges ? repeat_rows_twice(v) : v;
  }

  if (std::string split = split_folder(dir, options.split); !split.empty()) {
    Tensor* masks[3] = {&data.train_mask, &data.val_mask, &data.test_mask};
    const char* names[3] = {"train", "valid", "test"};
    for (int k = 0; k < 3; ++k) {
      std::string path = find_table(split + "/" + names[k]);
      STRATA_CHECK(!path.empty(), IoError, "'", split, "' has no ", names[k], ".csv(.gz) or .npy");
      *masks[k] = read_mask(path, n);
    }
    // The three sets are disjoint: a node in train and test would grade the model on what it trained on.
    for (int a = 0; a < 3; ++a)
      for (int b = a + 1; b < 3; ++b) {
        const auto *x = static_cast<const uint8_t*>(masks[a]->data_ptr()),
                   *y = static_cast<const uint8_t*>(masks[b]->data_ptr());
        for (int64_t i = 0; i < n; ++i)
          STRATA_CHECK(!(x[i] && y[i]), IoError, "'", split, "': node ", i, " is in both ", names[a], " and ",
                       names[b], "; a split's sets are disjoint");
      }
  }
  data.name = fs::path(dir).filename().string();
  if (data.name.empty()) data.name = fs::path(dir).parent_path().filename().string();
  return data;
}

}  // namespace strata::io
