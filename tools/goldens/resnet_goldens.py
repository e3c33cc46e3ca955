#!/usr/bin/env python3
"""PyTorch parity fixtures for Strata's ResNet (models/resnet): run by hand, outputs committed.

  /usr/bin/python3 tools/goldens/resnet_goldens.py [--out tests/goldens/resnet]

The model is torchvision's ResNet (v1.5: the bottleneck's stride on its 3x3 conv), written out
here so torchvision is not needed, with a configurable stage width and stage count and the
CIFAR stem (3x3/1 conv, no max pool) as an option; parameter and buffer names are torchvision's.
For each config it builds the model in float64 (initial parameters rounded to float32), runs one
training-mode batch and writes a safetensors file with: initial parameters and buffers
("param.<name>"), images, labels, logits, loss, every parameter's gradient ("grad.<name>"), the
BatchNorm running statistics after that forward ("after1.<name>"), then the losses of 4 SGD
steps (lr 0.05, momentum 0.9, weight decay 1e-4, the same batch each step) in __metadata__, the
parameters and running statistics after them ("final.<name>") and the eval-mode logits of the
final model ("eval_logits"). Floating tensors are stored as float32, labels as int64.
"""
import json, os, sys
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_file import gradients, start_fixtures, write_fixture  # noqa: E402

CONFIGS = {
    # odd sizes everywhere: 17x13 images, widths 3 / 12 channels, 7 classes, the ImageNet stem
    "bottleneck_odd": dict(block="bottleneck", layers=[1, 2], width=3, stem="imagenet", classes=7, N=3, H=17, W=13),
    # basic blocks, CIFAR stem, three stages (two downsampling shortcuts)
    "basic_cifar": dict(block="basic", layers=[2, 1, 1], width=4, stem="cifar", classes=10, N=4, H=12, W=12),
}


def conv(i, o, k, s):
    return nn.Conv2d(i, o, k, stride=s, padding=k // 2, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(s, inplanes, planes, stride):
        super().__init__()
        s.conv1, s.bn1 = conv(inplanes, planes, 3, stride), nn.BatchNorm2d(planes)
        s.conv2, s.bn2 = conv(planes, planes, 3, 1), nn.BatchNorm2d(planes)
        s.downsample = None
        if stride != 1 or inplanes != planes:
            s.downsample = nn.Sequential(conv(inplanes, planes, 1, stride), nn.BatchNorm2d(planes))

    def forward(s, x):
        y = F.relu(s.bn1(s.conv1(x)))
        y = s.bn2(s.conv2(y))
        return F.relu(y + (s.downsample(x) if s.downsample is not None else x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(s, inplanes, planes, stride):
        super().__init__()
        s.conv1, s.bn1 = conv(inplanes, planes, 1, 1), nn.BatchNorm2d(planes)
        s.conv2, s.bn2 = conv(planes, planes, 3, stride), nn.BatchNorm2d(planes)
        s.conv3, s.bn3 = conv(planes, planes * 4, 1, 1), nn.BatchNorm2d(planes * 4)
        s.downsample = None
        if stride != 1 or inplanes != planes * 4:
            s.downsample = nn.Sequential(conv(inplanes, planes * 4, 1, stride), nn.BatchNorm2d(planes * 4))

    def forward(s, x):
        y = F.relu(s.bn1(s.conv1(x)))
        y = F.relu(s.bn2(s.conv2(y)))
        y = s.bn3(s.conv3(y))
        return F.relu(y + (s.downsample(x) if s.downsample is not None else x))


class ResNet(nn.Module):
    def __init__(s, c):
        super().__init__()
        Block = BasicBlock if c["block"] == "basic" else Bottleneck
        cifar = c["stem"] == "cifar"
        inplanes = c["width"]
        s.conv1 = nn.Conv2d(3, inplanes, 3 if cifar else 7, stride=1 if cifar else 2, padding=1 if cifar else 3,
                            bias=False)
        s.bn1 = nn.BatchNorm2d(inplanes)
        s.maxpool = None if cifar else nn.MaxPool2d(3, stride=2, padding=1)
        for i, n in enumerate(c["layers"]):
            planes, blocks = c["width"] << i, []
            for b in range(n):
                blocks.append(Block(inplanes, planes, (1 if i == 0 else 2) if b == 0 else 1))
                inplanes = planes * Block.expansion
            setattr(s, f"layer{i + 1}", nn.Sequential(*blocks))
        s.n_stages = len(c["layers"])
        s.avgpool = nn.AdaptiveAvgPool2d(1)
        s.fc = nn.Linear(inplanes, c["classes"])
        for m in s.modules():  # torchvision's init
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight), nn.init.zeros_(m.bias)

    def forward(s, x):
        x = F.relu(s.bn1(s.conv1(x)))
        if s.maxpool is not None:
            x = s.maxpool(x)
        for i in range(s.n_stages):
            x = getattr(s, f"layer{i + 1}")(x)
        return s.fc(torch.flatten(s.avgpool(x), 1))


def main():
    out_dir = start_fixtures(__file__, "resnet")
    for name, c in CONFIGS.items():
        torch.manual_seed(1234)
        model = ResNet(c)
        with torch.no_grad():  # make the initial parameters exactly float32
            for p in model.parameters():
                p.copy_(p.float().double())
            # non-trivial BN affine parameters and running statistics, so each is checked
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.weight.copy_((1 + 0.2 * torch.randn_like(m.weight)).float().double())
                    m.bias.copy_((0.1 * torch.randn_like(m.bias)).float().double())
                    m.running_mean.copy_((0.1 * torch.randn_like(m.running_mean)).float().double())
                    m.running_var.copy_((1 + 0.5 * torch.rand_like(m.running_var)).float().double())
        model = model.double()
        init = {n: t.detach().clone() for n, t in model.state_dict().items()}
        g = torch.Generator().manual_seed(99)
        images = torch.randn(c["N"], 3, c["H"], c["W"], generator=g).float().double()
        labels = torch.randint(0, c["classes"], (c["N"],), generator=g)
        model.train()
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        out = {"param." + n: t.float() if t.is_floating_point() else t for n, t in init.items()}
        out["images"], out["labels"] = images.float(), labels
        out["logits"] = logits.detach().float()
        out.update(gradients(model))
        for n, t in model.state_dict().items():
            if "running" in n:
                out["after1." + n] = t.float()
        # SGD from the initial state again
        model.load_state_dict(init)
        model.zero_grad(set_to_none=True)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        losses = []
        for step in range(4):
            l = F.cross_entropy(model(images), labels)
            losses.append(l.item())
            opt.zero_grad(set_to_none=True)
            l.backward()
            opt.step()
        for n, t in model.state_dict().items():
            if t.is_floating_point():
                out["final." + n] = t.detach().float()
        model.eval()
        with torch.no_grad():
            out["eval_logits"] = model(images).float()
        meta = {"config": json.dumps(c), "loss": repr(loss.item()), "sgd_losses": json.dumps(losses)}
        path = write_fixture(out_dir, f"resnet_{name}.safetensors", out, meta)
        print(f"wrote {path} ({os.path.getsize(path)} bytes): loss {loss.item():.6f}, "
              f"SGD losses {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
