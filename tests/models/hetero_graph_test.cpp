// Typed graphs built the PyG way (ops/hetero_graph.h, nn::HeteroDictLinear): a graph from node
// counts and per-type local edge indices gives the relational layers the same outputs and
// gradients, bit for bit, as the graph a user renumbers by hand into global ids; features of
// different widths per type are projected per type, a type without features learns its rows
// (nn::TypedNodeInput); ids convert both ways; bad input is named.
#include "strata/ops/hetero_graph.h"

#include <gtest/gtest.h>

#include <random>

#include "strata/models/gnn.h"
#include "strata/models/layers/graph/hetero_dict_linear.h"
#include "strata/models/layers/graph/hgt_conv.h"
#include "strata/models/layers/graph/rgat_conv.h"
#include "strata/models/layers/graph/rgcn_conv.h"
#include "strata/models/layers/graph/typed_node_input.h"
#include "strata/strata.h"
#include "support/error_of.h"
#include "support/tensor_compare.h"

using namespace strata;

namespace {

// Node types in a non-alphabetical order (the order given is the global order, not the name's).
const std::vector<std::pair<std::string, int64_t>> kNodes = {{"paper", 5}, {"author", 4}, {"venue", 2}};
const std::vector<int64_t> kOffsets = {0, 5, 9, 11};

struct Edges {
  EdgeType type;
  int64_t src_type, dst_type;
  std::vector<int64_t> src, dst;  // local ids
};

// Four edge types with random local edges (duplicates included); author has no in-edges.
std::vector<Edges> random_edges() {
  std::mt19937 rng(7);
  std::vector<Edges> es = {{{"author", "writes", "paper"}, 1, 0, {}, {}},
                           {{"paper", "cites", "paper"}, 0, 0, {}, {}},
                           {{"paper", "published_in", "venue"}, 0, 2, {}, {}},
                           {{"venue", "publishes", "paper"}, 2, 0, {}, {}}};
  const int64_t counts[] = {5, 4, 2};
  const int sizes[] = {9, 7, 5, 6};
  for (size_t r = 0; r < es.size(); ++r)
    for (int k = 0; k < sizes[r]; ++k) {
      es[r].src.push_back(int64_t(rng() % uint64_t(counts[es[r].src_type])));
      es[r].dst.push_back(int64_t(rng() % uint64_t(counts[es[r].dst_type])));
    }
  return es;
}

Graph built_the_pyg_way(const std::vector<Edges>& es) {
  std::vector<TypedEdgeIndex> ei;
  for (const Edges& e : es) {
    std::vector<int64_t> v = e.src;
    v.insert(v.end(), e.dst.begin(), e.dst.end());
    ei.push_back({e.type, ops::from_vector(v, {2, int64_t(e.src.size())})});
  }
  return hetero_graph(kNodes, ei);
}

// What a user wrote before: every id shifted by its type's offset, the edges concatenated.
Graph renumbered_by_hand(const std::vector<Edges>& es) {
  std::vector<int64_t> src, dst, rel;
  std::vector<Relation> rels;
  for (size_t r = 0; r < es.size(); ++r) {
    for (size_t k = 0; k < es[r].src.size(); ++k) {
      src.push_back(es[r].src[k] + kOffsets[size_t(es[r].src_type)]);
      dst.push_back(es[r].dst[k] + kOffsets[size_t(es[r].dst_type)]);
      rel.push_back(int64_t(r));
    }
    rels.push_back({es[r].src_type, es[r].type.rel, es[r].dst_type});
  }
  const int64_t E = int64_t(src.size());
  return Graph::from_typed_edges({"paper", "author", "venue"}, {5, 4, 2}, rels, ops::from_vector(src, {E}),
                                 ops::from_vector(dst, {E}), ops::from_vector(rel, {E}));
}

std::map<std::string, Tensor> features() {
  manual_seed(3);
  return {{"paper", ops::randn({5, 7})}, {"author", ops::randn({4, 5})}, {"venue", ops::randn({2, 3})}};
}

void expect_same(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined() && b.defined()) << what;
  strata::testing::expect_close(a, b, 0, 0, what);
}

