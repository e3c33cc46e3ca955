#!/usr/bin/env python3
"""GEMM side by side: Strata vs PyTorch vs NumPy, f32, same machine, same run.

Usage (after building):
  OMP_NUM_THREADS=2 /usr/bin/python3 tools/bench/gemm_bench.py --strata build/tools/bench/strata_gemm_bench
Reports GFLOP/s (median [best]) and the ratio Strata / reference for 1024^3 and 4096x768x768.
References run in child processes, rounds alternating with Strata so a disturbance hits all
alike: PyTorch and NumPy as installed, and, on AVX-512 CPUs, again with
OPENBLAS_CORETYPE=SkylakeX (OpenBLAS picks kernels by CPU model and falls back to SSE3
"Prescott" kernels on models it does not know, such as some virtualized Xeons).
"""
import argparse, json, os, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import has_avx512  # noqa: E402

SHAPES = [(1024, 1024, 1024), (4096, 768, 768)]

CHILD = r"""
import json, statistics, sys, time
import numpy as np
threads, reps = int(sys.argv[1]), int(sys.argv[2])
try:
    import torch
    torch.set_num_threads(threads)
except ImportError:
    torch = None
def med(fn):
    for _ in range(3): fn()
    s = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); s.append(time.perf_counter() - t0)
    return statistics.median(s)
out = {}
for (M, K, N) in %s:
    fl = 2.0 * M * N * K
    a = np.random.randn(M, K).astype(np.float32); b = np.random.randn(K, N).astype(np.float32)
    r = {"numpy": fl / med(lambda: a @ b) * 1e-9}
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        r["torch"] = fl / med(lambda: ta @ tb) * 1e-9
    out["%%dx%%dx%%d" %% (M, K, N)] = r
print(json.dumps(out))
""" % (SHAPES,)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True, help="path to strata_gemm_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    refs = {"default": dict(env)}
    if has_avx512() and "OPENBLAS_CORETYPE" not in env:
        refs["SkylakeX"] = dict(env, OPENBLAS_CORETYPE="SkylakeX")
    keys = ["%dx%dx%d" % s for s in SHAPES]
    res = {k: {} for k in keys}
    for _ in range(args.rounds):
        out = subprocess.run([args.strata, "--reps", str(args.reps)], env=env, check=True, capture_output=True,
                             text=True).stdout
        for line in out.strip().splitlines():
            r = json.loads(line)
            res["%dx%dx%d" % (r["M"], r["K"], r["N"])].setdefault("strata", []).append(r["median_gflops"])
        for tag, renv in refs.items():
            o = subprocess.run([sys.executable, "-c", CHILD, str(args.threads), str(args.reps)], env=renv, check=True,
                               capture_output=True, text=True).stdout
            for k, r in json.loads(o).items():
                for lib, v in r.items():
                    res[k].setdefault(lib if tag == "default" else f"{lib}[{tag}]", []).append(v)
    cols = [c for c in res[keys[0]] if c != "strata"]
    print(f"GEMM f32, {args.threads} threads, {args.rounds} rounds x {args.reps} reps; GFLOP/s median over rounds "
          f"[best round], ratio = strata / reference")
    print(f"{'shape':>16} {'strata':>16} " + " ".join(f"{c:>22}" for c in cols))
    for k in keys:
        st = statistics.median(res[k]["strata"])
        cells = [f"{statistics.median(res[k][c]):6.1f} [{max(res[k][c]):6.1f}] x{st / statistics.median(res[k][c]):5.2f}"
                 for c in cols]
        print(f"{k:>16} {st:7.1f} [{max(res[k]['strata']):6.1f}] " + " ".join(f"{c:>22}" for c in cells))
    print(f"reproduce: OMP_NUM_THREADS={args.threads} /usr/bin/python3 tools/bench/gemm_bench.py --strata {args.strata}")


if __name__ == "__main__":
    main()
