#!/usr/bin/env python3
"""Tensor-cache benchmark driver: runs strata_cache_bench once per policy (one process each, so
each row's process peak RSS is its own) and prints a markdown table of step time and the three
memory figures, with ratios against keep-all measured in the same run.

  python3 tools/bench/cache_bench.py --bench build/tools/bench/strata_cache_bench \\
      --preset gpt2 -b 4 -t 256 --spill-dir /tmp
"""
import argparse
import json
import os
import subprocess
import sys

# Only the rows that use the NVMe tier open it (its staging buffers are memory too).
POLICIES = [
    ("keep-all", ["--policy", "keep"]),
    ("recompute every block", ["--policy", "recompute"]),
    ("NVMe every block but the last", ["--policy", "nvme", "--spill-dir", "SPILL"]),
    ("host every block but the last", ["--policy", "host", "--host-pool", "HOSTPOOL"]),
    ("SSDTrain adaptive (NVMe)", ["--policy", "adaptive", "--spill-dir", "SPILL"]),
]


def run(bench, common, extra, env):
    cmd = [bench] + common + extra
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode == 3:
        return None, p.stderr.strip()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):]), p.stdout
    sys.exit(f"no RESULT line from {' '.join(cmd)}:\n{p.stdout}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/tools/bench/strata_cache_bench")
    ap.add_argument("--preset", default="gpt2")
    ap.add_argument("--n-layer", type=int, default=0)
    ap.add_argument("-b", "--batch", type=int, default=4)
    ap.add_argument("-t", "--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--spill-dir", default="/tmp")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--host-pool", default="16G", help="host tier pool (reserved, committed as used)")
    ap.add_argument("--budget", action="append", default=[], help="also run --memory-budget SIZE (repeatable)")
    ap.add_argument("--only", default="", help="comma-separated row indices to run (default: all)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds over the policies")
    a = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    common = ["--preset", a.preset, "-b", str(a.batch), "-t", str(a.seq), "--steps", str(a.steps),
              "--warmup", str(a.warmup)]
    if a.n_layer:
        common += ["--n-layer", str(a.n_layer)]
    rows = list(POLICIES) + [(f"memory budget {b}", ["--memory-budget", b, "--spill-dir", "SPILL"]) for b in a.budget]
    only = {int(i) for i in a.only.split(",") if i}
    picked = [(name, extra) for i, (name, extra) in enumerate(rows) if not only or i in only]
    # Rounds interleave the policies, so that drift in the machine's speed (a shared machine's step time
    # wanders by 2x over minutes) hits every row alike; each row reports its median round.
    by_name = {name: [] for name, _ in picked}
    refused = {}
    for rnd in range(a.rounds):
        for name, extra in picked:
            if name in refused:
                continue
            extra = [{"HOSTPOOL": a.host_pool, "SPILL": a.spill_dir}.get(e, e) for e in extra]
            r, out = run(a.bench, common, extra, env)
            print(f"round {rnd} {name}: {'refused: ' + out if r is None else json.dumps(r)}", file=sys.stderr, flush=True)
            if r is None:
                refused[name] = out
            else:
                by_name[name].append(r)
    results = []
    for name, _ in picked:
        if name in refused:
            results.append((name, None, refused[name]))
            continue
        rs = sorted(by_name[name], key=lambda r: r["step_s"])
        results.append((name, rs[len(rs) // 2], ""))
    base = next((r for n, r, _ in results if r and r["policy"] == "keep" and not r["budget"]), None)
    print(f"\n{a.preset} (n_layer {a.n_layer or 'preset'}), B={a.batch}, T={a.seq}, {a.threads} threads, "
          f"median over {a.rounds} interleaved rounds of each row's median of {a.steps} steps after {a.warmup} warm-up\n")
    print("| policy | step time | vs keep-all | activation peak | vs keep-all | step peak | process peak RSS | NVMe out/in |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r, out in results:
        if r is None:
            print(f"| {name} | refused: {out} | | | | | | |")
            continue
        t_ratio = f"{r['step_s'] / base['step_s']:.2f}x" if base else "-"
        a_ratio = f"{base['activation_peak_mb'] / max(r['activation_peak_mb'], 1e-9):.1f}x less" if base else "-"
        print(f"| {name} | {r['step_s']:.2f} s | {t_ratio} | {r['activation_peak_mb']:.0f} MB | {a_ratio} | "
              f"{r['step_peak_mb']:.0f} MB | {r['rss_peak_mb']:.0f} MB | "
              f"{r['nvme_written_mb']:.0f}/{r['nvme_read_mb']:.0f} MB |")


if __name__ == "__main__":
    main()
