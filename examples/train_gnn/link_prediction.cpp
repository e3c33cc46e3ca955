// train_gnn --task link: the training loop, its evaluations and its report.
#include "examples/train_gnn/link_prediction.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <vector>

#include "examples/common/checkpointing.h"
#include "examples/common/lr_schedule.h"
#include "examples/common/trainer_loop.h"
#include "examples/common/trainer_setup.h"
#include "examples/train_gnn/kg_model.h"
#include "examples/train_gnn/kg_ranking.h"
#include "examples/train_gnn/negative_sampling.h"
#include "strata/io/checkpoint/checkpoint.h"
#include "strata/io/graphs/knowledge_graph.h"
#include "strata/strata.h"

namespace strata::examples {

namespace {

constexpr int64_t kRankBatch = 256;  // queries scored against every entity at a time

struct SplitScores {
  RankingMetrics valid, test;
};

// Filtered ranks of valid and test with the model in eval mode (no dropout), z encoded once; head
// queries go through score_heads (the reciprocal relations when the model has them).
SplitScores evaluate(KgLinkPredictor& model, const Graph& g, const io::KnowledgeGraph& kg,
                     const KnownTriples& known, Device device) {
  NoGradGuard ng;
  model.eval();
  const Tensor z = model.encode(g);
  auto tails = [&](const Tensor& h, const Tensor& r) { return model.score_tails(z, h, r); };
  auto heads = [&](const Tensor& t, const Tensor& r) { return model.score_heads(z, t, r); };
  SplitScores s;
  if (kg.valid.size(0) > 0) s.valid = rank_triples(kg.valid, known, kRankBatch, device, tails, heads);
  if (kg.test.size(0) > 0) s.test = rank_triples(kg.test, known, kRankBatch, device, tails, heads);
  model.train();
  return s;
}

// Negative sampling's loss of a batch, scores [P * (1 + k)] with the P positives first: the mean
// over positives of softplus(-s) plus the mean over corrupted triples of softplus(s), which is
// binary cross-entropy with logits with the two kinds weighted equally (RotatE's negative-sampling
// loss, Sun et al., ICLR 2019, eq. 5, with uniform weights). Each softplus is a two-class
// cross-entropy on logits [0, s]: the stable fused op, its gradient exact.
Tensor corruption_loss(const Tensor& scores, int64_t positives) {
  const int64_t M = scores.size(0);
  const Tensor logits = ops::stack({ops::zeros_like(scores), scores}, 1);  // [M, 2]
  std::vector<int64_t> y(size_t(M), 0);
  std::fill(y.begin(), y.begin() + positives, 1);
  const Tensor labels = ops::from_vector(y, {M}).to(scores.device());
  const Tensor each = ops::cross_entropy(logits, labels, -100, ops::Reduction::None);
  return ops::add(ops::mean(ops::narrow(each, 0, 0, positives)),
                  ops::mean(ops::narrow(each, 0, positives, M - positives)));
}

// 1-N scoring's loss of a batch of training triples: the tail of each (h, r, t) is the class of the
// query (h, r, ?) among all N entities, its head the class of (?, r, t) (scored as (t, r^-1, ?)
// with reciprocal relations); softmax cross-entropy, the mean over the 2B queries (Dettmers et al.,
// Convolutional 2D Knowledge Graph Embeddings, AAAI 2018, with a softmax over the candidates as in
// Lacroix et al., ICML 2018).
Tensor all_entity_loss(const KgLinkPredictor& model, const Tensor& z, const Tensor& h, const Tensor& r,
                       const Tensor& t) {
  const Tensor logits = ops::cat({model.score_tails(z, h, r), model.score_heads(z, t, r)}, 0);  // [2B, N]
  return ops::cross_entropy(logits, ops::cat({t, h}, 0));
}

// The expected MRR of random scores against N candidates: H_N / N.
double random_mrr(int64_t n) {
  double h = 0;
  for (int64_t i = 1; i <= n; ++i) h += 1.0 / double(i);
  return h / double(n);
}

}  // namespace

void print_scores(const char* prefix, const SplitScores& s) {
  std::printf("%svalid: %s\n%stest:  %s\n", prefix, s.valid.str().c_str(), prefix, s.test.str().c_str());
}

// Rank 0's start-up lines: the run, the data and what chance would score, the ranks, and the
// encoder graph with each layer's materialization plan (`graph`: null without an encoder).
void print_link_run(const GnnTrainOptions& o, const KgLinkPredictor& model, const io::KnowledgeGraph& kg,
                    const Graph* graph, const DataParallel& ranks, int64_t batches_per_epoch) {
  const auto N = long(kg.entities.size());
  std::printf(
      "%s\n  %ld parameters; data: %s: %ld entities, %ld relations, %ld train, %ld valid, %ld test triples "
      "(%ld repeated, %ld naming entities or relations unseen in training: left out)\n"
      "  %ld batches/epoch; filtered ranking against all %ld entities, ties at their mean rank (PyKEEN's "
      "realistic rank); random scores would give MRR about %.3f\n",
      o.describe().c_str(), long(model.num_parameters()), kg.name.c_str(), N, long(kg.relations.size()),
      long(kg.train.size(0)), long(kg.valid.size(0)), long(kg.test.size(0)), long(kg.duplicate_triples),
      long(kg.unseen_triples), long(batches_per_epoch), N, random_mrr(int64_t(N)));
  if (ranks.group()) std::printf("  %s\n", ranks.describe().c_str());
  if (graph == nullptr) return;
  std::printf("  encoder graph: %ld edges, %ld relations (each training relation and its reverse)\n",
              long(graph->num_edges()), long(graph->num_relations()));
  const std::vector<nn::MaterializationPlan> plans = model.plans(*graph);
  for (size_t l = 0; l < plans.size(); ++l) std::printf("  convs.%zu: %s\n", l, plans[l].str().c_str());
}

int train_link_prediction(const GnnTrainOptions& o, TrainerRun& trainer_run) {
  const TrainGnnConfig& c = o.config;
  const RunConfig& run = c.run();
  const TrainerStart start = start_trainer(run, c.data_parallel(), trainer_run);
  const Device device = start.dev.device;
  const bool lead = start.lead;  // logs, evaluates, writes checkpoints
  const std::string ckpt_dir = checkpoint_dir(run);

  // ---- data ----
  const io::KnowledgeGraph kg = io::load_triples(c.kg());
  const RunRecord record{o.describe(), io::data_identity(kg), run.allow_other_data()};
  const int64_t N = int64_t(kg.entities.size()), R = int64_t(kg.relations.size());
  const bool encoded = c.encoder() == "rgcn";
  const Graph graph = encoded ? kg.training_graph(/*reverse_relations=*/true).to(device) : Graph();
  const bool one_to_n = c.link_loss() == "1-n";
  const KnownTriples known({kg.train, kg.valid, kg.test});
  const std::optional<KnownTriples> train_known = !one_to_n && c.filter_negatives()
                                                      ? std::optional<KnownTriples>(KnownTriples({kg.train}))
                                                      : std::nullopt;
  const std::vector<int64_t> train_rows = triple_rows(kg.train);
  const int64_t n_train = kg.train.size(0), B = std::min<int64_t>(run.batch_size(), n_train);
  const int64_t batches_per_epoch = (n_train + B - 1) / B, k = c.negatives();

  // ---- model and optimizer ----
  manual_seed(run.seed());
  auto model_ptr = std::make_shared<KgLinkPredictor>(
      KgLinkPredictorConfig{.num_entities = N,
                            .num_relations = R,
                            .reciprocal = one_to_n,
                            .dim = c.hidden(),
                            .encoder = c.encoder(),
                            .encoder_relations = encoded ? graph.num_relations() : 0,
                            .num_layers = c.layers(),
                            .num_bases = c.num_bases(),
                            .dropout = c.dropout(),
                            .query_dropout = c.query_dropout(),
                            .materialization = o.materialization});
  KgLinkPredictor& model = *model_ptr;
  const PlacedModel placed = place_with_adamw(c, start, trainer_run, model_ptr, 1e-8);
  const DataParallel& ranks = *placed.ranks;
  const TrainerAdamW& opt = placed.opt;
  LrScheduleOptions schedule = lr_schedule_options(c.schedule(), run);
  schedule.timed_steps = 4;
  LrSchedule sched(schedule);
  // Batches of the global order taken so far (all ranks'): rank r of W takes batches r, r + W, ...
  int64_t consumed = 0;
  int64_t first_step = 0;
  if (run.resume()) {
    const io::CheckpointState st = resume_ranks(ckpt_dir, record, model, ranks);
    opt.load(st.optimizer);
    first_step = st.step;
    consumed =
        st.data.sample > 0 ? st.data.sample : st.step;  // a checkpoint before the count: a batch a step
  }
  auto save = [&](int64_t at_step) {
    // opt.checkpoint() is collective under ZeRO: every rank calls save().
    const io::CheckpointState st = opt.checkpoint(
        record, at_step, io::DataCursor{consumed / batches_per_epoch, 0, consumed}, model, ranks.world());
    if (lead) io::save_checkpoint(ckpt_dir, st);
  };

  if (lead) print_link_run(o, model, kg, encoded ? &graph : nullptr, ranks, batches_per_epoch);

  TrainLoop loop(loop_parts(c, start, placed, sched, o.cache, trainer_run, first_step));
  std::vector<int64_t> order;
  int64_t order_epoch = -1, best_step = -1;
  SplitScores best;
  while (loop.keep_going()) {
    int64_t epoch = 0;
    loop.run_step([&] {
      // This rank's batch of the next round of W: global batch `consumed + rank`.
      const int64_t g = consumed + ranks.rank();
      consumed += ranks.world();
      epoch = g / batches_per_epoch;
      const int64_t first = (g % batches_per_epoch) * B;
      if (epoch != order_epoch) order = epoch_order(n_train, run.seed(), epoch), order_epoch = epoch;
      const int64_t P = std::min(B, n_train - first);
      std::vector<int64_t> rows(size_t(3 * P));
      for (int64_t i = 0; i < P; ++i)
        std::copy_n(&train_rows[size_t(3 * order[size_t(first + i)])], 3, &rows[size_t(3 * i)]);
      if (!one_to_n) {
        const std::vector<int64_t> corrupted =
            corrupt_triples(rows, k, N, run.seed(), g, train_known ? &*train_known : nullptr);
        rows.insert(rows.end(), corrupted.begin(), corrupted.end());
      }
      const int64_t M = int64_t(rows.size() / 3);
      const Tensor triples = ops::from_vector(rows, {M, 3}).to(device);
      const Tensor h = ops::select(triples, 1, 0).contiguous(), r = ops::select(triples, 1, 1).contiguous(),
                   t = ops::select(triples, 1, 2).contiguous();
      const Tensor z = model.encode(graph);
      return one_to_n ? all_entity_loss(model, z, h, r, t) : corruption_loss(model.score(z, h, r, t), P);
    });
    if (loop.log_due())
      loop.print_step_line({field("epoch %ld", long(epoch)), field("loss %.4f", loop.last_loss()),
                            field("%6.1f ms/step", 1e3 * loop.step_seconds())});
    if (lead && loop.eval_due() && loop.step() < run.max_steps()) {
      const SplitScores sc = evaluate(model, graph, kg, known, device);
      std::printf("eval at step %ld (epoch %ld, %.1f s):\n", long(loop.step()), long(epoch), loop.elapsed());
      print_scores("  ", sc);
      if (best_step < 0 || sc.valid.mrr > best.valid.mrr) best = sc, best_step = loop.step();
    }
    std::fflush(stdout);
    if (loop.checkpoint_due()) save(loop.step());
  }
  loop.finish();
  const double train_seconds = loop.elapsed();
  const int64_t step = loop.step();
  if (loop.steps_run() > 0) save(step);
  if (!lead) return 0;
  const SplitScores final_scores = evaluate(model, graph, kg, known, device);
  if (best_step < 0 || final_scores.valid.mrr > best.valid.mrr) best = final_scores, best_step = step;
  std::printf("final: step %ld, train loss %.4f, %.1f s\n", long(step), loop.last_loss(), train_seconds);
  print_scores("final ", final_scores);
  std::printf("best valid MRR %.3f at step %ld; test there: %s\n", best.valid.mrr, long(best_step),
              best.test.str().c_str());
  std::printf("checkpoint: %s\n", ckpt_dir.c_str());
  loop.print_timing(nullptr, 0);
  return 0;
}

}  // namespace strata::examples
