#!/usr/bin/env python3
"""BERT MLM training-step benchmark, PyTorch reference side (Debian python3-torch 1.13).

The model is BERT-base as Hugging Face's BertForMaskedLM computes it, written out in plain torch
(tools/goldens/bert_goldens.py has the same modules, checked for parity against Strata): word /
position / token-type embeddings + LayerNorm, post-LN layers with separate query/key/value
projections, attention written out (q@k^T / sqrt(hs) + padding mask, softmax, @v: torch 1.13 has
no SDPA), GELU(erf), MLM head (dense + GELU + LayerNorm, decoder tied to the word embeddings +
bias), dropout 0, AdamW lr 1e-4, betas (0.9, 0.999), eps 1e-6, weight decay 0.01. The batch:
random tokens, 15% of the positions labelled (labels -100 elsewhere), as in the recorded
reference figure (docs/benchmarks.md). One step = zero_grad(set_to_none=True) + forward + loss + backward + step +
loss.item().

--head all (the default) applies the MLM head to every position and lets cross_entropy ignore
the -100 labels, as BertForMaskedLM and the recorded reference (docs/benchmarks.md) do; --head masked gathers the
labelled rows first (what Strata does), for a like-for-like comparison of the rest.

Prints its torch version, BLAS and OpenBLAS core, one line per timed step and a final
`RESULT {json}` line. Run by tools/bench/bert_bench.py beside tools/bench/bert_bench.cpp.
"""
import argparse, math, os, sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_step_timing import add_size_flags, add_step_flags, print_result, setup_run, timed_steps  # noqa: E402

EPS = 1e-12


class Layer(nn.Module):
    def __init__(self, C, NH, I):
        super().__init__()
        self.query, self.key, self.value = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.attn_out, self.ln1 = nn.Linear(C, C), nn.LayerNorm(C, eps=EPS)
        self.fc1, self.fc2, self.ln2 = nn.Linear(C, I), nn.Linear(I, C), nn.LayerNorm(C, eps=EPS)
        self.NH = NH

    def forward(self, x, ext):
        B, T, C = x.size()
        hs = C // self.NH
        q, k, v = [t.view(B, T, self.NH, hs).transpose(1, 2) for t in (self.query(x), self.key(x), self.value(x))]
        att = F.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs)) + ext, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = self.ln1(x + self.attn_out(y))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class BertMLM(nn.Module):
    def __init__(self, L, C, NH, I, V, maxT=512):
        super().__init__()
        self.word, self.pos, self.typ = nn.Embedding(V, C, padding_idx=0), nn.Embedding(maxT, C), nn.Embedding(2, C)
        self.ln_e = nn.LayerNorm(C, eps=EPS)
        self.layers = nn.ModuleList([Layer(C, NH, I) for _ in range(L)])
        self.head_dense, self.head_ln = nn.Linear(C, C), nn.LayerNorm(C, eps=EPS)
        self.decoder = nn.Linear(C, V)
        self.decoder.weight = self.word.weight  # tied
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx, types, mask, labels, head):
        B, T = idx.size()
        x = self.ln_e(self.word(idx) + self.pos(torch.arange(T)) + self.typ(types))
        ext = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for lyr in self.layers:
            x = lyr(x, ext)
        if head == "masked":
            sel = labels.view(-1) != -100
            x, labels = x.reshape(-1, x.size(-1))[sel], labels.view(-1)[sel]
        logits = self.decoder(self.head_ln(F.gelu(self.head_dense(x))))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)


def main():
    ap = argparse.ArgumentParser()
    add_step_flags(ap)
    add_size_flags(ap, L=12, C=768, NH=12, I=3072, V=30522, B=8, T=128)
    ap.add_argument("--head", choices=("all", "masked"), default="all")
    a = ap.parse_args()

    info, g = setup_run(a)
    m = BertMLM(a.L, a.C, a.NH, a.I, a.V)
    m.train()
    idx = torch.randint(1, a.V, (a.B, a.T), generator=g)
    types = torch.zeros(a.B, a.T, dtype=torch.long)
    types[:, a.T // 2:] = 1
    mask = torch.ones(a.B, a.T, dtype=torch.long)
    labels = torch.full((a.B, a.T), -100, dtype=torch.long)
    sel = torch.rand(a.B, a.T, generator=g) < 0.15
    labels[sel] = idx[sel]
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)

    loss, times = timed_steps(opt, lambda: m(idx, types, mask, labels, a.head), a.warmup, a.steps)
    print_result(dict(side="torch", tag=a.tag, head=a.head, params=sum(p.numel() for p in m.parameters()),
                      cfg={k: getattr(a, k) for k in ("L", "C", "NH", "I", "V", "B", "T")}, masked=int(sel.sum())),
                 times, loss, info)


if __name__ == "__main__":
    main()
