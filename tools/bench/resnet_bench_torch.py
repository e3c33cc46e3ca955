#!/usr/bin/env python3
"""ResNet training step, PyTorch side of tools/bench/resnet_bench.py (one config per process).

The model is torchvision's ResNet as tools/goldens/resnet_goldens.py writes it out (torchvision is
not installed here), built with the torchvision preset's blocks; fp32 NCHW, mkldnn (oneDNN)
convolutions as PyTorch picks them on this CPU. A step: zero_grad + forward + cross-entropy +
backward + SGD (momentum 0.9, weight decay 1e-4). Prints `RESULT {json}`.
"""
import argparse, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "goldens"))
sys.path.insert(0, HERE)

PRESETS = {"resnet18": ("basic", [2, 2, 2, 2]), "resnet34": ("basic", [3, 4, 6, 3]),
           "resnet50": ("bottleneck", [3, 4, 6, 3]), "resnet101": ("bottleneck", [3, 4, 23, 3]),
           "resnet152": ("bottleneck", [3, 8, 36, 3])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="resnet50")
    ap.add_argument("--B", type=int, default=8)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from resnet_goldens import ResNet
    from torch_step_timing import step_figures, timed_steps
    torch.set_num_threads(a.threads)
    name = a.preset[:-6] if a.preset.endswith("-cifar") else a.preset
    block, layers = PRESETS[name]
    cifar = a.preset.endswith("-cifar")
    c = dict(block=block, layers=layers, width=64, stem="cifar" if cifar else "imagenet", classes=10 if cifar else 1000)
    torch.manual_seed(0)
    model = ResNet(c).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(a.B, 3, a.size, a.size)
    y = torch.tensor([(i * 37) % c["classes"] for i in range(a.B)])

    loss, times = timed_steps(opt, lambda: F.cross_entropy(model(x), y), a.warmup, a.steps)
    print("RESULT " + json.dumps(dict(side="torch", torch=torch.__version__, preset=a.preset, B=a.B, size=a.size,
                                      threads=torch.get_num_threads(), mkldnn=torch.backends.mkldnn.is_available(),
                                      **step_figures(times, loss), times_ms=[t * 1e3 for t in times])))


if __name__ == "__main__":
    main()
