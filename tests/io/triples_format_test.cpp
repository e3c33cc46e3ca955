#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "strata/core/error.h"
#include "strata/io/graphs/knowledge_graph.h"
#include "tests/support/gzip_stored.h"
#include "tests/support/loader_files.h"

using namespace strata;
using namespace strata::io;
using strata::testing::gzip_stored;
using strata::testing::io_error;
using strata::testing::TempDir;
using strata::testing::write_file;

namespace {

using Rows = std::vector<std::vector<int64_t>>;

Rows rows_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::i64);
  EXPECT_EQ(t.dim(), 2);
  EXPECT_EQ(t.size(1), 3);
  std::vector<int64_t> v = t.to_vector<int64_t>();
  Rows out;
  for (size_t i = 0; i + 2 < v.size(); i += 3) out.push_back({v[i], v[i + 1], v[i + 2]});
  return out;
}

void write_splits(const TempDir& dir, const std::string& train, const std::string& valid,
                  const std::string& test) {
  write_file(dir.file("train.txt"), train);
  write_file(dir.file("valid.txt"), valid);
  write_file(dir.file("test.txt"), test);
}

}  // namespace

TEST(KnowledgeGraph, IdsNumberTheTrainingLabelsInSortedOrderAndRowsAreSorted) {
  TempDir dir;
  write_splits(dir, "usa\tembassy\tuk\negypt\tintergovorgs3\tusa\r\n\nuk\tembassy\tegypt\n",
               "usa\tintergovorgs3\tegypt\n", "egypt\tembassy\tuk\nuk\tembassy\tusa\n");
  KnowledgeGraph kg = load_triples(dir.path);
  EXPECT_EQ(kg.name, std::filesystem::path(dir.path).filename().string());
  EXPECT_EQ(kg.entities, (std::vector<std::string>{"egypt", "uk", "usa"}));
  EXPECT_EQ(kg.relations, (std::vector<std::string>{"embassy", "intergovorgs3"}));
  // (head, relation, tail) in ids, sorted as numpy.unique sorts rows.
  EXPECT_EQ(rows_of(kg.train), (Rows{{0, 1, 2}, {1, 0, 0}, {2, 0, 1}}));
  EXPECT_EQ(rows_of(kg.valid), (Rows{{2, 1, 0}}));
  EXPECT_EQ(rows_of(kg.test), (Rows{{0, 0, 1}, {1, 0, 2}}));
  EXPECT_EQ(kg.duplicate_triples, 0);
  EXPECT_EQ(kg.unseen_triples, 0);
}

TEST(KnowledgeGraph, RelationsSortLikePykeenWithInverseAfterItsBase) {
  TempDir dir;
  // Plain sorting gives r, r_b, r_inverse; PyKEEN sorts by (name without "_inverse", is inverse).
  write_splits(dir, "a\tr_inverse\tb\na\tr_b\tb\na\tr\tb\nB\tr\ta\n", "", "");
  KnowledgeGraph kg = load_triples(dir.path);
  EXPECT_EQ(kg.relations, (std::vector<std::string>{"r", "r_inverse", "r_b"}));
  EXPECT_EQ(kg.entities, (std::vector<std::string>{"B", "a", "b"}));  // byte order: upper case first
  EXPECT_EQ(kg.valid.shape(), (Shape{0, 3}));
  EXPECT_EQ(kg.test.shape(), (Shape{0, 3}));
}

TEST(KnowledgeGraph, RepeatsAreKeptOnceAndUnseenLabelsLeftOutOrRefused) {
  TempDir dir;
  write_splits(dir, "a\tr\tb\nb\tr\tc\na\tr\tb\n",
               "a\tr\tc\nz\tr\ta\na\tr\tc\n",  // z: no training triple names it
               "c\tq\ta\nc\tr\ta\n");          // q: no training triple has it
  KnowledgeGraph kg = load_triples(dir.path);
  EXPECT_EQ(rows_of(kg.train), (Rows{{0, 0, 1}, {1, 0, 2}}));
  EXPECT_EQ(rows_of(kg.valid), (Rows{{0, 0, 2}}));
  EXPECT_EQ(rows_of(kg.test), (Rows{{2, 0, 0}}));
  EXPECT_EQ(kg.entities.size(), 3u);
  EXPECT_EQ(kg.relations, (std::vector<std::string>{"r"}));
  EXPECT_EQ(kg.duplicate_triples, 2);
  EXPECT_EQ(kg.unseen_triples, 2);

  const std::string what = io_error([&] { load_triples(dir.path, {.drop_unseen = false}); });
  EXPECT_NE(what.find(dir.file("valid.txt") + ":2: entity 'z' appears in no training triple"),
            std::string::npos)
      << what;
  write_file(dir.file("valid.txt"), "");
  const std::string rel = io_error([&] { load_triples(dir.path, {.drop_unseen = false}); });
  EXPECT_NE(rel.find(dir.file("test.txt") + ":1: relation 'q'"), std::string::npos) << rel;
}

