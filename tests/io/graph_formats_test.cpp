#include "strata/io/graphs/graph_formats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strata/core/error.h"
#include "tests/support/gzip_stored.h"
#include "tests/support/loader_files.h"

using namespace strata;
using namespace strata::io;
namespace fs = std::filesystem;
using strata::testing::gzip_stored;
using strata::testing::io_error;
using strata::testing::TempDir;
using strata::testing::write_file;

namespace {

void put_le(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(char((v >> (8 * i)) & 0xff));
}

// The input-order edges (src, dst) of a graph: CSC position p holds input edge edge_ids[p].
std::vector<std::pair<int64_t, int64_t>> input_edges(const Graph& g) {
  std::vector<double> src = g.src().to_double_vector(), dst = g.dst().to_double_vector(),
                      ids = g.edge_ids().to_double_vector();
  std::vector<std::pair<int64_t, int64_t>> out(src.size());
  for (size_t p = 0; p < src.size(); ++p) out[size_t(ids[p])] = {int64_t(src[p]), int64_t(dst[p])};
  return out;
}

using Edges = std::vector<std::pair<int64_t, int64_t>>;

// ---- a .gt file written byte by byte from the format's documentation ----

class GtBytes {
 public:
  GtBytes& u8(uint64_t v) { return raw(v, 1); }
  GtBytes& u64(uint64_t v) { return raw(v, 8); }
  GtBytes& raw(uint64_t v, int width) {
    put_le(&bytes, v, width);
    return *this;
  }
  GtBytes& str(const std::string& s) {
    u64(s.size());
    bytes += s;
    return *this;
  }
  GtBytes& f64(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    return u64(bits);
  }
  // x87 extended precision in 16 bytes, the way x86-64 graph-tool writes long double.
  GtBytes& extended(double d) {
    uint64_t mantissa = 0, exponent = 0;
    if (d != 0) {
      int e = 0;
      double f = std::frexp(std::fabs(d), &e);  // d = f 2^e, f in [0.5, 1)
      mantissa = uint64_t(std::ldexp(f, 64));
      exponent = uint64_t(e - 1 + 16383);
    }
    raw(mantissa, 8);
    raw(exponent | (d < 0 ? 0x8000 : 0), 2);
    return raw(0, 6);
  }
  // A property record: key (0 graph, 1 vertex, 2 edge), name, value type index.
  GtBytes& property(int key, const std::string& name, int type) { return u8(key).str(name).u8(type); }
  std::string bytes;
};

// 4 vertices, out-lists 0: {1, 2}, 1: {2}, 2: {0, 3}, 3: {} (edges 0..4 in that order), and
// properties of most value types.
std::string tiny_gt(bool directed) {
  GtBytes g;
  g.bytes = std::string("\xe2\x9b\xbe\x20\x67\x74", 6);
  g.u8(1).u8(0).str("a hand-written test graph");
  g.u8(directed ? 1 : 0).u64(4);
  g.u64(2).u8(1).u8(2).u64(1).u8(2).u64(2).u8(0).u8(3).u64(0);
  g.u64(12);
  g.property(0, "description", 6).str("tiny");
  g.property(1, "club", 2);
  for (int32_t v : {3, -1, 0, 3}) g.raw(uint32_t(v), 4);
  g.property(1, "score", 4).f64(0.5).f64(1.5).f64(-2.0).f64(3.25);
  g.property(1, "flag", 0).u8(1).u8(0).u8(1).u8(1);
  g.property(1, "small", 1);
  for (int16_t v : {-2, 7, 300, 0}) g.raw(uint16_t(v), 2);
  g.property(1, "pos", 11);
  for (double v : {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.5}) {
    if (int(v) % 2 == 0) g.u64(2);
    g.f64(v);
  }
  g.property(1, "team", 6).str("x").str("y").str("x").str("");
  g.property(1, "ragged", 10).u64(1).u64(9).u64(2).u64(8).u64(7).u64(0).u64(1).u64(6);
  g.property(1, "precise", 5).extended(1.5).extended(-3.0).extended(0.0).extended(1e10);
  g.property(1, "aliases", 13).u64(2).str("p").str("q").u64(0).u64(1).str("r").u64(0);
  g.property(2, "weight", 4);
  for (double w : {1.0, 2.0, 3.0, 4.0, 5.0}) g.f64(w);
  g.property(2, "kind", 3);
  for (int64_t k : {int64_t(10), int64_t(-20), int64_t(30), int64_t(1) << 60, INT64_MAX}) g.u64(uint64_t(k));
  return g.bytes;
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  return t.to_vector<T>();
}

}  // namespace

