// ResNet-18/34/50/101/152 (He et al. 2015; torchvision's v1.5 layout: the bottleneck's stride on
// its 3x3 conv) with an ImageNet stem (7x7/2 conv, 3x3/2 max pool) or a CIFAR stem (3x3/1 conv,
// no pool). Parameter and buffer names are torchvision's (`layer2.0.downsample.1.running_var`),
// so state dicts load either way; each residual block is a planner block (scope `layer2.0`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/models/layers/batch_norm.h"
#include "strata/models/layers/container.h"
#include "strata/models/layers/conv2d.h"
#include "strata/models/layers/linear.h"
#include "strata/models/layers/pooling.h"
#include "strata/nn/module.h"

namespace strata::models {

enum class ResNetBlock { Basic, Bottleneck };
enum class ResNetStem { ImageNet, Cifar };

struct ResNetConfig {
  ResNetBlock block = ResNetBlock::Basic;
  std::vector<int64_t> layers{2, 2, 2, 2};  // blocks per stage (1 to 4 stages)
  int64_t width = 64;                       // planes of the first stage; stage i has width << i
  int64_t in_channels = 3;
  int64_t num_classes = 1000;
  ResNetStem stem = ResNetStem::ImageNet;
  bool zero_init_residual = false;  // torchvision's option: each block's last BN weight starts at 0

  // "resnet18", "resnet34", "resnet50", "resnet101", "resnet152" (ImageNet stem, 1000 classes);
  // a "-cifar" suffix gives the CIFAR stem and 10 classes. Throws ValueError naming the preset.
  static ResNetConfig preset(const std::string& name);
  void validate() const;  // throws ValueError for inconsistent settings
  int64_t expansion() const { return block == ResNetBlock::Basic ? 1 : 4; }
  std::string str() const;
};

// conv3x3 -> bn -> relu -> conv3x3 -> bn, + identity (or a 1x1 conv + bn downsample), relu.
class BasicBlock : public nn::Module {
 public:
  BasicBlock(int64_t inplanes, int64_t planes, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2;
  std::shared_ptr<nn::Sequential> downsample;  // null when the identity fits
};

// conv1x1 -> bn -> relu -> conv3x3 (stride) -> bn -> relu -> conv1x1 (4x planes) -> bn, + shortcut, relu.
class Bottleneck : public nn::Module {
 public:
  Bottleneck(int64_t inplanes, int64_t planes, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<nn::Conv2d> conv1, conv2, conv3;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2, bn3;
  std::shared_ptr<nn::Sequential> downsample;
};

class ResNet : public nn::Module {
 public:
  explicit ResNet(const ResNetConfig& config);
  // images [N, in_channels, H, W] -> logits [N, num_classes].
  Tensor forward(const Tensor& images) override;
  // torchvision's init: convs kaiming_normal_(fan_out, relu), BN weight 1 / bias 0, the fc layer
  // as nn.Linear; from the current Generator.
  void reset_parameters();
  const ResNetConfig& config() const { return config_; }

  std::shared_ptr<nn::Conv2d> conv1;
  std::shared_ptr<nn::BatchNorm2d> bn1;
  std::shared_ptr<nn::MaxPool2d> maxpool;  // null with the CIFAR stem
  std::vector<std::shared_ptr<nn::Sequential>> stages;  // layer1, layer2, ...
  std::shared_ptr<nn::AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<nn::Linear> fc;

 private:
  ResNetConfig config_;
};

}  // namespace strata::models
