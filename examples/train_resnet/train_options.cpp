#include "examples/train_resnet/train_options.h"

#include <CLI/CLI.hpp>
#include <optional>
#include <sstream>

#include "examples/common/cache_flags.h"
#include "examples/common/trainer_config.h"
#include "train_resnet.pb.h"

namespace strata::examples {

std::string ResNetTrainOptions::describe() const {
  std::ostringstream os;
  os << "model " << preset << " (" << model.str() << "), B=" << batch_size << ", " << optimizer << " lr " << lr
     << " -> " << min_lr << " warmup " << warmup_steps << ", wd " << weight_decay;
  if (optimizer == "sgd") os << ", momentum " << momentum << (nesterov ? " (Nesterov)" : "");
  os << ", seed " << seed;
  return os.str();
}

namespace {

// Every setting, as an optional: set by the config file first, then by flags.
struct Overrides {
  std::optional<std::string> model, layers, cifar10, image_folder, val_folder, optimizer, out_dir;
  std::optional<int64_t> width, image_size, synthetic_classes, synthetic_train, synthetic_val, workers, prefetch,
      batch_size, max_steps, warmup_steps, lr_decay_steps, eval_every, eval_batches, ckpt_every, log_every;
  std::optional<double> synthetic_noise, max_seconds, lr, min_lr, momentum, weight_decay, grad_clip, target_accuracy;
  std::optional<uint64_t> seed;
  std::optional<bool> augment, nesterov, resume, profile;
  CacheFlags cache;
};

#define STRATA_RESNET_FIELDS(X)                                                                                     \
  X(model) X(layers) X(cifar10) X(image_folder) X(val_folder) X(optimizer) X(out_dir) X(width) X(image_size)        \
  X(synthetic_classes) X(synthetic_train) X(synthetic_val) X(workers) X(prefetch) X(batch_size) X(max_steps)        \
  X(warmup_steps) X(lr_decay_steps) X(eval_every) X(eval_batches) X(ckpt_every) X(log_every) X(synthetic_noise)     \
  X(max_seconds) X(lr) X(min_lr) X(momentum) X(weight_decay) X(grad_clip) X(target_accuracy) X(seed) X(augment)     \
  X(nesterov) X(resume) X(profile)

void from_proto(const TrainResNetConfig& c, Overrides* o) {
#define STRATA_TAKE(field) \
  if (c.has_##field()) o->field = c.field();
  STRATA_RESNET_FIELDS(STRATA_TAKE)
#undef STRATA_TAKE
  o->cache.take(c);
}

void merge(Overrides* into, const Overrides& from) {
#define STRATA_MERGE(field) \
  if (from.field) into->field = from.field;
  STRATA_RESNET_FIELDS(STRATA_MERGE)
#undef STRATA_MERGE
  into->cache.merge(from.cache);
}

std::vector<int64_t> parse_layers(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      out.push_back(std::stoll(item, &used));
      STRATA_CHECK(used == item.size(), ValueError, "");
    } catch (const std::exception&) {
      throw ValueError("train_resnet: --layers '" + text + "' is not a comma-separated list of block counts");
    }
  }
  return out;
}

}  // namespace