TEST(GraphFormats, GraphToolDirectedLoadsEveryValue) {
  TempDir dir;
  std::string path = dir.file("tiny.gt");
  write_file(path, tiny_gt(true));
  GraphToolInfo info;
  GraphDataset d = load_graph_tool(path, {.label_property = "club", .feature_property = "pos"}, &info);
  EXPECT_EQ(d.name, "tiny");
  EXPECT_TRUE(info.directed);
  EXPECT_EQ(info.comment, "a hand-written test graph");
  EXPECT_EQ(info.file_edges, 5);
  EXPECT_EQ(d.graph.num_nodes(), 4);
  EXPECT_EQ(input_edges(d.graph), (Edges{{0, 1}, {0, 2}, {1, 2}, {2, 0}, {2, 3}}));
  EXPECT_EQ(info.graph_properties.at("description"), "tiny");
  ASSERT_EQ(info.properties.size(), 12u);
  EXPECT_EQ(info.properties[9].name, "aliases");
  EXPECT_EQ(info.properties[9].type, "vector<string>");
  EXPECT_EQ(info.properties[10].key, "edge");

  EXPECT_EQ(values_of<int64_t>(d.labels), (std::vector<int64_t>{3, -1, 0, 3}));
  EXPECT_EQ(d.num_classes, 4);
  EXPECT_EQ(d.node_properties.at("club").dtype(), DType::i32);
  EXPECT_EQ(values_of<int64_t>(d.node_properties.at("club")), (std::vector<int64_t>{3, -1, 0, 3}));
  EXPECT_EQ(d.node_properties.at("score").dtype(), DType::f64);
  EXPECT_EQ(values_of<double>(d.node_properties.at("score")), (std::vector<double>{0.5, 1.5, -2.0, 3.25}));
  EXPECT_EQ(d.node_properties.at("flag").dtype(), DType::boolean);
  EXPECT_EQ(values_of<int>(d.node_properties.at("flag")), (std::vector<int>{1, 0, 1, 1}));
  EXPECT_EQ(d.node_properties.at("small").dtype(), DType::i32);
  EXPECT_EQ(values_of<int64_t>(d.node_properties.at("small")), (std::vector<int64_t>{-2, 7, 300, 0}));
  EXPECT_EQ(d.node_properties.at("pos").shape(), (Shape{4, 2}));
  EXPECT_EQ(values_of<double>(d.node_properties.at("pos")),
            (std::vector<double>{0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.5}));
  EXPECT_EQ(values_of<double>(d.node_properties.at("precise")), (std::vector<double>{1.5, -3.0, 0.0, 1e10}));
  // Strings, string vectors and ragged vectors have no tensor form.
  EXPECT_EQ(d.node_properties.count("team"), 0u);
  EXPECT_EQ(d.node_properties.count("ragged"), 0u);
  EXPECT_EQ(d.node_properties.count("aliases"), 0u);
  EXPECT_EQ(d.features.dtype(), DType::f32);
  EXPECT_EQ(d.features.shape(), (Shape{4, 2}));
  EXPECT_EQ(values_of<float>(d.features), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7.5f}));
  EXPECT_EQ(values_of<double>(d.edge_properties.at("weight")), (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_EQ(d.edge_properties.at("kind").dtype(), DType::i64);
  const int64_t* kind = d.edge_properties.at("kind").data<int64_t>();  // exact: no trip through double
  EXPECT_EQ(std::vector<int64_t>(kind, kind + 5),
            (std::vector<int64_t>{10, -20, 30, int64_t(1) << 60, INT64_MAX}));
  EXPECT_FALSE(d.train_mask.defined());
}

TEST(GraphFormats, GraphToolUndirectedStoresBothDirectionsAndStringLabels) {
  TempDir dir;
  std::string path = dir.file("tiny.gt");
  write_file(path, tiny_gt(false));
  GraphToolInfo info;
  GraphDataset d = load_graph_tool(path, {.label_property = "team"}, &info);
  EXPECT_FALSE(info.directed);
  EXPECT_EQ(info.file_edges, 5);
  EXPECT_EQ(input_edges(d.graph),
            (Edges{{0, 1}, {0, 2}, {1, 2}, {2, 0}, {2, 3}, {1, 0}, {2, 0}, {2, 1}, {0, 2}, {3, 2}}));
  EXPECT_EQ(values_of<double>(d.edge_properties.at("weight")),
            (std::vector<double>{1, 2, 3, 4, 5, 1, 2, 3, 4, 5}));
  EXPECT_EQ(values_of<int64_t>(d.labels), (std::vector<int64_t>{0, 1, 0, -1}));
  EXPECT_EQ(d.num_classes, 2);
  EXPECT_EQ(info.class_names, (std::vector<std::string>{"x", "y"}));
}

TEST(GraphFormats, GraphToolGzipGivesTheSameGraphAndRejectsBrokenStreams) {
  TempDir dir;
  const std::string bytes = tiny_gt(true);
  write_file(dir.file("tiny.gt.gz"), gzip_stored(bytes));
  GraphDataset d = load_graph_tool(dir.file("tiny.gt.gz"), {.label_property = "club"});
  EXPECT_EQ(d.name, "tiny");
  EXPECT_EQ(input_edges(d.graph), (Edges{{0, 1}, {0, 2}, {1, 2}, {2, 0}, {2, 3}}));
  EXPECT_EQ(values_of<int64_t>(d.labels), (std::vector<int64_t>{3, -1, 0, 3}));
  EXPECT_EQ(values_of<double>(d.node_properties.at("score")), (std::vector<double>{0.5, 1.5, -2.0, 3.25}));

  std::string gz = gzip_stored(bytes);
  write_file(dir.file("cut.gt.gz"), gz.substr(0, gz.size() / 2));
  std::string msg = io_error([&] { load_graph_tool(dir.file("cut.gt.gz")); });
  EXPECT_NE(msg.find("cut.gt.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("offset"), std::string::npos) << msg;
  gz[gz.size() - 6] ^= 0x55;  // the CRC
  write_file(dir.file("crc.gt.gz"), gz);
  msg = io_error([&] { load_graph_tool(dir.file("crc.gt.gz")); });
  EXPECT_NE(msg.find("crc.gt.gz"), std::string::npos) << msg;
}

TEST(GraphFormats, GraphToolCorruptFilesThrowIoErrorNamingFileAndOffset) {
  TempDir dir;
  const std::string good = tiny_gt(true);
  std::string path = dir.file("bad.gt");
  auto error_for = [&](const std::string& bytes) {
    write_file(path, bytes);
    return io_error([&] { load_graph_tool(path); });
  };
  std::string bad = good;
  bad[0] = 'X';
  std::string msg = error_for(bad);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte offset 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("magic"), std::string::npos) << msg;

  bad = good;
  bad[6] = 2;
  EXPECT_NE(error_for(bad).find("byte offset 6: unsupported .gt version 2"), std::string::npos);

  // N sits after the magic, version, endianness, comment (8 + 25 bytes) and the directed flag.
  const size_t n_at = 8 + 8 + 25 + 1;
  ASSERT_EQ(uint8_t(good[n_at]), 4);
  bad = good;
  bad[n_at + 3] = 0x10;  // N = 2^28 + 4: more lists than the file has bytes for
  msg = error_for(bad);
  EXPECT_NE(msg.find("byte offset " + std::to_string(n_at)), std::string::npos) << msg;
  EXPECT_NE(msg.find("vertex count"), std::string::npos) << msg;

  // Vertex 0's first neighbour (index width 1: N = 4) -> 9.
  bad = good;
  ASSERT_EQ(uint8_t(good[n_at + 8 + 8]), 1);
  bad[n_at + 8 + 8] = 9;
  msg = error_for(bad);
  EXPECT_NE(msg.find("byte offset " + std::to_string(n_at + 16)), std::string::npos) << msg;
  EXPECT_NE(msg.find("vertex index 9 out of range"), std::string::npos) << msg;

  msg = error_for(good.substr(0, good.size() - 3));  // inside the last property's values
  EXPECT_NE(msg.find("byte offset " + std::to_string(good.size() - 40) +
                     ": truncated: property 'kind' needs 40 bytes but the file ends after 37"),
            std::string::npos)
      << msg;

  msg = error_for(good + "xy");
  EXPECT_NE(msg.find("2 unexpected bytes"), std::string::npos) << msg;
}

TEST(GraphFormats, GraphToolEveryPrefixAndByteFlipFailsCleanly) {
  TempDir dir;
  const std::string good = tiny_gt(true);
  std::string path = dir.file("fuzz.gt");
  for (size_t len = 0; len < good.size(); ++len) {
    write_file(path, good.substr(0, len));
    std::string msg = io_error([&] { load_graph_tool(path); });
    ASSERT_NE(msg.find(path), std::string::npos) << "prefix " << len << ": " << msg;
  }
  int loaded = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    std::string bad = good;
    bad[at] = char(bad[at] ^ 0xff);
    write_file(path, bad);
    try {
      load_graph_tool(path);
      ++loaded;  // a flip inside a value is still a valid file
    } catch (const IoError& e) {
      ASSERT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(loaded, 0);
}

TEST(GraphFormats, GraphToolUnknownLabelPropertyIsAValueError) {
  TempDir dir;
  write_file(dir.file("tiny.gt"), tiny_gt(true));
  EXPECT_THROW(load_graph_tool(dir.file("tiny.gt"), {.label_property = "missing"}), ValueError);
  EXPECT_THROW(load_graph_tool(dir.file("tiny.gt"), {.feature_property = "team"}), ValueError);
  EXPECT_THROW(load_graph_tool(dir.file("tiny.gt"), {.label_property = "pos"}), ValueError);
}

// ---- Debian's graph-tool collection (tools/setup.sh with STRATA_GRAPH_DATA=1) ----

TEST(GraphFormats, DebianCollectionPolblogsFootballPolbooks) {
  const std::string root = std::string(STRATA_TEST_DATA_DIR) + "/../data/graphs/";
  if (!fs::exists(root + "polblogs.gt.gz"))
    GTEST_SKIP() << "no data/graphs (STRATA_GRAPH_DATA=1 tools/setup.sh)";
  GraphToolInfo info;
  GraphDataset blogs = load_graph_tool(root + "polblogs.gt.gz", {.label_property = "value"}, &info);
  EXPECT_EQ(blogs.name, "polblogs");
  EXPECT_TRUE(info.directed);
  EXPECT_EQ(blogs.graph.num_nodes(), 1490);
  EXPECT_EQ(blogs.graph.num_edges(), 19090);
  EXPECT_EQ(blogs.num_classes, 2);
  std::vector<int64_t> labels = blogs.labels.to_vector<int64_t>();
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 0), 758);  // liberal
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 1), 732);  // conservative
  EXPECT_EQ(blogs.node_properties.at("pos").shape(), (Shape{1490, 2}));

  GraphDataset football = load_graph_tool(root + "football.gt.gz", {.label_property = "value"}, &info);
  EXPECT_FALSE(info.directed);
  EXPECT_EQ(football.graph.num_nodes(), 115);
  EXPECT_EQ(football.graph.num_edges(), 2 * 613);
  EXPECT_EQ(football.num_classes, 12);

  GraphDataset books = load_graph_tool(root + "polbooks.gt.gz", {.label_property = "value"}, &info);
  EXPECT_EQ(books.graph.num_nodes(), 105);
  EXPECT_EQ(books.graph.num_edges(), 2 * 441);
  EXPECT_EQ(info.class_names, (std::vector<std::string>{"c", "l", "n"}));
  labels = books.labels.to_vector<int64_t>();
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 0), 49);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 1), 43);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 2), 13);
}

