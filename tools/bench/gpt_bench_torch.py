#!/usr/bin/env python3
"""GPT training-step benchmark, PyTorch reference side (Debian python3-torch 1.13).

The model and optimizer are those of the recorded reference figures (docs/benchmarks.md)
(nanoGPT-style GPT-2: tied wte/lm_head, learned wpe over maxT positions, pre-LN, GELU(tanh),
causal attention written out as q@k^T, mask, softmax, @v (torch 1.13 has no SDPA), biases on,
dropout 0, vocab padded to a multiple of 128, AdamW lr 1e-4, betas (0.9, 0.999), eps 1e-8,
weight decay 0). One step = zero_grad(set_to_none=True) + forward + loss + backward +
optimizer.step() + loss.item(). --bf16 runs forward and loss under
torch.autocast(device_type="cpu", dtype=torch.bfloat16) (fp32 master weights, as PyTorch AMP).

Prints its torch version, BLAS library and OpenBLAS core type, thread count, one line per
timed step, and a final `RESULT {json}` line (median/min step time, peak RSS from getrusage).
Run by tools/bench/gpt_bench.py beside Strata's tools/bench/gpt_bench.cpp.
"""
import argparse, math, os, sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_step_timing import add_size_flags, add_step_flags, print_result, setup_run, timed_steps  # noqa: E402


class CausalSelfAttention(nn.Module):
    def __init__(self, C, NH, maxT):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.NH = NH
        self.register_buffer("mask", torch.tril(torch.ones(maxT, maxT)).view(1, 1, maxT, maxT))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        hs = C // self.NH
        q = q.view(B, T, self.NH, hs).transpose(1, 2)
        k = k.view(B, T, self.NH, hs).transpose(1, 2)
        v = v.view(B, T, self.NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, C, NH, maxT):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C)
        self.attn = CausalSelfAttention(C, NH, maxT)
        self.ln_2 = nn.LayerNorm(C)
        self.mlp = MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, L, C, NH, V, maxT):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(maxT, C)
        self.h = nn.ModuleList([Block(C, NH, maxT) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, V, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        for n, p in self.named_parameters():
            if n.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * L))
            elif p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx, targets):
        B, T = idx.size()
        pos = torch.arange(T, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.h:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    add_step_flags(ap)
    add_size_flags(ap, L=12, C=768, NH=12, V=50257, maxT=1024, B=4, T=256)
    ap.add_argument("--Vp", type=int, default=None, help="padded vocab (default V rounded up to 128)")
    ap.add_argument("--bf16", action="store_true", help="torch.autocast(cpu, bfloat16) around forward + loss")
    a = ap.parse_args()
    if a.Vp is None:
        a.Vp = (a.V + 127) // 128 * 128

    info, g = setup_run(a)
    m = GPT(a.L, a.C, a.NH, a.Vp, a.maxT)
    m.train()
    idx = torch.randint(0, a.V, (a.B, a.T), generator=g)
    tgt = torch.randint(0, a.V, (a.B, a.T), generator=g)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)

    def loss_fn():
        if a.bf16:
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                return m(idx, tgt)
        return m(idx, tgt)

    loss, times = timed_steps(opt, loss_fn, a.warmup, a.steps)
    print_result(dict(side="torch", tag=a.tag, params=sum(p.numel() for p in m.parameters()),
                      cfg={k: getattr(a, k) for k in ("L", "C", "NH", "V", "Vp", "B", "T")}, bf16=a.bf16),
                 times, loss, info)


if __name__ == "__main__":
    main()
