#!/usr/bin/env python3
"""GPT training step, Strata beside PyTorch in the same run: fp32 (and bf16 autocast with --bf16).

Usage (after building strata_gpt_bench):
  /usr/bin/python3 tools/bench/gpt_bench.py --strata build/tools/bench/strata_gpt_bench [--bf16]

Configs: GPT-2 124M (L12 C768 H12) and small (L4 C256 H4), V=50257 padded to 50304, maxT 1024,
B=4, T=256. Each (config, precision) runs in its own process per side (so peak RSS belongs to
it): --warmup untimed steps, then --steps timed steps; a side's figure is the median over
rounds of each process's median step time. Rounds alternate which side goes first, so a
disturbance from other processes hits both alike; the CPU time other processes took during
each run is printed (cores), since this machine is shared.

The PyTorch reference (tools/bench/gpt_bench_torch.py) must be a valid one (docs/benchmarks.md):
Debian torch with the OpenMP OpenBLAS, 2 threads, and OpenBLAS on its AVX-512 kernels. OpenBLAS
0.3.21 picks kernels by CPU model and falls back to SSE3 "Prescott" kernels on models it does
not know (some virtualized Xeons): then the reference runs with OPENBLAS_CORETYPE=SkylakeX. Its
fp32 step time is checked against the recorded reference (within 20%).
"""
import argparse, json, os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import (AVX512_CORES, add_round_flags, best_s, median_s, peak_rss_mb,  # noqa: E402
                          print_other_processes, print_table_header, reference_info, run_round)

CONFIGS = {
    "124m": dict(L=12, C=768, NH=12),
    "small": dict(L=4, C=256, NH=4),
}
# The recorded reference (docs/benchmarks.md): PyTorch 1.13 fp32, 2 threads, B=4 T=256 (median seconds).
BASELINE_S = {"124m": 6.86, "small": 1.16}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True, help="path to strata_gpt_bench")
    ap.add_argument("--python", default="/usr/bin/python3", help="python with Debian's torch")
    ap.add_argument("--configs", default="124m,small")
    ap.add_argument("--bf16", action="store_true", help="also compare bf16 autocast")
    ap.add_argument("--fp32", type=int, default=1, help="compare fp32 (0 to skip)")
    add_round_flags(ap, B=4, T=256)
    ap.add_argument("--json", default="", help="write all results here")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()

    base = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    env_s = dict(base)
    env_t = dict(base)
    ref = [a.python, os.path.join(HERE, "gpt_bench_torch.py"), "--threads", str(a.threads)]
    info = reference_info(ref, env_t, " (not its AVX-512 kernels)")
    print(f"reference: torch {info['torch']}, BLAS {info['blas']} ({info['blas_config']}), core {info['blas_core']}, "
          f"{info['threads']} threads, mkldnn {info['mkldnn']}")
    if info["threads"] != a.threads or info["blas_core"] not in AVX512_CORES:
        print("WARNING: the reference is not on the AVX-512 OpenBLAS kernels with the requested threads: not a "
              "valid reference")

    modes = (["fp32"] if a.fp32 else []) + (["bf16"] if a.bf16 else [])
    jobs = [(c, m) for c in a.configs.split(",") for m in modes]
    res = {j: {"strata": [], "torch": []} for j in jobs}
    for rnd in range(a.rounds):
        for (cfg, mode) in jobs:
            c = CONFIGS[cfg]
            common = ["--L", str(c["L"]), "--C", str(c["C"]), "--NH", str(c["NH"]), "--B", str(a.B), "--T", str(a.T),
                      "--warmup", str(a.warmup), "--steps", str(a.steps)]
            flags = ["--bf16"] if mode == "bf16" else []
            sides = [("strata", [a.strata] + common + flags + ["--gemm-rate"], env_s),
                     ("torch", ref + common + flags, env_t)]
            round_results = run_round(rnd, sides, lambda side: f"{cfg:>5} {mode} {side:>6}", a.verbose, rss_width=7)
            for side, r in round_results.items():
                res[(cfg, mode)][side].append(r)

    print(f"\nGPT train step (fwd+bwd+AdamW), B={a.B} T={a.T}, {a.threads} threads, {a.rounds} rounds x {a.steps} "
          f"steps; seconds: median over rounds [best step]; ratio = Strata / PyTorch (lower is better)")
    hdr = f"{'config':>7} {'prec':>4} | {'Strata':>15} | {'PyTorch':>15} | {'ratio':>5} | {'RSS Strata':>10} | " \
          f"{'RSS PyTorch':>11} | {'Strata GEMM-rate frac':>21}"
    print_table_header(hdr)
    summary = {}
    for (cfg, mode) in jobs:
        s, t = res[(cfg, mode)]["strata"], res[(cfg, mode)]["torch"]
        sm, tm, smin, tmin = median_s(s), median_s(t), best_s(s), best_s(t)
        srss, trss = peak_rss_mb(s), peak_rss_mb(t)
        gflop = s[0]["step_gflop"]
        rate = statistics.median(r["gemm_gflops"] for r in s)
        frac = gflop / sm / rate if rate > 0 else float("nan")
        summary[f"{cfg}/{mode}"] = dict(strata_s=sm, torch_s=tm, ratio=sm / tm, strata_rss_mb=srss, torch_rss_mb=trss,
                                        step_gflop=gflop, gemm_gflops=rate, gemm_rate_fraction=frac)
        print(f"{cfg:>7} {mode:>4} | {sm:7.3f} [{smin:6.3f}] | {tm:7.3f} [{tmin:6.3f}] | {sm / tm:5.2f} | "
              f"{srss:7.0f} MB | {trss:8.0f} MB | {frac:6.2f} ({gflop:.0f} GFLOP, {rate:.0f} GFLOP/s)")
    for cfg in a.configs.split(","):
        if (cfg, "fp32") in res and cfg in BASELINE_S:
            tm = summary[f"{cfg}/fp32"]["torch_s"]
            dev = tm / BASELINE_S[cfg] - 1
            verdict = ("within 20%: valid" if abs(dev) <= 0.20 else
                       "FASTER than the recorded reference by more than 20%: outside the window, on the strong side (this CPU "
                       "is faster than the one the recorded reference was measured on; the reference is not crippled)"
                       if dev < 0 else "SLOWER than the recorded reference by more than 20%: NOT a valid reference")
            print(f"reference check {cfg}: PyTorch fp32 {tm:.2f} s vs the recorded reference {BASELINE_S[cfg]:.2f} s "
                  f"({dev:+.0%}): {verdict}")
    print_other_processes([r for j in jobs for side in ("strata", "torch") for r in res[j][side]])
    print("reproduce: /usr/bin/python3 tools/bench/gpt_bench.py --strata " + a.strata +
          (" --bf16" if a.bf16 else "") + (f" --configs {a.configs}" if a.configs != "124m,small" else "") +
          (f" --rounds {a.rounds}" if a.rounds != 2 else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(reference=info, reference_env={k: env_t[k] for k in ("OPENBLAS_CORETYPE",) if k in env_t},
                           summary=summary, runs={f"{c}/{m}": v for (c, m), v in res.items()}), f, indent=1)


if __name__ == "__main__":
    main()
