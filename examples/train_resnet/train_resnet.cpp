// train_resnet: trains a ResNet image classifier. With no arguments it trains ResNet-18 with the
// CIFAR stem on the built-in synthetic image set (10 procedural classes, 32x32) for 5 minutes
// with SGD + momentum, printing step, loss, training accuracy, learning rate, images/s, the
// loader's wait and the three memory figures (activation peak, step peak, process peak RSS);
// evaluating held-out accuracy, checkpointing, and reporting when --target-accuracy was reached.
// Data come from io::ImageLoader: worker threads decode, augment and normalize batches ahead of
// the training step (the same batches for any --workers). See --help.
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>

#include "examples/common/checkpointing.h"
#include "examples/common/lr_schedule.h"
#include "examples/common/model_state.h"
#include "examples/common/trainer_loop.h"
#include "examples/common/trainer_setup.h"
#include "examples/train_resnet/train_options.h"
#include "strata/io/checkpoint/checkpoint.h"
#include "strata/io/images/cifar10.h"
#include "strata/io/images/image_folder.h"
#include "strata/io/images/image_loader.h"
#include "strata/io/images/synthetic_images.h"
#include "strata/models/resnet.h"
#include "strata/strata.h"

using namespace strata;
using strata::examples::ResNetTrainOptions;

