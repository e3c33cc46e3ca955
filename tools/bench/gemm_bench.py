#!/usr/bin/env python3
"""GEMM side by side: Strata vs PyTorch vs NumPy, f32, same machine, same run.

Usage (after building):
  OMP_NUM_THREADS=2 /usr/bin/python3 tools/bench/gemm_bench.py --strata build/tools/bench/strata_gemm_bench
Reports GFLOP/s (median [best]) and the ratio Strata / reference for 1024^3 and 4096x768x768.
PyTorch and NumPy are set to the same thread count; rounds alternate between the three so a
disturbance hits all of them alike.
"""
import argparse, json, os, statistics, subprocess, sys, time

def time_fn(fn, reps):
    for _ in range(3):
        fn()
    secs = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); secs.append(time.perf_counter() - t0)
    return secs

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True, help="path to strata_gemm_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    import numpy as np
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    shapes = [(1024, 1024, 1024), (4096, 768, 768)]
    res = {s: {"strata": [], "torch": [], "numpy": []} for s in shapes}
    for _ in range(args.rounds):
        out = subprocess.run([args.strata, "--reps", str(args.reps)], env=env, check=True,
                             capture_output=True, text=True).stdout
        for line in out.strip().splitlines():
            r = json.loads(line)
            res[(r["M"], r["K"], r["N"])]["strata"].append(r["median_gflops"])
        for (M, K, N) in shapes:
            fl = 2.0 * M * N * K
            a = np.random.randn(M, K).astype(np.float32); b = np.random.randn(K, N).astype(np.float32)
            res[(M, K, N)]["numpy"].append(fl / statistics.median(time_fn(lambda: a @ b, args.reps)) * 1e-9)
            if torch is not None:
                ta = torch.from_numpy(a); tb = torch.from_numpy(b)
                res[(M, K, N)]["torch"].append(fl / statistics.median(time_fn(lambda: ta @ tb, args.reps)) * 1e-9)
    print(f"GEMM f32, {args.threads} threads, {args.rounds} rounds x {args.reps} reps (GFLOP/s: median of round medians [best])")
    print(f"{'shape':>16} {'strata':>16} {'pytorch':>16} {'numpy':>16} {'strata/torch':>13} {'strata/numpy':>13}")
    for s in shapes:
        r = res[s]
        def fmt(v):
            return f"{statistics.median(v):7.1f} [{max(v):6.1f}]" if v else "n/a"
        st = statistics.median(r["strata"])
        rt = st / statistics.median(r["torch"]) if r["torch"] else float("nan")
        rn = st / statistics.median(r["numpy"])
        print(f"{'x'.join(map(str, s)):>16} {fmt(r['strata']):>16} {fmt(r['torch']):>16} {fmt(r['numpy']):>16} {rt:13.3f} {rn:13.3f}")
    print("reproduce: OMP_NUM_THREADS=%d /usr/bin/python3 %s --strata %s" % (args.threads, " ".join(sys.argv[0:1]), args.strata))

if __name__ == "__main__":
    main()
