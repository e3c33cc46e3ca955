// Graph file loaders: graph-tool's binary .gt (and .gt.gz), edge lists and CSV, OGB's raw
// dataset folders, and Planetoid's raw .content/.cites text, each into a GraphDataset.
//
//   GraphDataset blogs = io::load_graph_tool("data/graphs/polblogs.gt.gz", {.label_property = "value"});
//   GraphDataset arxiv = io::load_ogb_raw("data/ogbn_arxiv");
//   GraphDataset cora = io::load_planetoid_raw("data/cora", "cora");
//
// Any file but a .npy may be gzip'd (recognized by its content, not its name). A bad file
// throws IoError naming the file and the byte offset (binary formats) or the line (text formats)
// at fault; sizes are checked against the bytes present before anything is allocated, and node
// counts above 2^30 are refused. An undirected source becomes a directed Graph with every edge in
// both directions: the E input edges keep ids 0..E-1 and edge e's reverse gets id e + E (edge
// properties repeat); Planetoid's citations, deduplicated and sorted, are the exception.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strata/io/graphs/graph_dataset.h"

namespace strata::io {

// ---- graph-tool's .gt (https://graph-tool.skewed.de/static/doc/gt_format.html) ----
//
// Vertex properties become node_properties and edge properties edge_properties, by name:
// bool -> boolean, int16/int32 -> i32, int64 -> i64, double and long double -> f64, each [N]
// (or [E]); a vector property whose vectors all have one length L -> [N, L] of the element's
// dtype. Strings, vectors of strings, pickled Python objects and ragged vectors have no tensor
// form and are left out (GraphToolInfo::properties still lists them); a string property can be
// the label property, though. Graph properties go to GraphToolInfo::graph_properties as text.
//
// The collection Debian's python3-graph-tool 2.45 ships (tools/setup.sh STRATA_GRAPH_DATA=1
// copies it to data/graphs/), as this loader reads it:
//   polblogs         1490 nodes, 19090 edges, directed; vertex label (string, the blog's URL),
//                    value (double 0/1: liberal/conservative, the label), pos (vector<double>
//                    [2]), source (string)
//   football         115 nodes, 613 edges, undirected; value (int32, the conference 0..11, the
//                    label), value_tsevans (int32), pos, label (string, the team)
//   polbooks         105 nodes, 441 edges, undirected; value (string "c"/"l"/"n": the label,
//                    classes in sorted order), label (string, the title), pos
//   cond-mat-2005    40421 nodes, 175693 edges, undirected; label (string), pos; edge value
//                    (double, the collaboration weight; two edges hold inf); no class label
//   pgp-strong-2009  39796 nodes, 301498 edges, directed; valid (bool), vb (double), s (int32),
//                    date, rev_date, expire_date (int64), pos, id (string), uid, subkeys
//                    (vector<string>); edges eb (double), e_id (vector<string>), e_time (ragged
//                    vector<int64>); no class label
//   email-Enron      36692 nodes, 183831 edges, undirected; pos only
// Every file also has string graph properties "description" (and mostly "readme").
struct GraphToolOptions {
  // A vertex property whose values become `labels`: integers (or integral doubles) as they are,
  // negative ones as -1 (unlabelled); strings as class ids in the sorted order of the distinct
  // values (GraphToolInfo::class_names), "" as -1. Empty: no labels.
  std::string label_property{};
  // A numeric vertex property (scalar or fixed-length vector) copied into `features` as f32
  // [N, F]. Empty: no features.
  std::string feature_property{};
  // The most vertices taken; -1: max(2^20, 8 x the edges), so that a gzip'd file of zeros
  // declaring a billion vertices is refused before they are allocated (train_gnn --max-nodes).
  int64_t max_nodes = -1;
};

struct GraphToolProperty {
  std::string key;  // "graph", "vertex" or "edge"
  std::string name;
  std::string type;  // graph-tool's name of the value type: "int32_t", "vector<double>", ...
};

struct GraphToolInfo {
  std::string comment;  // the file's header comment
  bool directed = false;
  int64_t file_edges = 0;  // edges stored in the file (an undirected graph holds twice as many)
  std::vector<GraphToolProperty> properties;  // all of them, in file order
  // Graph properties: strings as they are, numbers (and vectors of them) as text.
  std::map<std::string, std::string> graph_properties;
  std::vector<std::string> class_names;  // when the label property holds strings
};

// Loads a .gt or .gt.gz file; `info`, when given, receives what the file holds besides tensors.
GraphDataset load_graph_tool(const std::string& path, const GraphToolOptions& options = {},
                             GraphToolInfo* info = nullptr);

// ---- Edge lists and CSV ----
//
// One edge per line: "src dst" separated by blanks, or by commas (a line with a comma is split at
// commas). Lines starting with '#' or '%' and blank lines are skipped; a first line whose first
// field is not an integer is a header. Node ids are integers in [0, N).
struct EdgeListOptions {
  int64_t num_nodes = -1;  // -1: the largest id seen (edges and node file) + 1
  bool undirected = false;
  // A third column naming each edge's relation: the dataset gets a typed graph
  // (Graph::from_typed_edges), relations in order of first appearance.
  bool relation_column = false;
  // A column after those with an f32 edge weight: edge_properties["weight"].
  bool weight_column = false;
  // Typed graphs (with relation_column): node types as consecutive id ranges (name, count), the
  // counts summing to the node count; a relation's source and destination types are those of its
  // first edge, and its other edges must agree. Empty: one node type "node". An undirected
  // relation between two types gets its reverse edges in a relation "rev_<name>".
  std::vector<std::pair<std::string, int64_t>> node_types{};
  // Optional node file, one node per line: "id,label,f0,f1,..." (blanks work too; the same
  // comment and header rules). Labels are integers (-1 or empty: unlabelled) or, when any label
  // is not an integer, names mapped to class ids in sorted order. Features become f32 [N, F],
  // zero for nodes the file does not list (they get label -1).
  std::string node_file{};
  // The most nodes the largest id may imply (num_nodes unset); -1: max(2^20, 4 x (2 x the edges +
  // the node rows)), so that an id of 10^9 in a few bytes is refused before it is allocated for
  // (train_gnn --max-nodes).
  int64_t max_nodes = -1;
};

GraphDataset load_edge_list(const std::string& path, const EdgeListOptions& options = {});

// ---- OGB's raw layout (ogb/io/read_graph_raw.py) ----
//
// A dataset folder as OGB's download unpacks it (ogbn-arxiv: <dir>/raw/edge.csv.gz,
// node-feat.csv.gz, node-label.csv.gz, node_year.csv.gz, num-node-list.csv.gz,
// num-edge-list.csv.gz; <dir>/split/time/{train,valid,test}.csv.gz). Each file is read as
// <name>.npy, <name>.csv.gz or <name>.csv, whichever is there first in that order:
//   raw/edge            [E, 2] rows "src,dst" (required)
//   raw/num-node-list   the node count (required; one graph)
//   raw/num-edge-list   the edge count, checked when present
//   raw/node-feat       f32 [N, F] -> features
//   raw/node-label      one column -> labels (nan: -1); several (multi-task, ogbn-proteins) ->
//                       node_properties["node-label"] f32 [N, T]
//   raw/edge-feat       f32 [E, D] -> edge_properties["edge-feat"]
//   raw/node_<name>     (OGB's additional node files, e.g. node_year) -> node_properties
//   raw/edge_<name>     -> edge_properties
//   split/<split>/{train,valid,test}: node indices -> the three masks
struct OgbRawOptions {
  // The folder under split/; empty: the only one there (none: no masks; several: IoError).
  std::string split{};
  // OGB's add_inverse_edge (master.csv): false for ogbn-arxiv, ogbn-mag and ogbn-papers100M,
  // true for ogbn-products and ogbn-proteins.
  bool add_inverse_edges = false;
  // The most nodes num-node-list may state; -1: max(2^20, 8 x the edges) (train_gnn --max-nodes).
  int64_t max_nodes = -1;
};

GraphDataset load_ogb_raw(const std::string& dir, const OgbRawOptions& options = {});

// ---- Planetoid's raw text (LINQS Cora/CiteSeer: <name>.content, <name>.cites) ----
//
// <name>.content: "paper_id f_0 ... f_k class_label", blank- or tab-separated, paper ids any
// string; rows give the node order. Features are f32 [N, k+1]; labels are class ids in the
// sorted order of the class names. <name>.cites: "cited citing" per line. The graph is
// undirected like PyG's Planetoid: each citation in both directions, duplicates (a paper citing
// another twice, or two papers citing each other) kept once, edges sorted by (src, dst). Lines
// naming a paper missing from .content are skipped and counted.
struct PlanetoidInfo {
  std::vector<std::string> paper_ids;    // node i's id
  std::vector<std::string> class_names;  // class c's name
  int64_t skipped_citations = 0;         // .cites lines naming an unknown paper
};

GraphDataset load_planetoid_raw(const std::string& dir, const std::string& name,
                                PlanetoidInfo* info = nullptr);

}  // namespace strata::io
