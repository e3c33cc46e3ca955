"""What the fixture generators (gpt_goldens.py, bert_goldens.py, resnet_goldens.py,
gpt_weights_goldens.py) share: the safetensors writer (tools/pyg_hetero_to_safetensors.py's: no extra packages), float64
models whose initial parameters are exactly float32, and the AdamW loss curve they record."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyg_hetero_to_safetensors import write_safetensors  # noqa: E402,F401  (the one safetensors writer)


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
