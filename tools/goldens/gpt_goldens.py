#!/usr/bin/env python3
"""PyTorch parity fixtures for Strata's GPT (models/gpt): run by hand, outputs committed.

  /usr/bin/python3 tools/goldens/gpt_goldens.py [--out tests/goldens/gpt]

For each config it builds a nanoGPT-style GPT-2 in float64 (pre-LN, tied wte/lm_head,
tanh GELU, causal attention, GPT-2 init), runs one batch and writes a safetensors file with:
initial parameters (nanoGPT names), idx, targets, logits, loss, every parameter's gradient,
and in __metadata__ the config and the losses of 10 AdamW steps (betas 0.9/0.95, eps 1e-8,
lr 1e-3, weight decay 0.1 on >=2-D parameters only, grad clipping at 1.0, same batch each step).
Tensors are stored as float32 (initial parameters are exactly float32; outputs are rounded),
idx/targets as int64. The safetensors file is written by hand (no extra packages).
"""
import json, math, os, sys
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_file import adamw_losses, gradients, seeded_models, start_fixtures, write_fixture  # noqa: E402

CONFIGS = {
    "pow2": dict(n_layer=2, n_head=4, n_embd=64, block_size=32, vocab_size=128, B=2, T=32),
    "odd": dict(n_layer=3, n_head=6, n_embd=96, block_size=48, vocab_size=211, B=2, T=48),
}


class Attn(nn.Module):
    def __init__(s, C, NH):
        super().__init__()
        s.c_attn = nn.Linear(C, 3 * C)
        s.c_proj = nn.Linear(C, C)
        s.NH = NH

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.c_attn(x).split(C, dim=2)
        hs = C // s.NH
        q, k, v = [t.view(B, T, s.NH, hs).transpose(1, 2) for t in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return s.c_proj(y)


class MLP(nn.Module):
    def __init__(s, C):
        super().__init__()
        s.c_fc = nn.Linear(C, 4 * C)
        s.c_proj = nn.Linear(4 * C, C)

    def forward(s, x):
        return s.c_proj(F.gelu(s.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(s, C, NH):
        super().__init__()
        s.ln_1, s.attn, s.ln_2, s.mlp = nn.LayerNorm(C), Attn(C, NH), nn.LayerNorm(C), MLP(C)

    def forward(s, x):
        x = x + s.attn(s.ln_1(x))
        return x + s.mlp(s.ln_2(x))


class GPT(nn.Module):
    def __init__(s, c):
        super().__init__()
        C = c["n_embd"]
        s.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab_size"], C), wpe=nn.Embedding(c["block_size"], C),
            h=nn.ModuleList([Block(C, c["n_head"]) for _ in range(c["n_layer"])]), ln_f=nn.LayerNorm(C)))
        s.lm_head = nn.Linear(C, c["vocab_size"], bias=False)
        s.lm_head.weight = s.transformer.wte.weight
        for n, p in s.named_parameters():
            if n.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c["n_layer"]))
            elif n.endswith(".bias"):
                nn.init.zeros_(p)
            elif "ln_" in n:
                nn.init.ones_(p)
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(s, idx, targets):
        B, T = idx.shape
        x = s.transformer.wte(idx) + s.transformer.wpe(torch.arange(T))
        for b in s.transformer.h:
            x = b(x)
        logits = s.lm_head(s.transformer.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    out_dir = start_fixtures(__file__, "gpt")
    for name, c, model, out, g in seeded_models(CONFIGS, GPT):
        idx = torch.randint(0, c["vocab_size"], (c["B"], c["T"]), generator=g)
        targets = torch.randint(0, c["vocab_size"], (c["B"], c["T"]), generator=g)
        logits, loss = model(idx, targets)
        loss.backward()
        out["idx"], out["targets"] = idx, targets
        out["logits"] = logits.detach().float()
        out.update(gradients(model))
        losses = adamw_losses(model, lambda: model(idx, targets)[1], 10, weight_decay=0.1, betas=(0.9, 0.95), eps=1e-8)
        meta = {"config": json.dumps(c), "loss": repr(loss.item()), "adamw_losses": json.dumps(losses)}
        path = write_fixture(out_dir, f"gpt_{name}.safetensors", out, meta)
        print(f"wrote {path}: loss {loss.item():.6f}, 10-step losses {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
