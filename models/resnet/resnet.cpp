#include "strata/models/resnet.h"

#include <cmath>
#include <sstream>

#include "strata/autograd/grad_mode.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/shape_ops.h"

namespace strata::models {

using nn::BatchNorm2d;
using nn::Conv2d;
using nn::Conv2dOptions;

ResNetConfig ResNetConfig::preset(const std::string& name) {
  std::string base = name;
  const bool cifar = base.size() > 6 && base.compare(base.size() - 6, 6, "-cifar") == 0;
  if (cifar) base.resize(base.size() - 6);
  ResNetConfig c;
  if (base == "resnet18") {
    c.block = ResNetBlock::Basic, c.layers = {2, 2, 2, 2};
  } else if (base == "resnet34") {
    c.block = ResNetBlock::Basic, c.layers = {3, 4, 6, 3};
  } else if (base == "resnet50") {
    c.block = ResNetBlock::Bottleneck, c.layers = {3, 4, 6, 3};
  } else if (base == "resnet101") {
    c.block = ResNetBlock::Bottleneck, c.layers = {3, 4, 23, 3};
  } else if (base == "resnet152") {
    c.block = ResNetBlock::Bottleneck, c.layers = {3, 8, 36, 3};
  } else {
    throw ValueError("ResNetConfig::preset: unknown preset '" + name +
                     "' (resnet18, resnet34, resnet50, resnet101, resnet152, each optionally with -cifar)");
  }
  if (cifar) c.stem = ResNetStem::Cifar, c.num_classes = 10;
  return c;
}

void ResNetConfig::validate() const {
  STRATA_CHECK(!layers.empty() && layers.size() <= 4, ValueError, "ResNetConfig: 1 to 4 stages, got ", layers.size());
  for (int64_t n : layers) STRATA_CHECK(n >= 1, ValueError, "ResNetConfig: every stage needs a block, got ", n);
  STRATA_CHECK(width >= 1 && in_channels >= 1 && num_classes >= 1, ValueError,
               "ResNetConfig: width, in_channels and num_classes must be positive, got ", width, ", ", in_channels,
               ", ", num_classes);
}

std::string ResNetConfig::str() const {
  std::ostringstream os;
  os << (block == ResNetBlock::Basic ? "basic" : "bottleneck") << " layers [";
  for (size_t i = 0; i < layers.size(); ++i) os << (i ? "," : "") << layers[i];
  os << "] width " << width << " classes " << num_classes << (stem == ResNetStem::Cifar ? " cifar stem" : " imagenet stem");
  return os.str();
}

namespace {

std::shared_ptr<Conv2d> conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return std::make_shared<Conv2d>(Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

// torchvision: a 1x1 conv + BN when the shape of the residual changes.
std::shared_ptr<nn::Sequential> make_downsample(int64_t in, int64_t out, int64_t stride) {
  if (stride == 1 && in == out) return nullptr;
  return std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{conv(in, out, 1, stride), std::make_shared<BatchNorm2d>(out)});
}

}  // namespace

BasicBlock::BasicBlock(int64_t inplanes, int64_t planes, int64_t stride) {
  conv1 = register_module("conv1", conv(inplanes, planes, 3, stride));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, 1));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
  if (auto d = make_downsample(inplanes, planes, stride)) downsample = register_module("downsample", d);
  mark_as_block();
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor y = ops::relu((*bn1)((*conv1)(x)));
  y = (*bn2)((*conv2)(y));
  return ops::relu(ops::add(y, downsample ? (*downsample)(x) : x));
}

Bottleneck::Bottleneck(int64_t inplanes, int64_t planes, int64_t stride) {
  conv1 = register_module("conv1", conv(inplanes, planes, 1, 1));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, stride));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
  conv3 = register_module("conv3", conv(planes, planes * 4, 1, 1));
  bn3 = register_module("bn3", std::make_shared<BatchNorm2d>(planes * 4));
  if (auto d = make_downsample(inplanes, planes * 4, stride)) downsample = register_module("downsample", d);
  mark_as_block();
}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor y = ops::relu((*bn1)((*conv1)(x)));
  y = ops::relu((*bn2)((*conv2)(y)));
  y = (*bn3)((*conv3)(y));
  return ops::relu(ops::add(y, downsample ? (*downsample)(x) : x));
}

ResNet::ResNet(const ResNetConfig& config) : config_(config) {
  config.validate();
  const bool cifar = config.stem == ResNetStem::Cifar;
  int64_t inplanes = config.width;
  conv1 = register_module("conv1", std::make_shared<Conv2d>(Conv2dOptions(config.in_channels, inplanes, cifar ? 3 : 7)
                                                                .stride(cifar ? 1 : 2)
                                                                .padding(cifar ? 1 : 3)
                                                                .bias(false)));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(inplanes));
  if (!cifar) maxpool = register_module("maxpool", std::make_shared<nn::MaxPool2d>(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  for (size_t s = 0; s < config.layers.size(); ++s) {
    const int64_t planes = config.width << s, stride = s == 0 ? 1 : 2;
    auto stage = std::make_shared<nn::Sequential>();
    for (int64_t b = 0; b < config.layers[s]; ++b) {
      const int64_t st = b == 0 ? stride : 1;
      if (config.block == ResNetBlock::Basic)
        stage->push_back(std::make_shared<BasicBlock>(inplanes, planes, st));
      else
        stage->push_back(std::make_shared<Bottleneck>(inplanes, planes, st));
      inplanes = planes * config.expansion();
    }
    stages.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  avgpool = register_module("avgpool", std::make_shared<nn::AdaptiveAvgPool2d>(1));
  fc = register_module("fc", std::make_shared<nn::Linear>(inplanes, config.num_classes));
  reset_parameters();
}

void ResNet::reset_parameters() {
  NoGradGuard no_grad;
  for (const auto& m : modules()) {
    if (auto c = std::dynamic_pointer_cast<Conv2d>(m)) {
      const auto k = c->options().kernel_size();
      ops::normal_(c->weight, 0.0, std::sqrt(2.0 / double(c->options().out_channels() * k[0] * k[1])));
    } else if (auto b = std::dynamic_pointer_cast<BatchNorm2d>(m)) {
      b->reset_parameters();
    }
  }
  fc->reset_parameters();
  if (config_.zero_init_residual)
    for (const auto& m : modules()) {
      if (auto b = std::dynamic_pointer_cast<BasicBlock>(m)) b->bn2->weight.zero_();
      if (auto b = std::dynamic_pointer_cast<Bottleneck>(m)) b->bn3->weight.zero_();
    }
}

Tensor ResNet::forward(const Tensor& images) {
  STRATA_CHECK(images.dim() == 4 && images.size(1) == config_.in_channels, ShapeError, "ResNet: expects images [N, ",
               config_.in_channels, ", H, W], got ", shape_str(images.shape()));
  Tensor x = ops::relu((*bn1)((*conv1)(images)));
  if (maxpool) x = (*maxpool)(x);
  for (const auto& stage : stages) x = (*stage)(x);
  x = ops::flatten((*avgpool)(x), 1);
  return (*fc)(x);
}

}  // namespace strata::models