TEST(KnowledgeGraph, BadLinesAndMissingFilesNameTheFileAndLine) {
  TempDir dir;
  auto error_for = [&](const std::string& train) {
    write_splits(dir, train, "", "");
    return io_error([&] { load_triples(dir.path); });
  };
  const std::string train = dir.file("train.txt");
  EXPECT_NE(error_for("a\tr\tb\na r b\n").find(train + ":2: expected 3 tab-separated fields"),
            std::string::npos);
  EXPECT_NE(error_for("a\tr\tb\tc\n")
                .find(train + ":1: expected 3 tab-separated fields (head, relation, tail), "
                              "found 4"),
            std::string::npos);
  EXPECT_NE(error_for("\n\na\t\tb\n").find(train + ":3: empty relation label"), std::string::npos);
  EXPECT_NE(error_for("a\tr\t\n").find(train + ":1: empty tail label"), std::string::npos);
  EXPECT_NE(error_for("\n  \n").find(train + ": no triples"), std::string::npos);

  write_splits(dir, "a\tr\tb\n", "", "");
  std::filesystem::remove(dir.file("test.txt"));
  EXPECT_NE(io_error([&] { load_triples(dir.path); }).find("no test.txt or test.txt.gz"), std::string::npos);
  EXPECT_NE(io_error([&] { load_triples(dir.file("absent")); }).find("no train.txt or train.txt.gz"),
            std::string::npos);
}

TEST(KnowledgeGraph, ReadsGzipUnderEitherName) {
  TempDir dir;
  write_file(dir.file("train.txt.gz"), gzip_stored("a\tr\tb\nb\tr\ta\n"));
  write_file(dir.file("valid.txt"), gzip_stored("a\tr\ta\n"));  // gzip'd under the plain name
  write_file(dir.file("test.txt"), "b\tr\tb\n");
  KnowledgeGraph kg = load_triples(dir.path + "/");
  EXPECT_EQ(kg.name, std::filesystem::path(dir.path).filename().string());
  EXPECT_EQ(rows_of(kg.train), (Rows{{0, 0, 1}, {1, 0, 0}}));
  EXPECT_EQ(rows_of(kg.valid), (Rows{{0, 0, 0}}));
  EXPECT_EQ(rows_of(kg.test), (Rows{{1, 0, 1}}));
}

TEST(KnowledgeGraph, TrainingGraphHoldsTheTrainingTriplesAndOptionallyTheirReverses) {
  TempDir dir;
  write_splits(dir, "a\tr\tb\nb\ts\tc\nc\tr\ta\n", "a\ts\tb\n", "");
  KnowledgeGraph kg = load_triples(dir.path);
  Graph g = kg.training_graph();
  EXPECT_EQ(g.node_types(), (std::vector<std::string>{"entity"}));
  EXPECT_EQ(g.num_nodes(), 3);
  EXPECT_EQ(g.num_edges(), 3);
  ASSERT_EQ(g.num_relations(), 2);
  EXPECT_EQ(g.relations()[0], (Relation{0, "r", 0}));
  EXPECT_EQ(g.relations()[1], (Relation{0, "s", 0}));
  // Edge i is train row i: relation r holds a -> b and c -> a, relation s holds b -> c.
  std::vector<int64_t> src = g.src().to_vector<int64_t>(), dst = g.dst().to_vector<int64_t>(),
                       ids = g.edge_ids().to_vector<int64_t>();
  const Rows train = rows_of(kg.train);
  for (size_t p = 0; p < src.size(); ++p) {
    const std::vector<int64_t>& row = train[size_t(ids[p])];
    EXPECT_EQ(src[p], row[0]);
    EXPECT_EQ(dst[p], row[2]);
    EXPECT_EQ(int64_t(p) >= g.relation_offset(1), row[1] == 1);
  }

  Graph both = kg.training_graph(/*reverse_relations=*/true);
  Graph expected = g.with_reverse_relations();
  EXPECT_EQ(both.relations(), expected.relations());
  EXPECT_EQ(both.relations()[2], (Relation{0, "rev_r", 0}));
  EXPECT_EQ(both.src().to_vector<int64_t>(), expected.src().to_vector<int64_t>());
  EXPECT_EQ(both.dst().to_vector<int64_t>(), expected.dst().to_vector<int64_t>());
  EXPECT_EQ(both.edge_ids().to_vector<int64_t>(), expected.edge_ids().to_vector<int64_t>());
}

// ---- PyKEEN's bundled datasets (tools/setup.sh with STRATA_KG_DATA=1) ----

TEST(KnowledgeGraph, PykeenDatasetsHaveTheirPublishedCounts) {
  const std::string root = std::string(STRATA_TEST_DATA_DIR) + "/../data/kg/";
  if (!std::filesystem::exists(root + "umls/train.txt"))
    GTEST_SKIP() << "no data/kg (STRATA_KG_DATA=1 tools/setup.sh)";
  struct Published {
    std::string name;
    size_t entities, relations;
    int64_t train, valid, test;
  };
  // pykeen/datasets/<name>/__init__.py's docdata statistics.
  for (const Published& p :
       {Published{"umls", 135, 46, 5216, 652, 661}, Published{"nations", 14, 55, 1592, 199, 201},
        Published{"kinships", 104, 25, 8544, 1068, 1074}}) {
    SCOPED_TRACE(p.name);
    if (!std::filesystem::exists(root + p.name)) continue;
    KnowledgeGraph kg = load_triples(root + p.name);
    EXPECT_EQ(kg.name, p.name);
    EXPECT_EQ(kg.entities.size(), p.entities);
    EXPECT_EQ(kg.relations.size(), p.relations);
    EXPECT_EQ(kg.train.size(0), p.train);
    EXPECT_EQ(kg.valid.size(0), p.valid);
    EXPECT_EQ(kg.test.size(0), p.test);
    EXPECT_EQ(kg.duplicate_triples, 0);
    EXPECT_EQ(kg.unseen_triples, 0);
    EXPECT_TRUE(std::is_sorted(kg.entities.begin(), kg.entities.end()));
    Graph g = kg.training_graph(/*reverse_relations=*/true);
    EXPECT_EQ(g.num_nodes(), int64_t(p.entities));
    EXPECT_EQ(g.num_edges(), 2 * p.train);
    EXPECT_EQ(g.num_relations(), 2 * int64_t(p.relations));
  }
}
