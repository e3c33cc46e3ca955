// ResNetTrainOptions: train_resnet's resolved settings (defaults < --config file < flags).
#pragma once

#include <cstdint>
#include <string>

#include "strata/memory/trainer_cache.h"
#include "strata/models/resnet.h"

namespace strata::examples {

struct ResNetTrainOptions {
  std::string preset = "resnet18-cifar";
  models::ResNetConfig model;  // num_classes is set from the data
  // Data: synthetic (default), CIFAR-10 files in a folder, or an image folder.
  std::string cifar10, image_folder, val_folder;
  int64_t image_size = 0;  // 0: 32 (synthetic, CIFAR-10) or 224 (image folder)
  int64_t synthetic_classes = 10, synthetic_train = 10000, synthetic_val = 1000;
  double synthetic_noise = 0.1;
  bool augment = true;
  int64_t workers = 2, prefetch = 4;
  // Optimization.
  std::string optimizer = "sgd";
  int64_t batch_size = 128, max_steps = 1000000, warmup_steps = 0, lr_decay_steps = 0;
  double max_seconds = 300, lr = 0, min_lr = 0, momentum = 0.9, weight_decay = -1, grad_clip = 0;
  bool nesterov = false;
  uint64_t seed = 1337;
  double target_accuracy = 0;  // stop when the training accuracy of the last 20 batches reaches this
  // Evaluation, checkpoints, output.
  int64_t eval_every = 0, eval_batches = 20, ckpt_every = 0, log_every = 10;
  std::string out_dir = "out/train_resnet";
  bool resume = false, profile = false;
  memory::CacheSettings cache;

  bool time_bounded() const { return max_seconds > 0 && max_steps >= 1000000; }
  std::string data_kind() const { return !cifar10.empty() ? "cifar10" : !image_folder.empty() ? "folder" : "synthetic"; }
  std::string describe() const;
};

// Parses argv (and the --config file it names); throws ValueError/IoError on bad input.
// Returns false when --help was printed.
bool parse_resnet_train_options(int argc, char** argv, ResNetTrainOptions* out);

}  // namespace strata::examples
