// io::HeteroData: the typed graph file tools/pyg_hetero_to_safetensors.py writes from a PyG
// HeteroData (fixture: tests/goldens/gnn/hetero_data_pyg.safetensors, tools/goldens/hetero_data_goldens.py)
// loads with its types, counts, features, labels and masks; its graph holds PyG's to_homogeneous()
// edges, relations and node types, edge by edge; it saves and loads back unchanged; bad files are
// named.
#include "strata/io/graphs/hetero_data.h"

#include <gtest/gtest.h>

#include "strata/io/weights/safetensors.h"
#include "strata/strata.h"
#include "support/loader_files.h"
#include "support/tensor_compare.h"

using namespace strata;

namespace {

const std::string kDir = std::string(STRATA_TEST_DATA_DIR) + "/goldens/gnn/";

std::vector<int64_t> ints(const Tensor& t) { return t.to(DType::i64).contiguous().to_vector<int64_t>(); }

// The graph's edges in input order: (source, destination, relation) of edge id e.
std::vector<std::array<int64_t, 3>> edges_by_id(const Graph& g) {
  const std::vector<int64_t> src = ints(g.src()), dst = ints(g.dst()), ids = ints(g.edge_ids()),
                             rel = ints(g.edge_relations());
  std::vector<std::array<int64_t, 3>> out(src.size());
  for (size_t p = 0; p < src.size(); ++p) out[size_t(ids[p])] = {src[p], dst[p], rel[p]};
  return out;
}

void expect_same_data(const io::HeteroData& a, const io::HeteroData& b) {
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  ASSERT_EQ(a.edge_index.size(), b.edge_index.size());
  for (size_t r = 0; r < a.edge_index.size(); ++r) {
    EXPECT_EQ(a.edge_index[r].type, b.edge_index[r].type);
    EXPECT_EQ(ints(a.edge_index[r].edge_index), ints(b.edge_index[r].edge_index));
  }
  for (auto field : {&io::HeteroData::x, &io::HeteroData::y, &io::HeteroData::train_mask,
                     &io::HeteroData::val_mask, &io::HeteroData::test_mask}) {
    ASSERT_EQ((a.*field).size(), (b.*field).size());
    for (const auto& [type, t] : a.*field) strata::testing::expect_close((b.*field).at(type), t, 0, 0, type);
  }
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.num_classes, b.num_classes);
}

}  // namespace

TEST(HeteroData, LoadsWhatThePyGWriterWrote) {
  const io::HeteroData d = io::load_hetero_data(kDir + "hetero_data_pyg.safetensors");
  EXPECT_EQ(d.num_nodes, (std::vector<std::pair<std::string, int64_t>>{
                             {"paper", 6}, {"author", 5}, {"venue", 2}, {"topic", 3}}));
  ASSERT_EQ(d.edge_index.size(), 5u);
  EXPECT_EQ(d.edge_index[2].type, (EdgeType{"paper", "published_in", "venue"}));
  EXPECT_EQ(d.x.at("venue").sizes(), (Shape{2, 3}));
  EXPECT_EQ(d.x.count("topic"), 0u);  // PyG's num_nodes without features
  EXPECT_EQ(ints(d.y.at("author")), (std::vector<int64_t>{0, 1, 2, 1, 0}));
  EXPECT_EQ(ints(d.train_mask.at("author")), (std::vector<int64_t>{1, 1, 0, 0, 1}));
  EXPECT_EQ(d.name, "toy-dblp");
  EXPECT_EQ(d.num_classes, 3);
}

TEST(HeteroData, ItsGraphIsPyGsToHomogeneousEdgeByEdge) {
  const Graph g = io::load_hetero_data(kDir + "hetero_data_pyg.safetensors").graph();
  const io::Safetensors pyg = io::read_safetensors(kDir + "hetero_data_homogeneous.safetensors");
  const std::vector<int64_t> ei = ints(*pyg.tensors.find("edge_index")),
                             et = ints(*pyg.tensors.find("edge_type"));
  const size_t E = et.size();
  ASSERT_EQ(int64_t(E), g.num_edges());
  const auto edges = edges_by_id(g);
  for (size_t e = 0; e < E; ++e) {
    EXPECT_EQ(edges[e][0], ei[e]) << "source of edge " << e;
    EXPECT_EQ(edges[e][1], ei[E + e]) << "destination of edge " << e;
    EXPECT_EQ(edges[e][2], et[e]) << "relation of edge " << e;
  }
  EXPECT_EQ(ints(g.node_type_ids()), ints(*pyg.tensors.find("node_type")));
}