namespace {

// The training and held-out sets and how each is transformed.
struct ImageData {
  std::shared_ptr<const io::ImageDataset> train, val;
  io::ImageTransformOptions train_transforms, eval_transforms;
};

ImageData make_data(const examples::TrainResNetConfig& c) {
  ImageData d;
  const int64_t size = c.image_size();
  if (!c.image_folder().empty()) {
    // ImageNet recipe: RandomResizedCrop + flip for training, Resize(size * 8/7) + CenterCrop.
    io::ImageFolderOptions folder;
    if (c.has_max_image_pixels()) folder.max_image_pixels = c.max_image_pixels();
    d.train = std::make_shared<io::ImageFolderDataset>(c.image_folder(), folder);
    if (!c.val_folder().empty()) d.val = std::make_shared<io::ImageFolderDataset>(c.val_folder(), folder);
    d.eval_transforms = io::ImageTransformOptions::imagenet_eval(size, size * 8 / 7);
    d.train_transforms = c.augment() ? io::ImageTransformOptions::imagenet_train(size) : d.eval_transforms;
    return d;
  }
  if (!c.cifar10().empty()) {
    d.train = std::make_shared<io::Cifar10Dataset>(io::Cifar10Dataset::files_in(c.cifar10(), true));
    d.val = std::make_shared<io::Cifar10Dataset>(io::Cifar10Dataset::files_in(c.cifar10(), false));
    d.eval_transforms = io::ImageTransformOptions::cifar_eval();
  } else {
    const io::SyntheticImageOptions so{.num_classes = c.synthetic_classes(),
                                       .size = c.synthetic_train(),
                                       .height = size,
                                       .width = size,
                                       .seed = c.run().seed(),
                                       .noise = c.synthetic_noise()};
    d.train = std::make_shared<io::SyntheticImageDataset>(so);
    // Held out: the samples after the training set's (same classes, other images).
    io::SyntheticImageOptions vo = so;
    vo.size = c.synthetic_val(), vo.offset = so.size;
    if (vo.size > 0) d.val = std::make_shared<io::SyntheticImageDataset>(vo);
    d.eval_transforms.mean = {0.5f, 0.5f, 0.5f};
    d.eval_transforms.std = {0.25f, 0.25f, 0.25f};
  }
  d.train_transforms = d.eval_transforms;
  if (c.augment()) {  // CIFAR recipe: pad by size/8, random crop, flip
    d.train_transforms.random_crop = size;
    d.train_transforms.padding = size / 8;
    d.train_transforms.horizontal_flip = true;
  }
  return d;
}

constexpr int64_t kAccuracyWindow = 20;  // batches

struct Accuracy {
  int64_t correct = 0, total = 0;
  double value() const { return total ? double(correct) / double(total) : NAN; }
};

// Correct predictions of logits [B, K] against labels [B].
Accuracy count_correct(const Tensor& logits, const Tensor& labels) {
  const std::vector<int64_t> pred = ops::argmax(logits, 1).to_vector<int64_t>(), y = labels.to_vector<int64_t>();
  Accuracy a{0, int64_t(y.size())};
  for (size_t i = 0; i < y.size(); ++i) a.correct += pred[i] == y[i];
  return a;
}

// Accuracy and mean loss in eval mode (running BN statistics, no augmentation) over up to
// `batches` batches of `data`, drawn in a fixed shuffled order (a folder lists its images
// class by class: a prefix would hold one class).
std::pair<Accuracy, double> evaluate(models::ResNet& model,
                                     const std::shared_ptr<const io::ImageDataset>& data,
                                     const io::ImageTransformOptions& transforms,
                                     const examples::TrainResNetConfig& c, int64_t batches, Device device) {
  NoGradGuard ng;
  model.eval();
  io::ImageLoader loader(data, {.batch = c.run().batch_size(),
                                .transforms = transforms,
                                .shuffle = true,
                                .drop_last = false,
                                .seed = c.run().seed(),
                                .num_workers = int(c.workers()),
                                .prefetch = c.prefetch()});
  Accuracy acc;
  double loss = 0;
  const int64_t n = std::min(batches, loader.batches_per_epoch());
  for (int64_t i = 0; i < n; ++i) {
    io::ImageBatch b = loader.next();
    b.images = b.images.to(device);
    b.labels = b.labels.to(device);
    Tensor logits = model(b.images);
    const Accuracy a = count_correct(logits, b.labels);
    acc.correct += a.correct, acc.total += a.total;
    loss += ops::cross_entropy(logits, b.labels).item() * double(a.total);
  }
  model.train();
  return {acc, loss / double(std::max<int64_t>(acc.total, 1))};
}

// SGD with momentum (optionally Nesterov) or AdamW; no weight decay on BN parameters and biases
// (1-d tensors), as the usual ResNet recipes. Under --zero-stage its state (and with stage 2 the
// gradients) are sharded across the ranks.
std::unique_ptr<optim::Optimizer> make_optimizer(const examples::TrainResNetConfig& c,
                                                 const std::vector<Tensor>& parameters,
                                                 const examples::DataParallel& ranks) {
  std::vector<Tensor> decay, no_decay;
  for (const Tensor& p : parameters) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  const double lr = c.schedule().lr(), wd = c.optim().weight_decay();
  const dist::DistributedDataParallel* sharded = ranks.zero_stage() == 2 ? ranks.ddp() : nullptr;
  auto build = [&]<class Plain>(const auto& options, auto make_zero) -> std::unique_ptr<optim::Optimizer> {
    using Options = std::decay_t<decltype(options)>;
    std::vector<optim::ParamGroup> groups{optim::ParamGroup(decay, Options(options).weight_decay(wd)),
                                          optim::ParamGroup(no_decay, Options(options).weight_decay(0.0))};
    if (ranks.zero_stage() > 0)
      return make_zero(std::move(groups), options, ranks.shared_group(), sharded,
                       /*sharded_parameters=*/nullptr);
    return std::make_unique<Plain>(std::move(groups), options);
  };
  if (c.optimizer() == "sgd")
    return build.template operator()<optim::SGD>(
        optim::SGDOptions(lr).momentum(c.momentum()).nesterov(c.nesterov()),
        dist::ZeroRedundancyOptimizer::sgd);
  return build.template operator()<optim::AdamW>(optim::AdamWOptions(lr).betas(0.9, 0.999).eps(1e-8),
                                                 dist::ZeroRedundancyOptimizer::adamw);
}

// Training accuracy over the last 20 batches (or an epoch, when shorter): what --target-accuracy
// checks, once the window is full.
class AccuracyWindow {
 public:
  explicit AccuracyWindow(int64_t batches_per_epoch)
      : size_(size_t(std::clamp<int64_t>(batches_per_epoch, 1, kAccuracyWindow))) {}
  void add(const Accuracy& a) {
    recent_.push_back(a);
    sum_.correct += a.correct, sum_.total += a.total;
    if (recent_.size() > size_) {
      sum_.correct -= recent_.front().correct, sum_.total -= recent_.front().total;
      recent_.pop_front();
    }
  }
  double value() const { return sum_.value(); }
  bool full() const { return recent_.size() == size_; }
  size_t batches() const { return recent_.size(); }