// ---- Edge lists and CSV ----

TEST(GraphFormats, EdgeListSkipsCommentsAndHeaderAndCountsNodesFromTheLargestId) {
  TempDir dir;
  write_file(dir.file("edges.txt"), "# a comment\nsrc dst\n0 1\n1\t2\n% another\n\n  3   0  \r\n");
  GraphDataset d = load_edge_list(dir.file("edges.txt"));
  EXPECT_EQ(d.name, "edges.txt");
  EXPECT_EQ(d.graph.num_nodes(), 4);
  EXPECT_EQ(input_edges(d.graph), (Edges{{0, 1}, {1, 2}, {3, 0}}));
  EXPECT_FALSE(d.labels.defined());
}

TEST(GraphFormats, EdgeListCsvWithWeightsUndirectedAndGivenNodeCount) {
  TempDir dir;
  write_file(dir.file("edges.csv"), "0,1,0.5\n2, 3 ,1.5\n");
  GraphDataset d =
      load_edge_list(dir.file("edges.csv"), {.num_nodes = 6, .undirected = true, .weight_column = true});
  EXPECT_EQ(d.graph.num_nodes(), 6);
  EXPECT_EQ(input_edges(d.graph), (Edges{{0, 1}, {2, 3}, {1, 0}, {3, 2}}));
  EXPECT_EQ(d.edge_properties.at("weight").dtype(), DType::f32);
  EXPECT_EQ(values_of<float>(d.edge_properties.at("weight")), (std::vector<float>{0.5f, 1.5f, 0.5f, 1.5f}));
}