TEST(HeteroData, SavesAndLoadsBackUnchanged) {
  strata::testing::TempDir dir;
  const io::HeteroData d = io::load_hetero_data(kDir + "hetero_data_pyg.safetensors");
  io::save_hetero_data(d, dir.file("again.safetensors"));
  expect_same_data(d, io::load_hetero_data(dir.file("again.safetensors")));
}

// As train_gnn takes it: types of different widths, and a featureless one, stay per type (the
// model projects each); one width for every type gives global rows; back to HeteroData, the same
// features per type.
TEST(HeteroData, FeaturesOfDifferentWidthsStayPerType) {
  const io::HeteroData d = io::load_hetero_data(kDir + "hetero_data_pyg.safetensors");
  const io::GraphDataset typed = io::to_graph_dataset(d);
  EXPECT_FALSE(typed.features.defined());
  ASSERT_EQ(typed.typed_features.size(), 3u);  // paper, author, venue; topic has none
  strata::testing::expect_close(typed.typed_features.at("venue"), d.x.at("venue"), 0, 0, "venue");
  EXPECT_EQ(ints(typed.labels),
            (std::vector<int64_t>{-1, -1, -1, -1, -1, -1, 0, 1, 2, 1, 0, -1, -1, -1, -1, -1}));
  const io::HeteroData back = io::to_hetero_data(typed);
  ASSERT_EQ(back.x.size(), d.x.size());
  for (const auto& [type, x] : d.x) strata::testing::expect_close(back.x.at(type), x, 0, 0, "x." + type);

  io::HeteroData same_width = d;
  same_width.x["venue"] = ops::zeros({2, 4});
  same_width.x["topic"] = ops::ones({3, 4});
  const io::GraphDataset rows = io::to_graph_dataset(same_width);
  EXPECT_TRUE(rows.typed_features.empty());
  ASSERT_EQ(rows.features.sizes(), (Shape{16, 4}));
  strata::testing::expect_close(ops::narrow(rows.features, 0, 13, 3), ops::ones({3, 4}), 0, 0, "topic rows");
}

TEST(HeteroData, BadFilesAreNamed) {
  strata::testing::TempDir dir;
  auto write = [&](const nn::StateDict& t, std::map<std::string, std::string> meta) {
    io::write_safetensors(dir.file("bad.safetensors"), t, meta);
    return strata::testing::io_error([&] { io::load_hetero_data(dir.file("bad.safetensors")); });
  };
  const std::map<std::string, std::string> meta = {{"format", "strata-hetero/1"},
                                                   {"node_types", "paper,author"},
                                                   {"num_nodes", "3,2"},
                                                   {"edge_types", "author__writes__paper"}};
  nn::StateDict t;
  t.insert("edge_index.author__writes__paper", ops::from_vector(std::vector<int64_t>{0, 2, 0, 1}, {2, 2}));
  EXPECT_NE(write(t, meta).find(
                "edge 1 of ('author', 'writes', 'paper') starts at local id 2, outside 'author' [0, 2)"),
            std::string::npos);
  t = nn::StateDict();
  EXPECT_NE(write(t, meta).find(
                "lists edge type 'author__writes__paper' but has no 'edge_index.author__writes__paper'"),
            std::string::npos);
  t = nn::StateDict();
  t.insert("edge_index.author__writes__paper", ops::from_vector(std::vector<int64_t>{0, 1}, {2, 1}));
  t.insert("x.paper", ops::randn({4, 2}));
  EXPECT_NE(write(t, meta).find("'x.paper' has 4 rows, 'paper' 3 nodes"), std::string::npos);
  t = nn::StateDict();
  t.insert("edge_index.author__writes__paper", ops::from_vector(std::vector<int64_t>{0, 1}, {2, 1}));
  t.insert("x.venue", ops::randn({2, 2}));
  EXPECT_NE(write(t, meta).find("tensor 'x.venue' is not a listed edge type's or node type's"),
            std::string::npos);
  auto no_counts = meta;
  no_counts["num_nodes"] = "3";
  EXPECT_NE(write(t, no_counts).find("2 node types but 1 node counts"), std::string::npos);
  auto other = meta;
  other["format"] = "pyg";
  EXPECT_NE(write(t, other).find("is format 'pyg', not strata-hetero/1"), std::string::npos);
  EXPECT_THROW(io::save_hetero_data(io::HeteroData{.num_nodes = {{"a__b", 1}}}, dir.file("x.safetensors")),
               ValueError);
}
