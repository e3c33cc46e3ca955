"""What the fixture generators (gpt_goldens.py, bert_goldens.py, resnet_goldens.py,
gpt_weights_goldens.py) share: the safetensors writer (tools/pyg_hetero_to_safetensors.py's: no extra packages), float64
models whose initial parameters are exactly float32, the AdamW loss curve they record, their --out folder and
the tensors they store."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyg_hetero_to_safetensors import write_safetensors  # noqa: E402,F401  (the one safetensors writer)


def start_fixtures(script, name):
    """Parses a generator's --out (default tests/goldens/<name>, found from the generator's path `script`), creates
    that folder and runs torch on 2 threads, as the fixtures were made; returns the folder."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(script), "..", "..", "tests", "goldens", name))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    return args.out


def write_fixture(out_dir, file_name, tensors, meta):
    """Writes `tensors` and `meta` to <out_dir>/<file_name> (safetensors); returns the file's path."""
    path = os.path.join(out_dir, file_name)
    write_safetensors(path, tensors, meta)
    return path


def state_f32(model, prefix="param."):
    """A float32 copy of every tensor of the model's state, named `prefix` + its name."""
    return {prefix + n: t.detach().float().clone() for n, t in model.state_dict().items()}


def seeded_models(configs, make_model):
    """For each config: (its name, the config, make_model(config) built under seed 1234 in float64 with float32-exact
    parameters, that model's initial state_f32, and the batch's generator seeded with 99)."""
    for name, c in configs.items():
        torch.manual_seed(1234)
        model = as_f32_exact(make_model(c))
        yield name, c, model, state_f32(model), torch.Generator().manual_seed(99)


def gradients(model, prefix="grad."):
    """Every parameter's gradient as float32, named `prefix` + the parameter's name."""
    return {prefix + n: p.grad.detach().float() for n, p in model.named_parameters()}


def as_f32_exact(model):
    """`model` in float64 with its initial parameters rounded to float32 (so Strata's f32 copy is exact)."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.float().double())
    return model.double()


def adamw_losses(model, loss_fn, steps, weight_decay, betas, eps, lr=1e-3, clip=1.0):
    """The loss before each of `steps` AdamW steps on the same batch (`loss_fn()`), with weight
    decay on >= 2-D parameters only and the gradient norm clipped at `clip`."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=betas, eps=eps)
    losses = []
    model.zero_grad(set_to_none=True)
    for step in range(steps):
        l = loss_fn()
        losses.append(l.item())
        opt.zero_grad(set_to_none=True)
        l.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
    return losses
