// train_gnn's link-prediction checks: filtered realistic ranking on a hand-computed knowledge graph
// read from PyKEEN's layout, the corrupted triples, and DistMult's all-entity scores of tails and
// of heads (through reciprocal relations or DistMult's symmetry). With `--write-kg DIR` it writes
// instead the grouped knowledge graph the training tests learn.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "examples/train_gnn/kg_model.h"
#include "examples/train_gnn/kg_ranking.h"
#include "examples/train_gnn/known_triples.h"
#include "examples/train_gnn/negative_sampling.h"
#include "strata/io/graphs/knowledge_graph.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::examples;

namespace {

using Triple = std::tuple<std::string, std::string, std::string>;

// A scorer over 5 entities that gives each query's entity e one answer, answer(e), score 1 and
// every other entity 0.
QueryScorer one_answer_scorer(int64_t (*answer)(int64_t)) {
  return [answer](const Tensor& entity, const Tensor&) {
    const std::vector<int64_t> e = entity.to_vector<int64_t>();
    std::vector<float> s(5 * e.size(), 0.0f);
    for (size_t i = 0; i < e.size(); ++i) s[5 * i + size_t(answer(e[i]))] = 1.0f;
    return ops::from_vector(s, {entity.size(0), 5});
  };
}

void write_split(const std::filesystem::path& dir, const char* name, const std::vector<Triple>& triples) {
  std::ofstream f(dir / name);
  for (const auto& [h, r, t] : triples) f << h << '\t' << r << '\t' << t << '\n';
}

// A fresh folder under the system's temporary directory.
std::filesystem::path temp_dir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / detail::concat(name, "_", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Entities 0..4 are A..E and relations 0, 1 are knows, likes (PyKEEN's sorted ids).
io::KnowledgeGraph hand_graph() {
  const std::filesystem::path dir = temp_dir("strata_kg_hand");
  write_split(dir, "train.txt",
              {{"A", "likes", "B"},
               {"A", "likes", "C"},
               {"B", "knows", "C"},
               {"C", "knows", "D"},
               {"D", "likes", "E"},
               {"E", "knows", "A"}});
  write_split(dir, "valid.txt", {{"A", "likes", "D"}});
  write_split(dir, "test.txt", {{"A", "likes", "E"}, {"C", "knows", "A"}});
  io::KnowledgeGraph kg = io::load_triples(dir.string());
  std::filesystem::remove_all(dir);
  return kg;
}

TEST(KgRanking, RealisticRankCountsTiesAtTheirMeanAndSkipsFilteredEntities) {
  const std::vector<float> s{1, 2, 2, 2, 0};
  EXPECT_EQ(realistic_rank(s.data(), 5, 1, {}), 2.0);      // 0 higher, 2 tied: (1 + 3) / 2
  EXPECT_EQ(realistic_rank(s.data(), 5, 1, {2}), 1.5);     // one tie filtered: (1 + 2) / 2
  EXPECT_EQ(realistic_rank(s.data(), 5, 0, {1, 2}), 2.0);  // entity 3 alone scores higher
  EXPECT_EQ(realistic_rank(s.data(), 5, 4, {4}), 5.0);     // the target itself is never filtered
  const std::vector<float> with_nan{NAN, 1, 3};
  EXPECT_EQ(realistic_rank(with_nan.data(), 3, 1, {}), 2.0);  // a NaN score is no candidate
}

// Every query scores the candidates the same: A 0.5, B 0.9, C 0.9, D 0.2, E 0.5. By hand:
//   (A, likes, E), tail: B, C, D are true tails of (A, likes) and filtered; A ties E: rank 1.5.
//   (A, likes, E), head: D is filtered; B, C higher, E ties A: rank 3.5.
//   (C, knows, A), tail: D is filtered; B, C higher, E ties A: rank 3.5.
//   (C, knows, A), head: E is filtered; B ties C: rank 1.5.
// MRR (2/3 + 2/7 + 2/7 + 2/3) / 4 = 10/21, mean rank 2.5, Hits@1 0, Hits@3 1/2, Hits@10 1.
TEST(KgRanking, FilteredMetricsOfAHandComputedGraphInPyKeenLayout) {
  const io::KnowledgeGraph kg = hand_graph();
  ASSERT_EQ(kg.entities, (std::vector<std::string>{"A", "B", "C", "D", "E"}));
  ASSERT_EQ(kg.relations, (std::vector<std::string>{"knows", "likes"}));
  const KnownTriples known({kg.train, kg.valid, kg.test});
  EXPECT_EQ(known.tails(0, 1), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(known.contains(4, 0, 0));
  EXPECT_FALSE(known.contains(0, 0, 4));
  const QueryScorer same = [](const Tensor& e, const Tensor& r) {
    const Tensor row = ops::from_vector(std::vector<float>{0.5f, 0.9f, 0.9f, 0.2f, 0.5f}, {1, 5});
    return ops::expand(row, {e.size(0), 5}).contiguous();
  };
  for (const int64_t batch : {1, 2}) {
    const RankingMetrics m = rank_triples(kg.test, known, batch, kCPU, same, same);
    EXPECT_EQ(m.ranks, 4);
    EXPECT_NEAR(m.mrr, 10.0 / 21.0, 1e-12);
    EXPECT_DOUBLE_EQ(m.mean_rank, 2.5);
    EXPECT_DOUBLE_EQ(m.hits1, 0.0);
    EXPECT_DOUBLE_EQ(m.hits3, 0.5);
    EXPECT_DOUBLE_EQ(m.hits10, 1.0);
  }
  // Without the other true triples filtered, (A, likes, ?) also ranks below B and C: 3.5, not 1.5.
  const RankingMetrics raw = rank_triples(kg.test, KnownTriples({}), 2, kCPU, same, same);
  EXPECT_DOUBLE_EQ(raw.mean_rank, (3.5 + 3.5 + 3.5 + 1.5) / 4);
}

TEST(KgRanking, HeadQueriesAreScoredFromTheTailEntity) {
  const io::KnowledgeGraph kg = hand_graph();
  const KnownTriples known({kg.train, kg.valid, kg.test});
  // Each scorer puts its true answer first: tails for (h, r, ?), heads for (?, r, t), which it
  // receives as (t, r).
  // (A, likes) -> E, (C, knows) -> A; (likes, E) -> A, (knows, A) -> C.
  const QueryScorer tails = one_answer_scorer([](int64_t h) -> int64_t { return h == 0 ? 4 : 0; });
  const QueryScorer heads = one_answer_scorer([](int64_t t) -> int64_t { return t == 4 ? 0 : 2; });
  const RankingMetrics m = rank_triples(kg.test, known, 8, kCPU, tails, heads);
  EXPECT_DOUBLE_EQ(m.mrr, 1.0);
  EXPECT_DOUBLE_EQ(m.hits1, 1.0);
}

TEST(NegativeSampling, CorruptionsAreReproducibleAndChangeOneEnd) {
  const std::vector<int64_t> positives{0, 1, 2, 3, 0, 4, 5, 1, 6};
  const std::vector<int64_t> a = corrupt_triples(positives, 16, 7, 42, 3),
                             b = corrupt_triples(positives, 16, 7, 42, 3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, corrupt_triples(positives, 16, 7, 42, 4));
  EXPECT_NE(a, corrupt_triples(positives, 16, 7, 43, 3));
  ASSERT_EQ(a.size(), size_t(3 * 3 * 16));
  int heads = 0;
  for (size_t c = 0; c < a.size() / 3; ++c) {
    const int64_t* p = &positives[3 * (c / 16)];
    const int64_t* q = &a[3 * c];
    EXPECT_EQ(q[1], p[1]);
    EXPECT_NE(q[0] != p[0], q[2] != p[2]) << "copy " << c << " must change exactly one end";
    EXPECT_TRUE(q[0] >= 0 && q[0] < 7 && q[2] >= 0 && q[2] < 7);
    heads += q[0] != p[0];
  }
  EXPECT_GT(heads, 8);
  EXPECT_LT(heads, 40);
}

TEST(NegativeSampling, FilteredCorruptionsAvoidTrainingTriples) {
  // Entity 0 is linked to 1..5 by relation 0: most tail corruptions of (0, 0, 1) are true.
  std::vector<int64_t> train;
  for (int64_t t = 1; t <= 5; ++t) train.insert(train.end(), {0, 0, t});
  const KnownTriples known({ops::from_vector(train, {5, 3})});
  const std::vector<int64_t> plain = corrupt_triples({0, 0, 1}, 200, 7, 9, 0);
  const std::vector<int64_t> filtered = corrupt_triples({0, 0, 1}, 200, 7, 9, 0, &known);
  int plain_true = 0, filtered_true = 0;
  for (size_t c = 0; c < 200; ++c) {
    plain_true += known.contains(plain[3 * c], plain[3 * c + 1], plain[3 * c + 2]);
    filtered_true += known.contains(filtered[3 * c], filtered[3 * c + 1], filtered[3 * c + 2]);
  }
  EXPECT_GT(plain_true, 40);
  EXPECT_EQ(filtered_true, 0);
}

TEST(NegativeSampling, EpochOrderIsAPermutationThatChangesPerEpoch) {
  const std::vector<int64_t> a = epoch_order(100, 5, 0), b = epoch_order(100, 5, 1);
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 100u);
  EXPECT_EQ(*std::max_element(a.begin(), a.end()), 99);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, epoch_order(100, 5, 0));
}

TEST(KgLinkPredictor, AllEntityScoresEqualTripleScores) {
  manual_seed(3);
  const io::KnowledgeGraph kg = hand_graph();
  for (const char* encoder : {"none", "rgcn"}) {
    const Graph g = kg.training_graph(true);
    KgLinkPredictor model({.num_entities = 5,
                           .num_relations = 2,
                           .dim = 6,
                           .encoder = encoder,
                           .encoder_relations = g.num_relations(),
                           .num_layers = 2,
                           .num_bases = 2});
    NoGradGuard ng;
    const Tensor z = model.encode(g);
    ASSERT_EQ(z.shape(), (Shape{5, 6}));
    const Tensor h = ops::from_vector(std::vector<int64_t>{0, 3}, {2}),
                 r = ops::from_vector(std::vector<int64_t>{1, 0}, {2});
    const std::vector<double> all = model.score_tails(z, h, r).to_double_vector();
    for (int64_t t = 0; t < 5; ++t) {
      const Tensor ts = ops::from_vector(std::vector<int64_t>{t, t}, {2});
      const std::vector<double> one = model.score(z, h, r, ts).to_double_vector();
      EXPECT_NEAR(one[0], all[size_t(t)], 1e-5) << encoder;
      EXPECT_NEAR(one[1], all[size_t(5 + t)], 1e-5) << encoder;
    }
  }
}

// Head scores without reciprocal relations are the triple scores (e, r, t); with them, the tail
// scores of (t, r^-1, ?) from rel_emb's row R + r, checked against sums on the host.
TEST(KgLinkPredictor, HeadScoresUseTheInverseRelationWhenReciprocal) {
  manual_seed(5);
  const int64_t N = 5, R = 2, D = 4;
  const Tensor t = ops::from_vector(std::vector<int64_t>{2, 4}, {2}),
               r = ops::from_vector(std::vector<int64_t>{1, 0}, {2});
  for (const bool reciprocal : {false, true}) {
    KgLinkPredictor model(
        {.num_entities = N, .num_relations = R, .reciprocal = reciprocal, .dim = D, .encoder = "none"});
    ASSERT_EQ(model.rel_emb.shape(), (Shape{(reciprocal ? 2 : 1) * R, D}));
    NoGradGuard ng;
    const Tensor z = model.encode(Graph());
    const std::vector<double> heads = model.score_heads(z, t, r).to_double_vector();
    const std::vector<double> zv = z.to_double_vector(), rel = model.rel_emb.to_double_vector();
    const std::vector<int64_t> tv = t.to_vector<int64_t>(), rv = r.to_vector<int64_t>();
    for (size_t i = 0; i < 2; ++i)
      for (int64_t e = 0; e < N; ++e) {
        const int64_t row = reciprocal ? R + rv[i] : rv[i];
        double expected = 0;
        for (int64_t d = 0; d < D; ++d)
          expected += zv[size_t(e * D + d)] * rel[size_t(row * D + d)] * zv[size_t(tv[i] * D + d)];
        EXPECT_NEAR(heads[i * size_t(N) + size_t(e)], expected, 1e-5) << "reciprocal " << reciprocal;
      }
  }
}

// DistMult scores (h, r, t) and (t, r, h) the same, so without reciprocal relations a head query
// (?, r, t) ranks the entities r leads to from t. Embeddings set by hand on the hand graph (z =
// I + 0.5; each diagonal one-hot on one entity, which then scores 0.75 against 0.25 for the others)
// put every test triple's tail first through r and its head first through r^-1: likes on E, knows
// on A, likes^-1 on A, knows^-1 on C. With the inverse rows the MRR is 1. Without them,
// (?, likes, E) ranks E (scored 2.25 with itself) above A, which ties B and C (0.75; D is
// filtered): rank 3; (?, knows, A) likewise ranks C third.
TEST(KgLinkPredictor, ReciprocalRelationsRankHeadsThatTheSymmetricScoreCannot) {
  const io::KnowledgeGraph kg = hand_graph();
  const KnownTriples known({kg.train, kg.valid, kg.test});
  auto one_hot = [](std::vector<float>* rows, int64_t entity) {
    rows->resize(rows->size() + 5, 0.0f);
    (*rows)[rows->size() - 5 + size_t(entity)] = 1.0f;
  };
  std::vector<float> z(25, 0.5f), rel;
  for (size_t e = 0; e < 5; ++e) z[6 * e] += 1.0f;
  for (const int64_t e : {0, 4, 2, 0}) one_hot(&rel, e);  // knows, likes, knows^-1, likes^-1
  for (const bool reciprocal : {true, false}) {
    KgLinkPredictor model(
        {.num_entities = 5, .num_relations = 2, .reciprocal = reciprocal, .dim = 5, .encoder = "none"});
    NoGradGuard ng;
    model.node_emb.copy_(ops::from_vector(z, {5, 5}));
    model.rel_emb.copy_(ops::from_vector(
        std::vector<float>(rel.begin(), rel.begin() + (reciprocal ? 20 : 10)), {reciprocal ? 4 : 2, 5}));
    const Tensor emb = model.encode(Graph());
    const RankingMetrics m = rank_triples(
        kg.test, known, 4, kCPU,
        [&](const Tensor& h, const Tensor& r) { return model.score_tails(emb, h, r); },
        [&](const Tensor& t, const Tensor& r) { return model.score_heads(emb, t, r); });
    EXPECT_NEAR(m.mrr, reciprocal ? 1.0 : (1 + 1 + 1.0 / 3 + 1.0 / 3) / 4, 1e-6)
        << "reciprocal " << reciprocal;
  }
}

// Groups of entities: "same_group" links every ordered pair of a group's members, "member_of" each
// member to its group's hub. Every 10th triple (in a fixed stride) is a test triple and the next a
// valid one; every entity keeps training triples. A model that learns the groups ranks the test
// triples' answers near the top; random scores give MRR about H_N / N.
void write_grouped_kg(const std::filesystem::path& dir, int groups, int members) {
  std::filesystem::create_directories(dir);
  auto member = [](int g, int i) { return detail::concat("e", g, "_", i); };
  std::vector<Triple> all, train, valid, test;
  for (int g = 0; g < groups; ++g)
    for (int i = 0; i < members; ++i) {
      all.emplace_back(member(g, i), "member_of", detail::concat("hub", g));
      for (int j = 0; j < members; ++j)
        if (j != i) all.emplace_back(member(g, i), "same_group", member(g, j));
    }
  for (size_t i = 0; i < all.size(); ++i) {
    const bool membership = std::get<1>(all[i]) == "member_of";
    (membership || i % 10 > 1 ? train : i % 10 == 0 ? test : valid).push_back(all[i]);
  }
  write_split(dir, "train.txt", train);
  write_split(dir, "valid.txt", valid);
  write_split(dir, "test.txt", test);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-kg") {
    write_grouped_kg(argv[2], 6, 8);
    std::printf("grouped knowledge graph written to %s\n", argv[2]);
    return 0;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