TEST(GraphFormats, EdgeListRelationColumnBuildsATypedGraph) {
  TempDir dir;
  write_file(dir.file("typed.tsv"), "0 4 buys\n1 2 buys\n0 1 follows\n");
  GraphDataset d = load_edge_list(dir.file("typed.tsv"),
                                  {.relation_column = true, .node_types = {{"user", 2}, {"item", 3}}});
  ASSERT_EQ(d.graph.num_node_types(), 2);
  EXPECT_EQ(d.graph.nodes_of_type(1), 3);
  ASSERT_EQ(d.graph.num_relations(), 2);
  EXPECT_EQ(d.graph.relations()[0], (Relation{0, "buys", 1}));
  EXPECT_EQ(d.graph.relations()[1], (Relation{0, "follows", 0}));
  EXPECT_EQ(input_edges(d.graph), (Edges{{0, 4}, {1, 2}, {0, 1}}));

  GraphDataset u =
      load_edge_list(dir.file("typed.tsv"),
                     {.undirected = true, .relation_column = true, .node_types = {{"user", 2}, {"item", 3}}});
  ASSERT_EQ(u.graph.num_relations(), 3);
  EXPECT_EQ(u.graph.relations()[2], (Relation{1, "rev_buys", 0}));
  EXPECT_EQ(u.graph.num_edges(), 6);

  GraphDataset one = load_edge_list(dir.file("typed.tsv"), {.relation_column = true});
  EXPECT_EQ(one.graph.node_types(), (std::vector<std::string>{"node"}));
  EXPECT_EQ(one.graph.relations()[1], (Relation{0, "follows", 0}));

  write_file(dir.file("mixed.tsv"), "0 4 buys\n2 0 buys\n");
  std::string msg = io_error([&] {
    load_edge_list(dir.file("mixed.tsv"),
                   {.relation_column = true, .node_types = {{"user", 2}, {"item", 3}}});
  });
  EXPECT_NE(msg.find(dir.file("mixed.tsv") + ":2:"), std::string::npos) << msg;
}

