#include "examples/train_gnn/gnn_data.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "examples/train_gnn/train_options.h"
#include "strata/core/philox.h"
#include "strata/io/features/feature_file.h"
#include "strata/io/graphs/graph_formats.h"
#include "strata/io/graphs/graph_generators.h"
#include "strata/io/graphs/hetero_data.h"
#include "strata/io/weights/safetensors.h"
#include "strata/ops/factory.h"
#include "strata/ops/shape_ops.h"

namespace strata::examples {

namespace {

constexpr const char* kPolblogs = "data/graphs/polblogs.gt.gz";

// Input features for a graph without any: identity, degree or random:D.
Tensor made_features(const std::string& spec, const Graph& g, uint64_t seed) {
  const int64_t N = g.num_nodes();
  std::string kind = spec;
  if (kind.empty()) kind = N <= 5000 ? "identity" : "random:64";
  if (kind == "identity") {
    STRATA_CHECK(N <= 20000, ValueError, "--features identity on ", N, " nodes: more than 20000 columns");
    std::vector<float> v(size_t(N * N), 0.0f);
    for (int64_t i = 0; i < N; ++i) v[size_t(i * N + i)] = 1.0f;
    return ops::from_vector(v, {N, N});
  }
  if (kind == "degree") {
    const std::vector<int64_t> in = g.in_degrees().to_vector<int64_t>(),
                               out = g.out_degrees().to_vector<int64_t>();
    std::vector<float> v(size_t(2 * N));
    for (int64_t i = 0; i < N; ++i)
      v[size_t(2 * i)] = std::log1p(float(in[size_t(i)])),
                   v[size_t(2 * i + 1)] = std::log1p(float(out[size_t(i)]));
    return ops::from_vector(v, {N, 2});
  }
  if (kind.rfind("random:", 0) == 0) {
    int64_t D = 0;
    const std::string digits = kind.substr(7);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), D);
    STRATA_CHECK(ec == std::errc() && end == digits.data() + digits.size() && D > 0, ValueError,
                 "--features '", spec, "': random:D needs a positive whole number D");
    std::vector<float> v(shape_nbytes({N, D}, sizeof(float), "--features random:D") / sizeof(float));
    for (size_t i = 0; i < v.size(); i += 2) {  // Box-Muller on Philox words
      const float u1 = std::max(philox::to_uniform(uint32_t(philox::word(seed, 0, i))), 1e-7f);
      const float u2 = philox::to_uniform(uint32_t(philox::word(seed, 0, i + 1)));
      const float r = std::sqrt(-2.0f * std::log(u1));
      v[i] = r * std::cos(6.2831853f * u2);
      if (i + 1 < v.size()) v[i + 1] = r * std::sin(6.2831853f * u2);
    }
    return ops::from_vector(v, {N, D});
  }
  throw ValueError("--features '" + spec + "' is not identity, degree or random:D");
}

// A node classifier needs one class label per node, in two or more classes: each way a dataset falls
// short has its own message.
void check_class_labels(const io::GraphDataset& d) {
  if (!d.labels.defined()) {
    const auto multi = d.node_properties.find("node-label");
    STRATA_CHECK(
        multi == d.node_properties.end(), ValueError, d.name, ": its node-label file has ",
        multi->second.dim() > 1 ? multi->second.size(1) : 1,
        " columns per node (a multi-label or regression target); train_gnn classifies each node into "
        "one class");
    throw ValueError(
        detail::concat(d.name,
                       " has no class labels (graph-tool files: --label-property names the vertex "
                       "property; --random-labels K for a timing run)"));
  }
  STRATA_CHECK(d.num_classes > 0, ValueError, d.name, ": no node has a label (every label is -1, 'none')");
  STRATA_CHECK(d.num_classes > 1, ValueError, d.name,
               ": every labelled node is in class 0; a classifier needs two or more classes");
}

}  // namespace