// The projection and the layer on both graphs: outputs, every parameter's gradient and each
// type's feature gradient equal bit for bit.
template <class Layer>
void check_layer(Layer& conv, const char* name) {
  SCOPED_TRACE(name);
  const std::vector<Edges> es = random_edges();
  const Graph pyg = built_the_pyg_way(es), hand = renumbered_by_hand(es);
  manual_seed(11);
  nn::HeteroDictLinear proj({{"paper", 7}, {"author", 5}, {"venue", 3}}, 6);
  std::vector<Tensor> params = proj.parameters();
  for (const Tensor& p : conv.parameters()) params.push_back(p);

  auto run = [&](bool builder, std::map<std::string, Tensor>* x_grads, std::vector<Tensor>* p_grads) {
    for (Tensor& p : params) p.set_grad(Tensor());
    std::map<std::string, Tensor> x = features();
    for (auto& [t, v] : x) v.set_requires_grad(true);
    Tensor h;
    if (builder) {
      h = conv.forward(pyg, proj.forward(pyg, x));
    } else {
      const std::map<std::string, Tensor> px = proj.forward(x);
      h = conv.forward(hand, ops::cat({px.at("paper"), px.at("author"), px.at("venue")}, 0));
    }
    manual_seed(5);
    ops::sum(ops::mul(h, ops::randn(h.sizes()))).backward();
    for (auto& [t, v] : x) (*x_grads)[t] = v.grad().clone();
    for (const Tensor& p : params) p_grads->push_back(p.grad().clone());
    return h;
  };
  std::map<std::string, Tensor> gx_pyg, gx_hand;
  std::vector<Tensor> gp_pyg, gp_hand;
  const Tensor out_pyg = run(true, &gx_pyg, &gp_pyg), out_hand = run(false, &gx_hand, &gp_hand);
  EXPECT_EQ(out_pyg.size(0), 11);
  expect_same(out_pyg, out_hand, "output");
  for (const auto& [t, g] : gx_hand) expect_same(gx_pyg.at(t), g, "grad of x." + t);
  ASSERT_EQ(gp_pyg.size(), gp_hand.size());
  for (size_t i = 0; i < gp_hand.size(); ++i)
    expect_same(gp_pyg[i], gp_hand[i], "grad of parameter " + std::to_string(i));
  // Outputs per type are the rows of the type's global range.
  const std::map<std::string, Tensor> per_type = split_node_rows(pyg, out_pyg);
  expect_same(per_type.at("author"), ops::narrow(out_hand, 0, 5, 4), "author rows");
}

}  // namespace

TEST(HeteroGraph, RgcnMatchesTheHandRenumberedGraph) {
  manual_seed(1);
  nn::RGCNConv conv(6, 4, 4, {.num_bases = 2});
  check_layer(conv, "RGCNConv");
}

TEST(HeteroGraph, RgatMatchesTheHandRenumberedGraph) {
  manual_seed(1);
  nn::RGATConv conv(6, 3, 4, {.heads = 2});
  check_layer(conv, "RGATConv");
}

TEST(HeteroGraph, HgtMatchesTheHandRenumberedGraph) {
  const Graph g = built_the_pyg_way(random_edges());
  manual_seed(1);
  nn::HGTConv conv(6, 6, g.node_types(), g.relations(), {.heads = 2});
  check_layer(conv, "HGTConv");
  // PyG's key for relation r's parameters is the r-th edge type given.
  bool named = false;
  for (const auto& [name, p] : conv.named_parameters()) named |= name == "p_rel.paper__published_in__venue";
  EXPECT_TRUE(named);
}

TEST(HeteroGraph, TypesAndRelationsKeepTheOrderGiven) {
  const Graph g = built_the_pyg_way(random_edges());
  EXPECT_EQ(g.node_types(), (std::vector<std::string>{"paper", "author", "venue"}));
  EXPECT_EQ(g.type_offset(1), 5);
  EXPECT_EQ(g.type_offset(2), 9);
  ASSERT_EQ(g.num_relations(), 4);
  EXPECT_EQ(g.relations()[2].name, "published_in");
  EXPECT_EQ(g.relations()[2].src_type, 0);
  EXPECT_EQ(g.relations()[2].dst_type, 2);
  EXPECT_EQ(g.num_edges(), 27);
}

TEST(HeteroGraph, IdsConvertBetweenLocalAndGlobal) {
  const Graph g = built_the_pyg_way(random_edges());
  const Tensor global = to_global_ids(g, "author", ops::from_vector(std::vector<int64_t>{0, 3, 1}, {3}));
  EXPECT_EQ(global.to_vector<int64_t>(), (std::vector<int64_t>{5, 8, 6}));
  const auto [types, local] = to_local_ids(g, ops::from_vector(std::vector<int64_t>{0, 4, 5, 9, 10}, {5}));
  EXPECT_EQ(types.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 2, 2}));
  EXPECT_EQ(local.to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 0, 0, 1}));
  EXPECT_THROW(to_global_ids(g, "author", ops::from_vector(std::vector<int64_t>{4}, {1})), IndexError);
  EXPECT_THROW(to_local_ids(g, ops::from_vector(std::vector<int64_t>{11}, {1})), IndexError);
  EXPECT_THROW(node_type_index(g, "institution"), ValueError);
}