TEST(GraphFormats, EdgeListNodeFileGivesLabelsAndFeatures) {
  TempDir dir;
  write_file(dir.file("e.txt"), "0 1\n1 2\n");
  write_file(dir.file("nodes.csv"), "id,label,f0,f1\n0,1,0.5,1\n2,0,2,3\n");
  GraphDataset d = load_edge_list(dir.file("e.txt"), {.node_file = dir.file("nodes.csv")});
  EXPECT_EQ(values_of<int64_t>(d.labels), (std::vector<int64_t>{1, -1, 0}));
  EXPECT_EQ(d.num_classes, 2);
  EXPECT_EQ(d.features.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(d.features), (std::vector<float>{0.5f, 1, 0, 0, 2, 3}));

  write_file(dir.file("names.txt"), "0 cat\n3 dog\n1 cat\n");
  GraphDataset named = load_edge_list(dir.file("e.txt"), {.node_file = dir.file("names.txt")});
  EXPECT_EQ(named.graph.num_nodes(), 4);  // the node file's id 3 counts
  EXPECT_EQ(values_of<int64_t>(named.labels), (std::vector<int64_t>{0, 0, -1, 1}));
  EXPECT_FALSE(named.features.defined());

  write_file(dir.file("twice.csv"), "0,1\n0,2\n");
  std::string msg =
      io_error([&] { load_edge_list(dir.file("e.txt"), {.node_file = dir.file("twice.csv")}); });
  EXPECT_NE(msg.find(dir.file("twice.csv") + ":2: node 0 is listed twice (first at line 1)"),
            std::string::npos)
      << msg;
}

TEST(GraphFormats, EdgeListMalformedLinesNameFileAndLine) {
  TempDir dir;
  auto error_for = [&](const std::string& text, EdgeListOptions options = {}) {
    write_file(dir.file("bad.txt"), text);
    return io_error([&] { load_edge_list(dir.file("bad.txt"), options); });
  };
  const std::string at2 = dir.file("bad.txt") + ":2:";
  std::string msg = error_for("0 1\n1 x\n");
  EXPECT_NE(msg.find(at2 + " destination id 'x' is not an integer"), std::string::npos) << msg;
  msg = error_for("0 1\n1 2 3\n");
  EXPECT_NE(msg.find(at2 + " expected 2 fields"), std::string::npos) << msg;
  msg = error_for("0 1\n-1 2\n");
  EXPECT_NE(msg.find(at2 + " node id -1 out of range"), std::string::npos) << msg;
  msg = error_for("0 1\n1 5\n", {.num_nodes = 5});
  EXPECT_NE(msg.find(at2 + " node id 5 out of range [0, 5)"), std::string::npos) << msg;
  msg = error_for("0 1\n1 1000000000000000\n");
  EXPECT_NE(msg.find(at2), std::string::npos) << msg;
  msg = error_for("0 1 0.5\n1 2 heavy\n", {.weight_column = true});
  EXPECT_NE(msg.find(at2 + " weight 'heavy'"), std::string::npos) << msg;
}

