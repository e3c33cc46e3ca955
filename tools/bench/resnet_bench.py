#!/usr/bin/env python3
"""ResNet training step, Strata beside PyTorch in the same run (fp32, NCHW, 2 threads).

Usage (after building strata_resnet_bench):
  /usr/bin/python3 tools/bench/resnet_bench.py --strata build/tools/bench/strata_resnet_bench

Configs: ResNet-50 B=8 224x224, ResNet-50 with the CIFAR stem B=32 32x32, ResNet-18 B=32
224x224. Each (config, side) runs in its own process (so its peak RSS is its own): --warmup
untimed steps, then --steps timed ones; a side's figure is the median over rounds of each
process's median step. Rounds interleave the configs and alternate which side goes first (this
VM's speed drifts over minutes); the CPU time other processes took meanwhile is printed.
"""
import argparse, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import (best_s, median_s, peak_rss_mb, print_other_processes, print_table_header,  # noqa: E402
                          run_round)

CONFIGS = {
    "r50-224": dict(preset="resnet50", B=8, size=224),
    "r50-cifar": dict(preset="resnet50-cifar", B=32, size=32),
    "r18-224": dict(preset="resnet18", B=32, size=224),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True, help="path to strata_resnet_bench")
    ap.add_argument("--python", default="/usr/bin/python3", help="python with Debian's torch")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    jobs = a.configs.split(",")
    res = {j: {"strata": [], "torch": []} for j in jobs}
    for rnd in range(a.rounds):
        for j in jobs:
            c = CONFIGS[j]
            common = ["--preset", c["preset"], "--B", str(c["B"]), "--size", str(c["size"]), "--warmup",
                      str(a.warmup), "--steps", str(a.steps)]
            sides = [("strata", [a.strata] + common, env),
                     ("torch", [a.python, os.path.join(HERE, "resnet_bench_torch.py"), "--threads", str(a.threads)]
                      + common, env)]
            for side, r in run_round(rnd, sides, lambda side: f"{j:>9} {side:>6}").items():
                res[j][side].append(r)
    print(f"\nResNet train step (fwd+bwd+SGD), fp32, {a.threads} threads, {a.rounds} rounds x {a.steps} steps; "
          f"seconds: median over rounds [best step]; ratio = Strata / PyTorch (lower is better)")
    hdr = f"{'config':>9} | {'batch':>12} | {'Strata':>15} | {'PyTorch':>15} | {'ratio':>5} | {'RSS Strata':>10} | " \
          f"{'RSS PyTorch':>11}"
    print_table_header(hdr)
    summary = {}
    for j in jobs:
        s, t = res[j]["strata"], res[j]["torch"]
        sm, tm, srss, trss = median_s(s), median_s(t), peak_rss_mb(s), peak_rss_mb(t)
        c = CONFIGS[j]
        summary[j] = dict(strata_s=sm, torch_s=tm, ratio=sm / tm, strata_rss_mb=srss, torch_rss_mb=trss)
        print(f"{j:>9} | B={c['B']:>2} {c['size']:>3}x{c['size']:<3} | {sm:7.3f} [{best_s(s):6.3f}] | "
              f"{tm:7.3f} [{best_s(t):6.3f}] | {sm / tm:5.2f} | {srss:7.0f} MB | {trss:8.0f} MB")
    print_other_processes([r for j in jobs for side in ("strata", "torch") for r in res[j][side]])
    print("reproduce: /usr/bin/python3 tools/bench/resnet_bench.py --strata " + a.strata +
          (f" --configs {a.configs}" if a.configs != ",".join(CONFIGS) else "") +
          (f" --rounds {a.rounds}" if a.rounds != 2 else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(summary=summary, runs=res), f, indent=1)


if __name__ == "__main__":
    main()