Graph undirected_simple(const Graph& g) {
  STRATA_CHECK(g.num_relations() == 1, NotImplementedError, "--undirected on a graph of ", g.num_relations(),
               " relations");
  const std::vector<int64_t> s = g.src().to(kCPU).to_vector<int64_t>(),
                             d = g.dst().to(kCPU).to_vector<int64_t>();
  std::vector<std::pair<int64_t, int64_t>> e;
  e.reserve(2 * s.size());
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != d[i]) e.emplace_back(s[i], d[i]), e.emplace_back(d[i], s[i]);
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());
  std::vector<int64_t> src(e.size()), dst(e.size());
  for (size_t i = 0; i < e.size(); ++i) src[i] = e[i].first, dst[i] = e[i].second;
  const int64_t E = int64_t(e.size());
  return Graph::from_edges(g.num_nodes(), ops::from_vector(src, {E}), ops::from_vector(dst, {E}));
}

std::shared_ptr<io::GraphDataset> make_gnn_data(const TrainGnnConfig& c) {
  auto data = std::make_shared<io::GraphDataset>();
  const uint64_t seed = c.run().seed();
  const int64_t max_nodes = c.has_max_nodes() ? c.max_nodes() : -1;
  if (!c.graph().empty()) {
    *data = io::load_graph_tool(c.graph(), {.label_property = c.random_labels() > 0 ? "" : c.label_property(),
                                            .max_nodes = max_nodes});
  } else if (!c.edge_list().empty()) {
    io::EdgeListOptions eo;
    eo.node_file = c.node_file();
    eo.max_nodes = max_nodes;
    *data = io::load_edge_list(c.edge_list(), eo);
  } else if (!c.ogb().empty()) {
    *data = io::load_ogb_raw(c.ogb(), {.split = c.ogb_split(), .max_nodes = max_nodes});
  } else if (!c.planetoid().empty()) {
    const std::filesystem::path p(c.planetoid());
    *data = io::load_planetoid_raw(p.parent_path().string(), p.filename().string());
  } else if (c.rmat_scale() > 0) {
    *data =
        io::generate_rmat({.scale = int(c.rmat_scale()), .edge_factor = c.rmat_edge_factor(), .seed = seed});
  } else if (!c.hetero_data().empty()) {
    *data = io::to_graph_dataset(io::load_hetero_data(c.hetero_data()));
    if (data->name.empty()) data->name = c.hetero_data();
  } else if (is_relational_model(c.model())) {  // entity classification: ogbn-mag's shape, scaled down
    io::TypedRmatOptions t;
    t.total_edges = c.typed_rmat_edges();
    t.reverse_relations = true;  // papers hear from their authors' and fields' other papers
    t.num_classes = c.typed_rmat_classes();
    t.seed = seed;
    *data = io::generate_typed_rmat(t);
  } else if (std::filesystem::exists(kPolblogs)) {
    *data = io::load_graph_tool(kPolblogs, {.label_property = "value"});
    data->name = std::string(kPolblogs) + " (political blogs, 2 classes)";
  } else {
    *data = io::generate_dcsbm({.num_nodes = c.dcsbm_nodes(),
                                .num_blocks = c.dcsbm_classes(),
                                .avg_degree = c.dcsbm_degree(),
                                .mixing = c.dcsbm_mixing(),
                                .feature_dim = c.dcsbm_features(),
                                .feature_signal = c.dcsbm_signal(),
                                .seed = seed});
  }
  const int64_t random_classes = c.random_labels() > 0 ? c.random_labels()
                                 : c.rmat_scale() > 0  ? c.dcsbm_classes()
                                                       : 0;
  if (random_classes > 0) {  // a scale test: accuracy stays at chance
    const int64_t N = data->graph.num_nodes();
    std::vector<int64_t> y(static_cast<size_t>(N));
    for (int64_t i = 0; i < N; ++i)
      y[size_t(i)] = int64_t(philox::word(seed + 1, 0, uint64_t(i)) % uint64_t(random_classes));
    data->labels = ops::from_vector(y, {N});
    data->num_classes = random_classes;
    data->train_mask = data->val_mask = data->test_mask = Tensor();
  }
  check_class_labels(*data);
  if (c.undirected() && data->graph.num_relations() == 1) {  // a typed graph has its reverse relations
    data->graph = undirected_simple(data->graph);
    data->edge_properties.clear();
  }
  const bool has_features = data->features.defined() || !data->typed_features.empty();
  STRATA_CHECK(
      c.features().empty() || !has_features, ValueError, "--features ", c.features(), ": ", data->name,
      " has features of its own (",
      data->features.defined() ? detail::concat(data->features.size(1), " columns") : "per node type",
      "); --features makes them only for data without any");
  if (!has_features) data->features = made_features(c.features(), data->graph, seed + 2);
  if (!data->train_mask.defined()) io::split_nodes(data.get(), c.train_fraction(), c.val_fraction(), seed);
  return data;
}

}  // namespace strata::examples