// ---- OGB's raw layout ----

namespace {

// A .npy file (format version 1) of little-endian values.
template <class T>
std::string npy_bytes(const std::string& descr, const std::string& shape, const std::vector<T>& values) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  put_le(&out, header.size(), 2);
  out += header;
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return out;
}

void write_ogb(const std::string& dir) {
  write_file(dir + "/raw/edge.csv.gz", gzip_stored("0,1\n1,2\n3,0\n"));
  write_file(dir + "/raw/num-node-list.csv.gz", gzip_stored("4\n"));
  write_file(dir + "/raw/num-edge-list.csv", "3\n");
  write_file(dir + "/raw/node-feat.csv", "0.5,1\n1.5,2\n-1,0\n2.25,3\n");
  write_file(dir + "/raw/node-label.csv", "2\nnan\n0\n1\n");
  write_file(dir + "/raw/node_year.csv", "2001\n2002\n2003\n1999\n");
  write_file(dir + "/split/time/train.csv", "0\n3\n");
  write_file(dir + "/split/time/valid.csv.gz", gzip_stored("2\n"));
  write_file(dir + "/split/time/test.csv", "1\n");
}

}  // namespace

TEST(GraphFormats, OgbRawReadsGraphFeaturesLabelsExtrasAndSplit) {
  TempDir dir;
  std::string root = dir.file("ogbn_tiny");
  write_ogb(root);
  GraphDataset d = load_ogb_raw(root);
  EXPECT_EQ(d.name, "ogbn_tiny");
  EXPECT_EQ(d.graph.num_nodes(), 4);
  EXPECT_EQ(input_edges(d.graph), (Edges{{0, 1}, {1, 2}, {3, 0}}));
  EXPECT_EQ(d.features.shape(), (Shape{4, 2}));
  EXPECT_EQ(values_of<float>(d.features), (std::vector<float>{0.5f, 1, 1.5f, 2, -1, 0, 2.25f, 3}));
  EXPECT_EQ(values_of<int64_t>(d.labels), (std::vector<int64_t>{2, -1, 0, 1}));
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_EQ(d.node_properties.at("node_year").dtype(), DType::i64);
  EXPECT_EQ(values_of<int64_t>(d.node_properties.at("node_year")),
            (std::vector<int64_t>{2001, 2002, 2003, 1999}));
  EXPECT_EQ(values_of<int>(d.train_mask), (std::vector<int>{1, 0, 0, 1}));
  EXPECT_EQ(values_of<int>(d.val_mask), (std::vector<int>{0, 0, 1, 0}));
  EXPECT_EQ(values_of<int>(d.test_mask), (std::vector<int>{0, 1, 0, 0}));

  GraphDataset both = load_ogb_raw(root, {.split = "time", .add_inverse_edges = true});
  EXPECT_EQ(input_edges(both.graph), (Edges{{0, 1}, {1, 2}, {3, 0}, {1, 0}, {2, 1}, {0, 3}}));
}

TEST(GraphFormats, OgbRawPrefersNpyFiles) {
  TempDir dir;
  std::string root = dir.file("ogbn_npy");
  write_ogb(root);
  write_file(root + "/raw/edge.npy", npy_bytes<int64_t>("<i8", "(2, 2)", {2, 3, 3, 1}));
  write_file(root + "/raw/node-feat.npy", npy_bytes<float>("<f4", "(4, 1)", {1, 2, 3, 4}));
  write_file(root + "/raw/num-edge-list.csv", "2\n");
  GraphDataset d = load_ogb_raw(root);
  EXPECT_EQ(input_edges(d.graph), (Edges{{2, 3}, {3, 1}}));
  EXPECT_EQ(values_of<float>(d.features), (std::vector<float>{1, 2, 3, 4}));

  const std::string bad_id = npy_bytes<int64_t>("<i8", "(2, 2)", {2, 3, 3, 9});
  const size_t data_at = bad_id.size() - 32;  // the preamble and header padded to 64 bytes
  ASSERT_EQ(data_at % 64, 0u);
  write_file(root + "/raw/edge.npy", bad_id);
  std::string msg = io_error([&] { load_ogb_raw(root); });
  EXPECT_NE(msg.find(root + "/raw/edge.npy' at byte offset " + std::to_string(data_at + 16) +
                     ": node id 9 out of range [0, 4)"),
            std::string::npos)
      << msg;  // row 1
  write_file(root + "/raw/edge.npy", npy_bytes<int64_t>("<i8", "(3, 2)", {2, 3, 3, 1}));
  msg = io_error([&] { load_ogb_raw(root); });
  EXPECT_NE(msg.find("at byte offset " + std::to_string(data_at) +
                     ": the shape [3, 2] of <i8 needs 48 bytes of data but the file holds 32"),
            std::string::npos)
      << msg;
  write_file(root + "/raw/edge.npy", npy_bytes<int64_t>(">i8", "(2, 2)", {2, 3, 3, 1}));
  msg = io_error([&] { load_ogb_raw(root); });
  EXPECT_NE(msg.find("unsupported dtype '>i8'"), std::string::npos) << msg;
}

