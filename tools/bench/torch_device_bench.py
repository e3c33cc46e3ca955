#!/usr/bin/env python3
"""PyTorch references for tools/gpu_bench.sh, on a device: one training step of GPT-2 (nanoGPT as
its users run it), BERT-base MLM (Hugging Face's BertForMaskedLM) or ResNet-50 (torchvision), as
PyTorch's users tune them: TF32 on, bf16 autocast around forward + loss, F.scaled_dot_product_attention
(flash on CUDA), AdamW(fused=True) (SGD with momentum for ResNet, as Strata's resnet_bench), optional
torch.compile and channels-last. The shapes and optimizer settings are those of Strata's
strata_gpt_bench, strata_bert_bench and strata_resnet_bench.

One step = zero_grad(set_to_none=True) + forward + loss + backward + optimizer.step() + loss.item()
(the item waits for the device). The first --warmup steps are untimed: they hold torch.compile's
compilation. --profile N profiles N more steps with torch.profiler and writes the top 20 ops by
device time to --profile-out. Prints one line per step and `RESULT {json}`.
"""
import argparse, json, math, statistics, time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attn(nn.Module):
    def __init__(s, C, NH):
        super().__init__()
        s.c_attn, s.c_proj, s.NH = nn.Linear(C, 3 * C), nn.Linear(C, C), NH

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.c_attn(x).split(C, 2)
        q, k, v = [t.view(B, T, s.NH, C // s.NH).transpose(1, 2) for t in (q, k, v)]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(s, C, NH):
        super().__init__()
        s.ln_1, s.attn, s.ln_2 = nn.LayerNorm(C), Attn(C, NH), nn.LayerNorm(C)
        s.c_fc, s.c_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(s, x):
        x = x + s.attn(s.ln_1(x))
        return x + s.c_proj(F.gelu(s.c_fc(s.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(s, L, C, NH, Vp, maxT):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(Vp, C), nn.Embedding(maxT, C)
        s.h = nn.ModuleList([Block(C, NH) for _ in range(L)])
        s.ln_f, s.lm_head = nn.LayerNorm(C), nn.Linear(C, Vp, bias=False)
        s.lm_head.weight = s.wte.weight
        s.Vp = Vp
        for p in s.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(s, idx, tgt):
        x = s.wte(idx) + s.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in s.h:
            x = b(x)
        return F.cross_entropy(s.lm_head(s.ln_f(x)).view(-1, s.Vp), tgt.view(-1))


def gpt_setup(a, dev):
    Vp = (a.V + 127) // 128 * 128
    m = GPT(a.L, a.C, a.NH, Vp, max(1024, a.T)).to(dev)
    x = torch.randint(0, a.V, (a.B, a.T), device=dev)
    y = torch.randint(0, a.V, (a.B, a.T), device=dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, fused=True)
    return m, opt, (x, y), lambda f, b: f(*b)


def bert_setup(a, dev):
    from transformers import BertConfig, BertForMaskedLM
    cfg = BertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="sdpa")
    m = BertForMaskedLM(cfg).to(dev)
    g = torch.Generator().manual_seed(1234)
    ids = torch.randint(1, cfg.vocab_size, (a.B, a.T), generator=g)
    labels = torch.where(torch.rand(a.B, a.T, generator=g) < 0.15, ids, torch.full_like(ids, -100))
    types = (torch.arange(a.T) >= a.T // 2).long().expand(a.B, a.T).contiguous()
    batch = [t.to(dev) for t in (ids, types, torch.ones_like(ids), labels)]
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01, fused=True)
    return m, opt, batch, lambda f, b: f(input_ids=b[0], token_type_ids=b[1], attention_mask=b[2], labels=b[3]).loss


def resnet_setup(a, dev):
    import torchvision
    m = torchvision.models.resnet50().to(dev)
    x = torch.randn(a.B, 3, a.size, a.size, device=dev)
    if a.channels_last:
        m, x = m.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    y = (torch.arange(a.B, device=dev) * 37) % 1000
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    return m, opt, (x, y), lambda f, b: F.cross_entropy(f(b[0]), b[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["gpt", "bert", "resnet"], default="gpt")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--L", type=int, default=12); ap.add_argument("--C", type=int, default=768)
    ap.add_argument("--NH", type=int, default=12); ap.add_argument("--V", type=int, default=50257)
    ap.add_argument("--B", type=int, default=8); ap.add_argument("--T", type=int, default=1024)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--warmup", type=int, default=3); ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--bf16", action="store_true"); ap.add_argument("--no-tf32", action="store_true")
    ap.add_argument("--compile", action="store_true"); ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--profile", type=int, default=0); ap.add_argument("--profile-out", default="")
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = not a.no_tf32
    m, opt, batch, loss_of = {"gpt": gpt_setup, "bert": bert_setup, "resnet": resnet_setup}[a.model](a, dev)
    m.train()
    fwd = torch.compile(m) if a.compile else m

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.bf16):
            loss = loss_of(fwd, batch)
        loss.backward()
        opt.step()
        return loss.item()

    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        loss = step()
        dt = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(dt)
        print(f"step {i}{'' if i >= a.warmup else ' (untimed)'}: loss {loss:.4f} {dt * 1e3:.1f} ms", flush=True)
    if a.profile > 0:
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
        with profile(activities=acts) as prof:
            for _ in range(a.profile):
                step()
        key = "cuda_time_total" if dev.type == "cuda" else "cpu_time_total"
        table = prof.key_averages().table(sort_by=key, row_limit=20)
        if a.profile_out:
            with open(a.profile_out, "w") as f:
                f.write(table)
        else:
            print(table)
    peak = torch.cuda.max_memory_allocated(dev) / 1e6 if dev.type == "cuda" else 0.0
    params = sum(p.numel() for p in m.parameters())
    print("RESULT " + json.dumps(dict(side="torch", tag=a.tag, model=a.model, torch=torch.__version__, device=str(dev),
                                      name=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                                      bf16=a.bf16, tf32=not a.no_tf32, compile=a.compile, B=a.B, T=a.T, params=params,
                                      median_ms=1e3 * statistics.median(times), min_ms=1e3 * min(times),
                                      peak_device_mb=peak, loss=loss)), flush=True)


if __name__ == "__main__":
    main()
