#!/usr/bin/env python3
"""BERT-base MLM training step, Strata beside PyTorch in the same run (fp32, 2 threads each).

Usage (after building strata_bert_bench):
  /usr/bin/python3 tools/bench/bert_bench.py --strata build/tools/bench/strata_bert_bench

One step = zero_grad + forward + MLM loss + backward + AdamW, BERT-base (L12 C768 H12 I3072
V30522), B=8, T=128, 15% of positions labelled. Each side runs in its own process per round (so
peak RSS belongs to it): --warmup untimed steps, then --steps timed steps; a side's figure is the
median over rounds of each process's median step time. Rounds alternate the order of the sides
(a shared machine's speed drifts over minutes), and the CPU time other processes took during each run
is printed. Sides:
  strata        models::BertForMaskedLM: the MLM head on the labelled rows only, fused loss head
  torch         BertForMaskedLM as Hugging Face computes it: the head on all B*T positions (the
                recorded reference, ~5.07 s here)
  torch-masked  (--torch-masked) the same PyTorch model gathering the labelled rows first
The reference runs with OPENBLAS_CORETYPE=SkylakeX where OpenBLAS 0.3.21 misdetects an AVX-512
CPU (see gpt_bench.py), and its time is checked against the recorded reference.
"""
import argparse, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import (add_round_flags, best_s, median_s, peak_rss_mb, print_other_processes,  # noqa: E402
                          print_table_header, reference_info, run_round)

BASELINE_S = 5.07  # The recorded reference (docs/benchmarks.md): BERT-base MLM, B=8, T=128, PyTorch 1.13 fp32, 2 threads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True, help="path to strata_bert_bench")
    ap.add_argument("--python", default="/usr/bin/python3", help="python with Debian's torch")
    add_round_flags(ap, B=8, T=128)
    ap.add_argument("--torch-masked", action="store_true", help="also time PyTorch with the head on labelled rows")
    ap.add_argument("--json", default="")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()

    base = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    env_s, env_t = dict(base), dict(base)
    ref = [a.python, os.path.join(HERE, "bert_bench_torch.py"), "--threads", str(a.threads)]
    info = reference_info(ref, env_t)
    print(f"reference: torch {info['torch']}, BLAS {info['blas']} ({info['blas_config']}), core {info['blas_core']}, "
          f"{info['threads']} threads")

    common = ["--B", str(a.B), "--T", str(a.T), "--warmup", str(a.warmup), "--steps", str(a.steps)]
    sides = [("strata", [a.strata] + common, env_s), ("torch", ref + common + ["--head", "all"], env_t)]
    if a.torch_masked:
        sides.append(("torch-masked", ref + common + ["--head", "masked"], env_t))
    res = {name: [] for name, _, _ in sides}
    for rnd in range(a.rounds):
        for name, r in run_round(rnd, sides, lambda name: f"{name:>12}", a.verbose).items():
            res[name].append(r)

    print(f"\nBERT-base MLM train step (fwd+bwd+AdamW), B={a.B} T={a.T}, fp32, {a.threads} threads, {a.rounds} rounds "
          f"x {a.steps} steps; seconds: median over rounds [best step]; ratio = Strata / that side (lower is better)")
    hdr = f"{'side':>12} | {'step':>16} | {'Strata ratio':>12} | {'peak RSS':>9}"
    print_table_header(hdr)
    med = {n: median_s(rs) for n, rs in res.items()}
    summary = {}
    for name, rs in res.items():
        best, rss = best_s(rs), peak_rss_mb(rs)
        summary[name] = dict(median_s=med[name], best_s=best, peak_rss_mb=rss, strata_ratio=med["strata"] / med[name])
        print(f"{name:>12} | {med[name]:7.3f} [{best:6.3f}] | {med['strata'] / med[name]:12.2f} | {rss:6.0f} MB")
    dev = med["torch"] / BASELINE_S - 1
    print(f"reference check: PyTorch {med['torch']:.2f} s vs the recorded reference {BASELINE_S:.2f} s ({dev:+.0%}): "
          + ("within 20%: valid" if abs(dev) <= 0.2 else "outside 20%" + (" (faster)" if dev < 0 else " (SLOWER: not valid)")))
    print_other_processes([r for rs in res.values() for r in rs])
    print("reproduce: /usr/bin/python3 tools/bench/bert_bench.py --strata " + a.strata +
          (" --torch-masked" if a.torch_masked else "") + (f" --rounds {a.rounds}" if a.rounds != 2 else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(reference=info, summary=summary, runs=res), f, indent=1)


if __name__ == "__main__":
    main()