TEST(GraphFormats, OgbRawErrorsNameFileAndLine) {
  TempDir dir;
  std::string root = dir.file("ogbn_bad");
  // One file of a good dataset replaced at a time, and the message that names what is wrong.
  const struct {
    std::string file, content, message;
  } cases[] = {
      {"/raw/edge.csv.gz", gzip_stored("0,1\n1,7\n3,0\n"),
       root + "/raw/edge.csv.gz:2: node id 7 out of range [0, 4)"},
      {"/raw/node-feat.csv", "0.5,1\n1.5\n", root + "/raw/node-feat.csv:2: expected 2 fields"},
      {"/raw/num-edge-list.csv", "4\n", "edge count 4 but"},
      {"/split/time/test.csv", "1\n4\n", root + "/split/time/test.csv:2: node index 4 out of range"},
      {"/split/random/train.csv", "0\n", "several splits (random time)"},
  };
  std::string msg;
  for (const auto& c : cases) {
    write_ogb(root);
    write_file(root + c.file, c.content);
    msg = io_error([&] { load_ogb_raw(root); });
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.file << ": " << msg;
  }

  write_file(root + "/raw/num-node-list.csv.gz", gzip_stored("100000000000\n"));
  msg = io_error([&] { load_ogb_raw(root, {.split = "time"}); });
  EXPECT_NE(msg.find("num-node-list.csv.gz:1: node count 100000000000 out of range"), std::string::npos)
      << msg;
}

TEST(GraphFormats, OgbRawFloatIdsMustBeWholeNumbersInInt64Range) {
  TempDir dir;
  std::string root = dir.file("ogbn_float");
  write_ogb(root);
  write_file(root + "/raw/num-edge-list.csv", "2\n");
  write_file(root + "/raw/edge.npy", npy_bytes<double>("<f8", "(2, 2)", {2, 3, 3, 1}));
  EXPECT_EQ(input_edges(load_ogb_raw(root).graph), (Edges{{2, 3}, {3, 1}}));
  // Converting NaN or 1e300 to an integer is undefined: each is refused, naming its byte offset.
  for (double bad : {std::nan(""), 1e300, -1e19, 2.5}) {
    const std::string bytes = npy_bytes<double>("<f8", "(2, 2)", {2, 3, 3, bad});
    write_file(root + "/raw/edge.npy", bytes);
    std::string msg = io_error([&] { load_ogb_raw(root); });
    const std::string at = "at byte offset " + std::to_string(bytes.size() - 8) + ": ";
    EXPECT_NE(msg.find(root + "/raw/edge.npy' " + at), std::string::npos) << msg;
    EXPECT_NE(msg.find(" is not an integer"), std::string::npos) << msg;
  }
  // An additional file's whole numbers beyond int64 make it f32, not i64.
  write_file(root + "/raw/edge.npy", npy_bytes<double>("<f8", "(2, 2)", {2, 3, 3, 1}));
  write_file(root + "/raw/node_big.csv", "1e300\n1\n2\n3\n");
  EXPECT_EQ(load_ogb_raw(root).node_properties.at("node_big").dtype(), DType::f32);
}

TEST(GraphFormats, NpyRefusesShapesWhoseSizesOverflowAndReadsNonZeroBoolBytesAsTrue) {
  TempDir dir;
  std::string root = dir.file("ogbn_npy_edges");
  write_ogb(root);
  // No data, but strides of 4 x 2^62 elements: numpy refuses it too.
  write_file(root + "/raw/edge.npy", npy_bytes<int64_t>("<i8", "(0, 4611686018427387904, 4)", {}));
  std::string msg = io_error([&] { load_ogb_raw(root); });
  EXPECT_NE(msg.find("the shape [0, 4611686018427387904, 4] is too large"), std::string::npos) << msg;

  fs::remove(root + "/raw/edge.npy");
  write_file(root + "/raw/node_flag.npy", npy_bytes<uint8_t>("|b1", "(4,)", {0, 2, 1, 255}));
  GraphDataset d = load_ogb_raw(root);
  EXPECT_EQ(values_of<int64_t>(d.node_properties.at("node_flag")), (std::vector<int64_t>{0, 1, 1, 1}));
}