 private:
  size_t size_;
  std::deque<Accuracy> recent_;
  Accuracy sum_;
};

// The final line: the last window's training accuracy, eval-mode accuracy on training images (no
// augmentation) and on the held-out set; and whether --target-accuracy was reached.
void print_final(models::ResNet& model, const ImageData& data, const examples::TrainResNetConfig& c,
                 const AccuracyWindow& window, const examples::TrainLoop& loop, Device device, bool reached) {
  const examples::RunConfig& run = c.run();
  const double train_seconds = loop.elapsed();
  const auto [train_eval, train_eval_loss] =
      evaluate(model, data.train, data.eval_transforms, c, run.eval_batches(), device);
  std::printf(
      "final: step %ld, train loss %.4f, training accuracy %.2f%% (last %zu batches, train mode), "
      "%.2f%% (eval mode, %ld training images)",
      long(loop.step()), loop.last_loss(), 100 * window.value(), window.batches(), 100 * train_eval.value(),
      long(train_eval.total));
  if (data.val) {
    const auto [val_acc, val_loss] =
        evaluate(model, data.val, data.eval_transforms, c, run.eval_batches(), device);
    std::printf(", held-out accuracy %.2f%% (%ld images, loss %.4f)", 100 * val_acc.value(),
                long(val_acc.total), val_loss);
  }
  std::printf(", %.0f s\n", train_seconds);
  if (c.target_accuracy() > 0 && !reached)
    std::printf("target %.1f%% training accuracy not reached\n", 100 * c.target_accuracy());
}

// What the run prints before the first step.
void print_run(const ResNetTrainOptions& o, const models::ResNet& model, const ImageData& data,
               const io::ImageLoader& train, const examples::DataParallel& ranks) {
  const examples::TrainResNetConfig& c = o.config;
  std::printf(
      "%s\n  %ld parameters; data: %s\n  train transforms: %s\n  %ld batches/epoch, %ld loader "
      "thread(s), %ld batches prefetched\n",
      o.describe().c_str(), long(model.num_parameters()), data.train->describe().c_str(),
      data.train_transforms.str().c_str(), long(train.batches_per_epoch()), long(c.workers()),
      long(c.prefetch()));
  if (data.val) std::printf("  held out: %s\n", data.val->describe().c_str());
  if (c.target_accuracy() > 0)
    std::printf("  stopping at %.1f%% training accuracy\n", 100 * c.target_accuracy());
  if (ranks.group())
    std::printf("  %s; BatchNorm's statistics are %s\n", ranks.describe().c_str(),
                c.sync_bn() ? "over every rank's batch (--sync-bn)" : "each rank's own");
}

int train_resnet(ResNetTrainOptions& o, examples::TrainerRun& trainer_run) {
  // The settings, grouped as in the config file.
  const examples::TrainResNetConfig& c = o.config;
  const examples::RunConfig& run = c.run();
  examples::refuse_zero_stage_3(c.data_parallel(), "train_resnet");
  const examples::TrainerStart start = examples::start_trainer(run, c.data_parallel(), trainer_run);
  const examples::TrainerDevice& dev = start.dev;
  const Device device = dev.device;
  dist::ProcessGroup* pg = start.group;
  const bool lead = start.lead;  // logs, evaluates, writes checkpoints
  const std::string ckpt_dir = examples::checkpoint_dir(run);
  // ---- data ----
  const ImageData data = make_data(c);
  io::ImageLoader train(data.train, {.batch = run.batch_size(),
                                     .transforms = data.train_transforms,
                                     .shuffle = true,
                                     .drop_last = true,
                                     .seed = run.seed(),
                                     .num_workers = int(c.workers()),
                                     .prefetch = c.prefetch(),
                                     .rank = pg ? pg->rank() : 0,
                                     .world_size = pg ? pg->size() : 1});
  STRATA_CHECK(!data.val || data.val->num_classes() == data.train->num_classes(), ValueError,
               "the held-out set has ", data.val->num_classes(), " classes, the training set ",
               data.train->num_classes());
  // ---- model and optimizer ----
  manual_seed(run.seed());
  o.model.num_classes = data.train->num_classes();  // describe() prints it
  o.model.validate();
  auto model_ptr = std::make_shared<models::ResNet>(o.model);
  models::ResNet& model = *model_ptr;
  // Paged weights go straight from the CPU to where they live: the device never holds them all.
  examples::ModelStatePlacer model_state(c, dev.device, model, pg != nullptr,
                                         c.optimizer() == "sgd" ? (c.momentum() != 0 ? 1.0 : 0.0) : 2.0);
  model.to(device);  // initialized on the CPU: the same weights on every device
  // Under mpirun: rank 0's weights everywhere, gradients averaged in buckets during backward.
  examples::DataParallel ranks(trainer_run.group, model_ptr, c.data_parallel());
  if (c.sync_bn() && ranks.group()) nn::convert_sync_batchnorm(model, ranks.shared_group());
  const std::unique_ptr<optim::Optimizer> opt = make_optimizer(c, model.parameters(), ranks);
  model_state.place(*opt);
  // Warmup then cosine decay; a time-bounded run estimates the length from the step time of its
  // first steps (the schedule is rebuilt once), as train_gpt does.
  examples::LrScheduleOptions schedule = examples::lr_schedule_options(c.schedule(), run);
  schedule.warmup_cap = std::max<int64_t>(schedule.warmup_cap, 1), schedule.timed_steps = 4;
  examples::LrSchedule sched(schedule);

  const examples::RunRecord record{o.describe(), data.train->identity(), run.allow_other_data()};
  int64_t first_step = 0;
  if (run.resume()) {
    io::CheckpointState st = examples::resume_ranks(ckpt_dir, record, model, ranks);
    examples::load_optimizer_state(*opt, st.optimizer);
    first_step = st.step;
    train.set_cursor(st.data);
    if (lead) std::printf("  at epoch %ld, batch %ld\n", long(st.data.epoch), long(st.data.sample));
  }
  auto save = [&](int64_t at_step) {  // every rank: under ZeRO each gives its shard of the state
    const io::CheckpointState st =
        examples::checkpoint_ranks(record, at_step, train.cursor(), model, *opt, ranks.world());
    if (lead) io::save_checkpoint(ckpt_dir, st);
  };
  if (lead) print_run(o, model, data, train, ranks);

  examples::TrainLoopParts parts =
      examples::loop_parts(c, dev, *opt, sched, model.parameters(), o.cache, trainer_run, first_step);
  parts.ranks = &ranks;
  parts.model_state = &model_state;
  examples::TrainLoop loop(std::move(parts));
  const int64_t images_per_step = run.batch_size() * run.grad_accum() * ranks.world();
  AccuracyWindow window(train.batches_per_epoch() / ranks.world());  // this rank's batches
  Accuracy last_val;
  bool reached = false;
  while (loop.keep_going()) {
    Accuracy acc;  // this step's, on this rank
    int64_t epoch = 0;
    loop.run_step([&] {
      io::ImageBatch batch = train.next();
      epoch = batch.epoch;
      const Tensor labels = batch.labels.to(device), logits = model(batch.images.to(device));
      const Accuracy a = count_correct(logits, labels);
      window.add(a);
      acc.correct += a.correct, acc.total += a.total;
      return ops::cross_entropy(logits, labels);
    });
    loop.report("train/images_per_s", double(images_per_step) / loop.step_seconds());
    loop.report("train/accuracy", acc.value());
    const bool eval_now = data.val && lead && loop.eval_due();
    if (eval_now) {
      last_val = evaluate(model, data.val, data.eval_transforms, c, run.eval_batches(), device).first;
      loop.report("val/accuracy", last_val.value());
    }
    if (loop.log_due(eval_now)) {
      const std::string val = last_val.total ? detail::concat(int(std::lround(1000 * last_val.value())) / 10.0, "%") : "-";
      loop.print_step_line(
          {examples::field("epoch %ld", long(epoch)), examples::field("loss %.4f", loop.last_loss()),
           examples::field("acc %5.1f%% (batch %5.1f%%)", 100 * window.value(), 100 * acc.value()),
           examples::field("val %6s", val.c_str()),
           examples::field("%5.0f img/s", double(images_per_step) / loop.step_seconds()),
           examples::field("loader wait %.1f s", train.wait_seconds())});
    }
    if (loop.checkpoint_due()) save(loop.step());
    // Rank 0's window decides, so that every rank stops at the same step.
    reached = c.target_accuracy() > 0 && window.full() && window.value() >= c.target_accuracy();
    if (pg && c.target_accuracy() > 0) reached = pg->all_reduce_scalar(lead && reached ? 1.0 : 0.0) > 0;
    if (reached) {
      if (lead)
        std::printf("reached %.1f%% training accuracy (last %zu batches) at step %ld, %.1f s\n",
                    100 * window.value(), window.batches(), long(loop.step()), loop.elapsed());
      break;
    }
  }
  loop.finish();
  if (lead) print_final(model, data, c, window, loop, device, reached);
  if (loop.steps_run() > 0) save(loop.step());
  if (!lead) return 0;
  std::printf("checkpoint: %s\n", ckpt_dir.c_str());
  loop.print_timing(
      "img/s", double(images_per_step),
      examples::field("; the loader kept the trainer waiting %.2f s in all", train.wait_seconds()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::run_trainer_main("train_resnet", argc, argv, &examples::parse_resnet_train_options,
                                    &train_resnet);
}