namespace strata::examples {

namespace {

// A --feature-file that was there before the run was written from some run's features: one whose
// rows are not this dataset's (another --seed, --features or dataset made it) is refused, naming the
// first value that differs. The file is read once, in pieces of about 4 MiB.
void check_feature_file_rows(const std::string& path, const io::FeatureStore& store, const Tensor& features) {
  const Tensor host = features.to(kCPU).contiguous();
  const int64_t N = store.num_rows(), row_bytes = store.row_bytes(), F = store.num_features();
  if (row_bytes == 0) return;
  const int64_t chunk = std::max<int64_t>(1, (int64_t(4) << 20) / row_bytes);
  const float* expected = static_cast<const float*>(host.data_ptr());
  std::vector<int64_t> ids;
  std::vector<float> rows;
  for (int64_t begin = 0; begin < N; begin += chunk) {
    const int64_t end = std::min(N, begin + chunk);
    ids.resize(size_t(end - begin));
    std::iota(ids.begin(), ids.end(), begin);
    rows.resize(ids.size() * size_t(F));
    store.gather_into(ids, rows.data());
    const float* want = expected + begin * F;
    if (std::memcmp(rows.data(), want, rows.size() * sizeof(float)) == 0) continue;
    size_t at = 0;
    while (std::memcmp(&rows[at], &want[at], sizeof(float)) == 0) ++at;
    throw ValueError(detail::concat(
        "--feature-file ", path, " holds other features than this run's data: row ", begin + int64_t(at) / F,
        ", column ", int64_t(at) % F, " is ", rows[at], " in the file and ", want[at],
        " in the data (another --seed, --features or dataset wrote it); remove the file to have it written "
        "again, or name another"));
  }
}

}  // namespace

std::unique_ptr<io::FeatureStore> open_feature_store(const TrainGnnConfig& c, uint64_t budget_bytes,
                                                     const io::GraphDataset& data, Device device) {
  if (c.feature_store() == "memory") return nullptr;
  const std::string& path = c.feature_file();
  const bool existed = !path.empty() && std::filesystem::exists(path);
  if (!path.empty() && !existed) {
    io::write_feature_file(path, data.features);
    std::printf("features written to %s\n", path.c_str());
  }
  const io::FeatureStoreOptions o{.num_threads = 2, .resident_limit_bytes = budget_bytes};
  std::unique_ptr<io::FeatureStore> store;
  if (c.feature_store() == "file") {
    store = std::make_unique<io::MappedFeatureStore>(path, o);
  } else if (!path.empty()) {
    store = std::make_unique<io::PinnedFeatureStore>(io::MappedFeatureStore(path, o), device, o);
  } else {
    store = std::make_unique<io::PinnedFeatureStore>(data.features, device, o);
  }
  STRATA_CHECK(store->num_rows() == data.graph.num_nodes() &&
                   store->num_features() == data.features.size(1) && store->dtype() == data.features.dtype(),
               ValueError, "--feature-file ", path, ": [", store->num_rows(), ", ", store->num_features(),
               "] ", dtype_name(store->dtype()), " rows for a dataset of ", data.graph.num_nodes(),
               " nodes and ", data.features.size(1), " f32 features");
  if (existed) check_feature_file_rows(path, *store, data.features);
  return store;
}

void save_gnn_data(const io::GraphDataset& data, const std::string& path) {
  if (data.graph.num_node_types() > 1 || data.graph.num_relations() > 1)
    return io::save_hetero_data(io::to_hetero_data(data), path);
  nn::StateDict t;
  t.insert("edge_index", ops::stack({data.graph.src().to(DType::i64), data.graph.dst().to(DType::i64)}, 0));
  t.insert("x", data.features);
  t.insert("y", data.labels);
  t.insert("train_mask", data.train_mask.to(DType::u8));
  t.insert("val_mask", data.val_mask.to(DType::u8));
  t.insert("test_mask", data.test_mask.to(DType::u8));
  io::write_safetensors(path, t, {{"name", data.name}, {"num_classes", std::to_string(data.num_classes)}});
}

}  // namespace strata::examples