TEST(HeteroGraph, BadInputIsNamed) {
  auto message = [](auto f) { return strata::testing::error_of(f); };
  const Tensor one_edge = ops::from_vector(std::vector<int64_t>{0, 4}, {2, 1});
  EXPECT_NO_THROW(hetero_graph(kNodes, {{{"paper", "cites", "paper"}, one_edge}}));  // local id 4 of 5
  const Tensor far = ops::from_vector(std::vector<int64_t>{0, 5}, {2, 1});
  EXPECT_NE(message([&] {
              hetero_graph(kNodes, {{{"paper", "cites", "paper"}, far}});
            }).find("ends at local id 5, outside 'paper' [0, 5)"),
            std::string::npos);
  EXPECT_NE(message([&] {
              hetero_graph(kNodes, {{{"paper", "cites", "journal"}, one_edge}});
            }).find("names node type 'journal', which is not among 'paper', 'author', 'venue'"),
            std::string::npos);
  EXPECT_NE(message([&] {
              hetero_graph(kNodes, {{{"paper", "cites", "paper"},
                                     ops::from_vector(std::vector<int64_t>{0, 1}, {1, 2})}});
            }).find("must be an integer tensor [2, E]"),
            std::string::npos);
  const Graph g = built_the_pyg_way(random_edges());
  std::map<std::string, Tensor> x = features();
  EXPECT_NE(message([&] { cat_node_features(g, x); }).find("features are 5 wide, 'paper' 7"),
            std::string::npos);
  x = {{"paper", ops::randn({5, 7})}, {"author", ops::randn({4, 7})}};
  EXPECT_NE(message([&] { cat_node_features(g, x); }).find("no features for node type 'venue'"),
            std::string::npos);
  nn::HeteroDictLinear proj({{"paper", 7}, {"author", 5}}, 6);
  EXPECT_NE(message([&] { proj.forward(features()); }).find("no Linear for node type 'venue'"),
            std::string::npos);
  EXPECT_EQ(proj.named_parameters().size(), 4u);
  EXPECT_TRUE(proj.named_parameters().contains("lins.author.weight"));
}

// A featureless type (PyG's ogbn-mag authors) learns a row per node; the others are projected by
// their own Linear; the rows land in the graph's global order, and each parameter gets the
// gradient of its own rows only.
TEST(HeteroGraph, TypedNodeInputProjectsEachTypeAndLearnsFeaturelessRows) {
  const Graph g = built_the_pyg_way(random_edges());
  manual_seed(2);
  nn::TypedNodeInput input({{"paper", 5, 7}, {"author", 4, 0}, {"venue", 2, 3}}, 6);
  std::map<std::string, Tensor> x = features();
  x.erase("author");
  const Tensor h = input.forward(g, x);
  ASSERT_EQ(h.sizes(), (Shape{11, 6}));
  nn::Linear& paper = *input.proj->lins.at("paper");
  nn::Linear& venue = *input.proj->lins.at("venue");
  const Tensor author = input.emb.at("author")->weight;
  expect_same(ops::narrow(h, 0, 0, 5), paper.forward(x.at("paper")), "paper rows");
  expect_same(ops::narrow(h, 0, 5, 4), author, "author rows");
  expect_same(ops::narrow(h, 0, 9, 2), venue.forward(x.at("venue")), "venue rows");
  manual_seed(4);
  const Tensor c = ops::randn({11, 6});
  ops::sum(ops::mul(h, c)).backward();
  expect_same(author.grad(), ops::narrow(c, 0, 5, 4), "grad of emb.author.weight");
  expect_same(venue.bias.grad(), ops::sum(ops::narrow(c, 0, 9, 2), {0}), "grad of the venue bias");
  std::vector<std::string> names;
  for (const auto& [name, p] : input.named_parameters()) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"emb.author.weight", "proj.lins.paper.weight", "proj.lins.paper.bias",
                                      "proj.lins.venue.weight", "proj.lins.venue.bias"}));
  auto message = [](auto f) { return strata::testing::error_of(f); };
  std::map<std::string, Tensor> with_author = features();
  EXPECT_NE(message([&] { input.forward(g, with_author); }).find("'author', which has no width"),
            std::string::npos);
  x.erase("venue");
  EXPECT_NE(message([&] { input.forward(g, x); }).find("no features for node type 'venue' (width 3)"),
            std::string::npos);
}

// The GNN with a typed input: its parameters under input.*, logits for every node, and features
// in global rows refused (it reads them per type).
TEST(HeteroGraph, GnnWithATypedInputTrainsEveryTypesInput) {
  const Graph g = built_the_pyg_way(random_edges());
  manual_seed(2);
  models::GNN model({.conv = "rgcn",
                     .in_channels = 6,
                     .hidden_channels = 8,
                     .num_classes = 3,
                     .dropout = 0.0,
                     .node_types = g.node_types(),
                     .relations = g.relations(),
                     .type_in_channels = {7, 0, 3},
                     .type_num_nodes = {5, 4, 2}});
  std::map<std::string, Tensor> x = features();
  x.erase("author");
  const Tensor logits = model.forward(g, x);
  EXPECT_EQ(logits.sizes(), (Shape{11, 3}));
  ops::sum(ops::square(logits)).backward();
  for (const auto& [name, p] : model.named_parameters()) {
    if (name.rfind("input.", 0) != 0) continue;
    EXPECT_GT(ops::sum(ops::abs(p.grad())).item(), 0.0) << name;
  }
  EXPECT_NE(model.named_parameters().find("input.emb.author.weight"), nullptr);
  EXPECT_NE(strata::testing::error_of([&] {
              model.forward(g, ops::randn({11, 6}));
            }).find("per node type"),
            std::string::npos);
}
