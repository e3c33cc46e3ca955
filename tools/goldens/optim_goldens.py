#!/usr/bin/python3
"""Golden fixtures for strata::optim, written by PyTorch's own optimizers.

Run by hand (Debian's python3-torch), outputs are committed:
    /usr/bin/python3 tools/goldens/optim_goldens.py [--out tests/goldens/optim]

Each JSON file describes one run of STEPS optimizer steps on three small parameters of odd
shapes. Gradients are drawn from a seeded generator (rounded to 6 decimals so the decimal
text is the exact value both sides use) and stored, so the C++ test feeds identical
gradients; a gradient of null means the parameter has no .grad for that step (the optimizer
must skip it). After every step the file holds every parameter, and, where the run uses
them, the learning rate of each group and clip_grad_norm_'s returned total norm.

Schedules are applied through torch.optim.lr_scheduler.LambdaLR with the factor
lr_at(step) / peak_lr of Strata's schedules (strata/optim/lr_schedule.h), which scales each
group's initial lr exactly as LRSchedule::apply does.
"""
import argparse
import json
import math
import os

import torch

STEPS = 20
SHAPES = [[7, 5], [5], [3, 4, 2]]


def warmup_decay_lr(step, peak, warmup, total, min_lr, kind):
    if step < warmup:
        return peak * (step + 1) / warmup
    if step >= total:
        return min_lr
    r = (step - warmup) / (total - warmup)
    decay = 1.0 - r if kind == "linear" else 0.5 * (1.0 + math.cos(math.pi * r))
    return min_lr + (peak - min_lr) * decay


def rounded_randn(shape, gen, dtype, scale=1.0):
    t = torch.randn(shape, generator=gen, dtype=torch.float64) * scale
    return torch.round(t * 1e6).div(1e6).to(dtype)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def run(name, dtype, optimizer, groups, seed, missing_grads=(), grad_scale=lambda step: 1.0,
        clip=None, schedule=None):
    """groups: list of (param indices, options dict). missing_grads: (step, param) pairs.
    clip: dict(max_norm, norm_type (a number, or "inf")). schedule: dict(kind, peak, warmup, total, min_lr)."""
    gen = torch.Generator().manual_seed(seed)
    params = [rounded_randn(s, gen, dtype).requires_grad_(True) for s in SHAPES]
    initial = [flat(p) for p in params]
    torch_groups = [dict(params=[params[i] for i in idx], **opts) for idx, opts in groups]
    if optimizer == "SGD":
        opt = torch.optim.SGD(torch_groups, lr=groups[0][1]["lr"], foreach=False)
    else:
        opt = torch.optim.AdamW(torch_groups, foreach=False, amsgrad=False, maximize=False)
    sched = None
    if schedule is not None:
        s = schedule
        factor = lambda step: warmup_decay_lr(step, s["peak"], s["warmup"], s["total"], s["min_lr"],
                                              s["kind"]) / s["peak"]
        sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    steps = []
    for step in range(STEPS):
        grads = []
        for i, p in enumerate(params):
            if (step, i) in missing_grads:
                p.grad = None
                grads.append(None)
            else:
                g = rounded_randn(p.shape, gen, dtype, grad_scale(step))
                p.grad = g.clone()
                grads.append(flat(g))
        record = {"grads": grads, "lr": [g["lr"] for g in opt.param_groups]}
        if clip is not None:
            total = torch.nn.utils.clip_grad_norm_(params, clip["max_norm"], float(clip["norm_type"]))
            record["total_norm"] = float(total)
        opt.step()
        if sched is not None:
            sched.step()
        record["params"] = [flat(p) for p in params]
        steps.append(record)
    return {
        "name": name,
        "torch_version": torch.__version__,
        "optimizer": optimizer,
        "dtype": "f64" if dtype == torch.float64 else "f32",
        "shapes": SHAPES,
        "groups": [dict(params=list(idx), **opts) for idx, opts in groups],
        "clip": clip,
        "schedule": schedule,
        "initial": initial,
        "steps": steps,
    }


def goldens():
    f64, f32 = torch.float64, torch.float32
    adam_defaults = dict(lr=1e-3, betas=[0.9, 0.999], eps=1e-8, weight_decay=1e-2)
    sgd = lambda **kw: dict(dict(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False), **kw)
    yield run("sgd_plain", f64, "SGD", [([0, 1, 2], sgd(lr=0.1))], seed=1)
    yield run("sgd_momentum_nesterov_weight_decay", f64, "SGD",
              [([0, 1, 2], sgd(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01))], seed=2)
    yield run("sgd_momentum_dampening", f64, "SGD",
              [([0, 1, 2], sgd(lr=0.05, momentum=0.8, dampening=0.3))], seed=3,
              missing_grads={(4, 1), (5, 1), (11, 0)})
    yield run("adamw_default", f64, "AdamW", [([0, 1, 2], adam_defaults)], seed=4)
    yield run("adamw_default_f32", f32, "AdamW", [([0, 1, 2], adam_defaults)], seed=4)
    yield run("adamw_two_groups", f64, "AdamW",
              [([0, 2], dict(lr=3e-2, betas=[0.8, 0.99], eps=1e-8, weight_decay=0.1)),
               ([1], dict(lr=1e-2, betas=[0.9, 0.999], eps=1e-6, weight_decay=0.0))],
              seed=5, missing_grads={(3, 2), (4, 2), (9, 1)})
    # A training loop: clip to norm 4 (steps with small gradients are not clipped), then
    # AdamW under warmup + cosine decay with two groups.
    yield run("adamw_clip_warmup_cosine", f64, "AdamW",
              [([0, 1], dict(lr=2e-2, betas=[0.9, 0.95], eps=1e-8, weight_decay=0.1)),
               ([2], dict(lr=1e-2, betas=[0.9, 0.95], eps=1e-8, weight_decay=0.0))],
              seed=6, grad_scale=lambda step: 0.3 if step % 3 == 0 else 1.0,
              clip=dict(max_norm=4.0, norm_type=2.0),
              schedule=dict(kind="cosine", peak=2e-2, warmup=5, total=20, min_lr=2e-3))
    yield run("sgd_clip_inf_warmup_linear", f64, "SGD",
              [([0, 1, 2], sgd(lr=0.1, momentum=0.9))], seed=7,
              grad_scale=lambda step: 0.5 if step % 4 == 1 else 2.0,
              clip=dict(max_norm=2.5, norm_type="inf"),  # JSON has no infinity literal
              schedule=dict(kind="linear", peak=0.1, warmup=4, total=16, min_lr=0.0))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(here, "..", "..", "tests", "goldens", "optim"))
    args = parser.parse_args()
    torch.set_num_threads(2)
    os.makedirs(args.out, exist_ok=True)
    for g in goldens():
        path = os.path.join(args.out, g["name"] + ".json")
        with open(path, "w") as f:
            json.dump(g, f, separators=(",", ":"))
            f.write("\n")
        print(f"wrote {os.path.relpath(path)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
