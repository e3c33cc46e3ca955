#include "examples/train_resnet/train_options.h"

#include <CLI/CLI.hpp>
#include <sstream>
#include <vector>

#include "examples/common/cache_settings.h"
#include "examples/common/config_flags.h"
#include "examples/common/shared_flags.h"
#include "examples/common/trainer_settings.h"

namespace strata::examples {

namespace {

// train_resnet's defaults, in the config file's format; what is left out is 0, false or empty.
// The run's length is resolve_run_length's; image_size, lr and weight_decay depend on the data
// and the optimizer (parse_resnet_train_options).
constexpr const char* kDefaults = R"pb(
  model: "resnet18-cifar"
  synthetic_classes: 10
  synthetic_train: 10000
  synthetic_val: 1000
  synthetic_noise: 0.1
  augment: true
  workers: 2
  prefetch: 4
  run { batch_size: 128 seed: 1337 eval_batches: 20 log_every: 10 out_dir: "out/train_resnet" }
  schedule { warmup_steps: 20 }
  optimizer: "sgd"
  momentum: 0.9
)pb";

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
      throw ValueError("--layers '" + text + "' is not a comma-separated list of block counts");
    }
  }
  return out;
}

}  // namespace

std::string ResNetTrainOptions::describe() const {
  const TrainResNetConfig& c = config;
  std::ostringstream os;
  os << "model " << c.model() << " (" << model.str() << "), B=" << c.run().batch_size() << ", "
     << c.optimizer() << " " << describe_schedule(c.schedule(), c.optim());
  if (c.optimizer() == "sgd") os << ", momentum " << c.momentum() << (c.nesterov() ? " (Nesterov)" : "");
  os << ", seed " << c.run().seed();
  return os.str();
}

bool parse_resnet_train_options(int argc, char** argv, ResNetTrainOptions* out) {
  CLI::App app{"Train a ResNet image classifier. With no arguments: ResNet-18 with the CIFAR stem on the built-in "
               "synthetic image set (10 procedural classes, 32x32), SGD with momentum, for 5 minutes."};
  TrainResNetConfig flags;
  ConfigFlags f(app, "train_resnet", &flags);
  f.option(&flags, "model", "",
           "preset: resnet18, resnet34, resnet50, resnet101, resnet152, each with -cifar "
           "for the CIFAR stem");
  f.option(&flags, "width", "", "channels of the first stage (64 in the presets)");
  f.option(&flags, "layers", "", "blocks per stage, e.g. 2,2,2,2");
  f.option(&flags, "cifar10", "", "folder of CIFAR-10 binary files (data_batch_*.bin, test_batch.bin)");
  f.option(&flags, "image_folder", "", "folder with one subfolder of PNG/JPEG images per class");
  f.option(&flags, "val_folder", "", "held-out image folder (same classes)");
  f.option(&flags, "image_size", "", "training crop size (default 32; 224 for image folders)");
  f.option(&flags, "max_image_pixels", "",
           "refuse images with more pixels, from their header (default 89478485, Pillow's limit)");
  f.option(&flags, "synthetic_classes", "", "classes of the synthetic set");
  f.option(&flags, "synthetic_train", "", "training images of the synthetic set");
  f.option(&flags, "synthetic_val", "", "held-out images of the synthetic set");
  f.option(&flags, "synthetic_noise", "", "pixel noise of the synthetic set, a fraction of 255");
  f.option(&flags, "augment", "", "random crops and flips");
  f.option(&flags, "workers", "", "loader threads (0: load on the training thread)");
  f.option(&flags, "prefetch", "", "ready batches the loader keeps ahead");
  f.option(&flags, "optimizer", "", "sgd or adamw");
  f.option(&flags, "momentum");
  f.option(&flags, "nesterov");
  add_training_flags(f, &flags);
  f.flag(
      &flags, "sync_bn", "",
      "under mpirun, BatchNorm's statistics over every rank's batch (SyncBatchNorm); off: each rank's own");
  f.option(
      &flags, "target_accuracy", "",
      "stop once the training accuracy over the last 20 batches (or an epoch, when shorter) reaches this "
      "fraction (e.g. 0.95)");
  add_profile_flag(f, flags.mutable_run());
  add_tensor_cache_flags(f, flags.mutable_cache());
  // Where this trainer's defaults or meaning differ from the other trainers'.
  app.get_option("--max-seconds")
      ->description("stop after this much training time (0: no limit; default 300)");
  app.get_option("--eval-every")->description("held-out accuracy every N steps (0: at the end only)");
  app.get_option("--eval-batches")->description("batches per evaluation");
  app.get_option("--lr")->description("peak learning rate (default 0.1 for sgd, 2e-3 for adamw)");
  app.get_option("--weight-decay")->description("default 5e-4 for sgd, 0.05 for adamw");
  app.get_option("--grad-clip")->description("clip the global gradient norm (0: off)");
  app.get_option("--profile")
      ->description(
          "time every op kind from step 3 on; table at the end and "
          "<out-dir>/profile_trace.json (chrome://tracing)");
  TrainResNetConfig set;  // what the --config file and the flags set
  const TrainResNetConfig defaults = defaults_of<TrainResNetConfig>(kDefaults);
  if (!f.parse(argc, argv, &set, &defaults)) return false;

  TrainResNetConfig& c = out->config;
  c = settings_from(kDefaults, set);
  models::ResNetConfig& m = out->model;
  m = models::ResNetConfig::preset(c.model());
  if (set.has_width()) m.width = set.width();
  if (set.has_layers()) m.layers = parse_layers(set.layers());
  if (!set.has_image_size()) c.set_image_size(c.image_folder().empty() ? 32 : 224);
  const bool sgd = c.optimizer() == "sgd";
  STRATA_CHECK(sgd || c.optimizer() == "adamw", ValueError, "--optimizer '", c.optimizer(),
               "' is not sgd or adamw");
  if (!set.schedule().has_lr()) c.mutable_schedule()->set_lr(sgd ? 0.1 : 2e-3);
  if (!set.optim().has_weight_decay()) c.mutable_optim()->set_weight_decay(sgd ? 5e-4 : 0.05);
  out->cache = cache_settings(c.cache());

  STRATA_CHECK(c.cifar10().empty() || c.image_folder().empty(), ValueError,
               "give --cifar10 or --image-folder, not both");
  STRATA_CHECK(c.val_folder().empty() || !c.image_folder().empty(), ValueError,
               "--val-folder needs --image-folder");
  STRATA_CHECK(c.run().batch_size() > 0 && c.image_size() >= 8, ValueError,
               "batch size must be positive and --image-size at least 8, got ", c.run().batch_size(), " and ",
               c.image_size());
  STRATA_CHECK(!c.has_max_image_pixels() || c.max_image_pixels() >= 1, ValueError,
               "--max-image-pixels must be at least 1, got ", c.max_image_pixels());
  STRATA_CHECK(c.workers() >= 0 && c.prefetch() >= 1, ValueError,
               "--workers must be >= 0 and --prefetch >= 1");
  STRATA_CHECK(c.target_accuracy() >= 0 && c.target_accuracy() <= 1, ValueError, "--target-accuracy ",
               c.target_accuracy(), " is not a fraction in [0, 1]");
  STRATA_CHECK(c.schedule().lr() > 0 && c.optim().weight_decay() >= 0, ValueError,
               "--lr must be positive and --weight-decay >= 0");
  return true;
}

}  // namespace strata::examples
