// KnowledgeGraph: labelled (head, relation, tail) triples split into train/valid/test, as link
// prediction reads them, with load_triples for PyKEEN's label-triple folders.
//
//   KnowledgeGraph umls = io::load_triples("data/kg/umls");   // STRATA_KG_DATA=1 tools/setup.sh
//   Graph g = umls.training_graph(/*reverse_relations=*/true);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/core/tensor.h"
#include "strata/io/data_identity.h"
#include "strata/ops/graph.h"

namespace strata::io {

struct KnowledgeGraph {
  std::string name;  // the folder's name: "umls"
  // Entity and relation id -> label, ids in PyKEEN's order (see load_triples).
  std::vector<std::string> entities, relations;
  // i64 [n, 3] each, rows (head, relation, tail) in ids.
  Tensor train, valid, test;
  // What the files held beyond those rows: repeated triples (kept once) and valid/test triples
  // naming an entity or relation that no training triple names (left out), over all three files.
  int64_t duplicate_triples = 0, unseen_triples = 0;

  // The training triples as a typed graph: one node type "entity" (node id = entity id), one
  // Relation{0, name, 0} per relation in id order, edge i = train row i (head -> tail). With
  // `reverse_relations` each relation also gets its reverse "rev_<name>" (tail -> head), as
  // Graph::with_reverse_relations names and numbers them.
  Graph training_graph(bool reverse_relations = false) const;
};

// The folder's name and size, with a digest of its labels and its train, valid and test rows.
DataIdentity data_identity(const KnowledgeGraph& kg);

struct TriplesOptions {
  // PyKEEN's behaviour (TriplesFactory with the training factory's label maps): a valid or test
  // triple with a label the training triples lack is left out and counted in unseen_triples.
  // false: such a triple throws IoError naming its file and line.
  bool drop_unseen = true;
};

// A folder holding train.txt, valid.txt and test.txt (each may be <name>.txt.gz instead, or be
// gzip'd under the .txt name), one "head<TAB>relation<TAB>tail" per line, as PyKEEN's bundled
// Nations, Kinships and UMLS and most published link prediction sets are. Fields are split at
// tabs only and kept as they are (spaces belong to the label; quotes are not interpreted); a
// "\r\n" ending and blank lines are allowed. What PyKEEN's TriplesFactory does, so that ids and
// rows equal its mapped_triples:
//   - entity ids number the labels appearing as head or tail of a training triple, in sorted
//     order (byte order, which is Python's code point order for UTF-8); relation ids number the
//     training relations sorted by (label without a trailing "_inverse", has that suffix);
//   - each split's rows are its distinct triples sorted by (head, relation, tail).
// Throws IoError naming the file and line for a line without exactly three fields or with an
// empty label, when a file is missing, and when the training file holds no triple.
KnowledgeGraph load_triples(const std::string& dir, const TriplesOptions& options = {});

}  // namespace strata::io