bool parse_resnet_train_options(int argc, char** argv, ResNetTrainOptions* out) {
  CLI::App app{"Train a ResNet image classifier. With no arguments: ResNet-18 with the CIFAR stem on the built-in "
               "synthetic image set (10 procedural classes, 32x32), SGD with momentum, for 5 minutes."};
  std::string config_path;
  Overrides f;
  app.add_option("--config", config_path, "protobuf text file (TrainResNetConfig); flags override it");
  app.add_option("--model", f.model, "preset: resnet18, resnet34, resnet50, resnet101, resnet152, each with -cifar "
                                     "for the CIFAR stem (default resnet18-cifar)");
  app.add_option("--width", f.width, "channels of the first stage (64 in the presets)");
  app.add_option("--layers", f.layers, "blocks per stage, e.g. 2,2,2,2");
  app.add_option("--cifar10", f.cifar10, "folder of CIFAR-10 binary files (data_batch_*.bin, test_batch.bin)");
  app.add_option("--image-folder", f.image_folder, "folder with one subfolder of PNG/JPEG images per class");
  app.add_option("--val-folder", f.val_folder, "held-out image folder (same classes)");
  app.add_option("--image-size", f.image_size, "training crop size (default 32; 224 for image folders)");
  app.add_option("--synthetic-classes", f.synthetic_classes, "classes of the synthetic set (default 10)");
  app.add_option("--synthetic-train", f.synthetic_train, "training images of the synthetic set (default 10000)");
  app.add_option("--synthetic-val", f.synthetic_val, "held-out images of the synthetic set (default 1000)");
  app.add_option("--synthetic-noise", f.synthetic_noise, "pixel noise of the synthetic set, fraction of 255 (0.1)");
  app.add_option("--augment", f.augment, "random crops and flips (default true)");
  app.add_option("--workers", f.workers, "loader threads (default 2; 0: load on the training thread)");
  app.add_option("--prefetch", f.prefetch, "ready batches the loader keeps ahead (default 4)");
  app.add_option("--optimizer", f.optimizer, "sgd (default) or adamw");
  app.add_option("-b,--batch-size", f.batch_size);
  app.add_option("--max-steps", f.max_steps);
  app.add_option("--max-seconds", f.max_seconds, "stop after this much training time (0: no limit; default 300)");
  app.add_option("--lr", f.lr, "peak learning rate (default 0.1 for sgd, 2e-3 for adamw)");
  app.add_option("--min-lr", f.min_lr);
  app.add_option("--warmup-steps", f.warmup_steps);
  app.add_option("--lr-decay-steps", f.lr_decay_steps, "schedule length (0: max steps, or estimated from step time)");
  app.add_option("--momentum", f.momentum);
  app.add_option("--nesterov", f.nesterov);
  app.add_option("--weight-decay", f.weight_decay, "default 5e-4 for sgd, 0.05 for adamw");
  app.add_option("--grad-clip", f.grad_clip, "clip the global gradient norm (0: off)");
  app.add_option("--seed", f.seed);
  app.add_option("--target-accuracy", f.target_accuracy,
                 "stop once the training accuracy over the last 20 batches (or an epoch, when shorter) reaches this "
                 "fraction (e.g. 0.95)");
  app.add_option("--eval-every", f.eval_every, "held-out accuracy every N steps (0: at the end only)");
  app.add_option("--eval-batches", f.eval_batches, "batches per evaluation (default 20)");
  app.add_option("--ckpt-every", f.ckpt_every, "checkpoint every N steps (0: only at the end)");
  app.add_option("-o,--out-dir", f.out_dir);
  app.add_flag("--resume{true}", f.resume, "continue from <out-dir>/checkpoint");
  app.add_option("--log-every", f.log_every);
  app.add_flag("--profile{true}", f.profile, "time every op kind from step 3 on; table at the end and "
                                             "<out-dir>/profile_trace.json (chrome://tracing)");
  f.cache.add_to(app);
  if (!parse_command_line(app, argc, argv, "train_resnet")) return false;

  Overrides o;
  if (!config_path.empty()) {
    TrainResNetConfig c;
    read_config_file(config_path, "train_resnet", &c);
    from_proto(c, &o);
  }
  merge(&o, f);

  ResNetTrainOptions& t = *out;
  t.preset = o.model.value_or(t.preset);
  t.model = models::ResNetConfig::preset(t.preset);
  t.model.width = o.width.value_or(t.model.width);
  if (o.layers) t.model.layers = parse_layers(*o.layers);
  t.cifar10 = o.cifar10.value_or(""), t.image_folder = o.image_folder.value_or(""), t.val_folder = o.val_folder.value_or("");
  t.image_size = o.image_size.value_or(t.image_folder.empty() ? 32 : 224);
  t.synthetic_classes = o.synthetic_classes.value_or(t.synthetic_classes);
  t.synthetic_train = o.synthetic_train.value_or(t.synthetic_train), t.synthetic_val = o.synthetic_val.value_or(t.synthetic_val);
  t.synthetic_noise = o.synthetic_noise.value_or(t.synthetic_noise);
  t.augment = o.augment.value_or(t.augment);
  t.workers = o.workers.value_or(t.workers), t.prefetch = o.prefetch.value_or(t.prefetch);
  t.optimizer = o.optimizer.value_or(t.optimizer);
  const bool sgd = t.optimizer == "sgd";
  STRATA_CHECK(sgd || t.optimizer == "adamw", ValueError, "train_resnet: --optimizer '", t.optimizer,
               "' is not sgd or adamw");
  t.batch_size = o.batch_size.value_or(t.batch_size), t.max_steps = o.max_steps.value_or(t.max_steps);
  t.max_seconds = o.max_seconds.value_or(o.max_steps ? 0.0 : t.max_seconds);
  t.lr = o.lr.value_or(sgd ? 0.1 : 2e-3), t.min_lr = o.min_lr.value_or(0.0);
  t.warmup_steps = o.warmup_steps.value_or(20), t.lr_decay_steps = o.lr_decay_steps.value_or(0);
  t.momentum = o.momentum.value_or(t.momentum), t.nesterov = o.nesterov.value_or(false);
  t.weight_decay = o.weight_decay.value_or(sgd ? 5e-4 : 0.05), t.grad_clip = o.grad_clip.value_or(t.grad_clip);
  t.seed = o.seed.value_or(t.seed), t.target_accuracy = o.target_accuracy.value_or(0.0);
  t.eval_every = o.eval_every.value_or(t.eval_every), t.eval_batches = o.eval_batches.value_or(t.eval_batches);
  t.ckpt_every = o.ckpt_every.value_or(t.ckpt_every), t.log_every = o.log_every.value_or(t.log_every);
  t.out_dir = o.out_dir.value_or(t.out_dir), t.resume = o.resume.value_or(false), t.profile = o.profile.value_or(false);
  o.cache.apply(&t.cache);

  STRATA_CHECK(t.cifar10.empty() || t.image_folder.empty(), ValueError,
               "train_resnet: give --cifar10 or --image-folder, not both");
  STRATA_CHECK(t.val_folder.empty() || !t.image_folder.empty(), ValueError, "train_resnet: --val-folder needs --image-folder");
  STRATA_CHECK(t.batch_size > 0 && t.image_size >= 8, ValueError, "train_resnet: batch size must be positive and "
               "--image-size at least 8, got ", t.batch_size, " and ", t.image_size);
  STRATA_CHECK(t.workers >= 0 && t.prefetch >= 1, ValueError, "train_resnet: --workers must be >= 0 and --prefetch >= 1");
  STRATA_CHECK(t.target_accuracy >= 0 && t.target_accuracy <= 1, ValueError, "train_resnet: --target-accuracy ",
               t.target_accuracy, " is not a fraction in [0, 1]");
  STRATA_CHECK(t.lr > 0 && t.weight_decay >= 0, ValueError, "train_resnet: --lr must be positive and --weight-decay >= 0");
  return true;
}

}  // namespace strata::examples