// ---- Planetoid's raw text ----

TEST(GraphFormats, PlanetoidRawBuildsAnUndirectedCitationGraph) {
  TempDir dir;
  write_file(dir.file("tiny.content"), "p31\t0\t1\t0\tTheory\nalpha97\t1\t1\t0\tAI\nx_9\t0\t0\t1\tTheory\n");
  // x_9 cites p31 twice, p31 and alpha97 cite each other, "ghost" is not in .content.
  write_file(dir.file("tiny.cites"),
             "p31\tx_9\np31\tx_9\nalpha97\tp31\np31\talpha97\nghost\tp31\nx_9\tghost\n");
  PlanetoidInfo info;
  GraphDataset d = load_planetoid_raw(dir.path, "tiny", &info);
  EXPECT_EQ(d.name, "tiny");
  EXPECT_EQ(info.paper_ids, (std::vector<std::string>{"p31", "alpha97", "x_9"}));
  EXPECT_EQ(info.class_names, (std::vector<std::string>{"AI", "Theory"}));
  EXPECT_EQ(info.skipped_citations, 2);
  EXPECT_EQ(values_of<int64_t>(d.labels), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(d.num_classes, 2);
  EXPECT_EQ(d.features.shape(), (Shape{3, 3}));
  EXPECT_EQ(values_of<float>(d.features), (std::vector<float>{0, 1, 0, 1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(input_edges(d.graph), (Edges{{0, 1}, {0, 2}, {1, 0}, {2, 0}}));
}

TEST(GraphFormats, PlanetoidRawRejectsRaggedRowsAndDuplicatePapers) {
  TempDir dir;
  write_file(dir.file("bad.cites"), "a\tb\n");
  write_file(dir.file("bad.content"), "a\t0\t1\tX\nb\t1\tY\n");
  std::string msg = io_error([&] { load_planetoid_raw(dir.path, "bad"); });
  EXPECT_NE(msg.find(dir.file("bad.content") + ":2: expected 4 fields"), std::string::npos) << msg;
  write_file(dir.file("bad.content"), "a\t0\tX\nb\t1\tY\na\t1\tY\n");
  msg = io_error([&] { load_planetoid_raw(dir.path, "bad"); });
  EXPECT_NE(msg.find(dir.file("bad.content") + ":3: paper 'a' is listed twice (first at line 1)"),
            std::string::npos)
      << msg;
  write_file(dir.file("bad.content"), "a\t0\tX\nb\t1\tY\n");
  write_file(dir.file("bad.cites"), "a\tb\nb\n");
  msg = io_error([&] { load_planetoid_raw(dir.path, "bad"); });
  EXPECT_NE(msg.find(dir.file("bad.cites") + ":2: expected 2 fields"), std::string::npos) << msg;
  msg = io_error([&] { load_planetoid_raw(dir.path, "missing"); });
  EXPECT_NE(msg.find("missing.content"), std::string::npos) << msg;
}

// NaN or an infinity among the features is refused, naming the file and where: SAGE and GCN used
// to report a finite loss near ln C and chance accuracy on such input.
TEST(GraphFormats, NonFiniteFeaturesAreRefusedByFileAndPlace) {
  TempDir dir;
  write_file(dir.file("e.txt"), "0 1\n1 2\n");
  write_file(dir.file("nodes.csv"), "id,label,f0,f1\n0,1,0.5,1\n2,0,nan,3\n");
  std::string msg =
      io_error([&] { load_edge_list(dir.file("e.txt"), {.node_file = dir.file("nodes.csv")}); });
  EXPECT_NE(msg.find(dir.file("nodes.csv") + ":3: feature column 0 is nan"), std::string::npos) << msg;

  write_file(dir.file("tiny.content"), "p31\t0\t1\tTheory\nx_9\tinf\t0\tAI\n");
  write_file(dir.file("tiny.cites"), "p31\tx_9\n");
  msg = io_error([&] { load_planetoid_raw(dir.path, "tiny"); });
  EXPECT_NE(msg.find(dir.file("tiny.content") + ": feature row 1, column 0 is inf"), std::string::npos)
      << msg;

  const std::string root = dir.file("ogbn_nan");
  write_ogb(root);
  write_file(root + "/raw/node-feat.csv", "0.5,1\n1.5,2\n-1,-inf\n2.25,3\n");
  msg = io_error([&] { load_ogb_raw(root); });
  EXPECT_NE(msg.find("node-feat.csv: feature row 2, column 1 is -inf"), std::string::npos) << msg;
}
