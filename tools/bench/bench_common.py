"""What the Strata-beside-PyTorch benchmarks (gpt_bench.py, bert_bench.py, resnet_bench.py, gemm_bench.py) share:
running one side in a child process, the OpenBLAS reference check, and the per-side figures of the tables."""
import json, os, resource, statistics, subprocess, sys, time

AVX512_CORES = ("SkylakeX", "Cooperlake", "SapphireRapids")


def busy_jiffies():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4]  # minus idle, iowait


def run_child(cmd, env):
    """Runs cmd; returns (RESULT dict, stdout, cores other processes used meanwhile)."""
    hz = os.sysconf("SC_CLK_TCK")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    j0, t0 = busy_jiffies(), time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    j1, t1 = busy_jiffies(), time.monotonic()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    own = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    foreign = max(0.0, ((j1 - j0) / hz - own) / max(t1 - t0, 1e-9))
    res = None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
    if res is None:
        sys.exit(f"no RESULT line from {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return res, p.stdout, foreign


def run_side(cmd, env):
    """run_child, with the cores other processes used kept in the RESULT as foreign_cores; returns (RESULT, stdout)."""
    r, out, foreign = run_child(cmd, env)
    r["foreign_cores"] = foreign
    return r, out


def run_round(rnd, sides, label, verbose=False, rss_width=6):
    """Runs round `rnd` of (side, cmd, env) `sides`, in reverse order on odd rounds (a shared machine's speed drifts
    over minutes, so a disturbance hits every side alike), printing a line per side headed by `label(side)` (and the
    child's output with `verbose`); returns {side: RESULT}."""
    results = {}
    for side, cmd, env in (sides if rnd % 2 == 0 else list(reversed(sides))):
        r, out = run_side(cmd, env)
        results[side] = r
        if verbose:
            print(out)
        print(f"  round {rnd} {label(side)}: median {r['median_ms'] / 1e3:6.3f} s [min {r['min_ms'] / 1e3:6.3f}], "
              f"peak RSS {r['peak_rss_mb']:{rss_width}.0f} MB, other processes {r['foreign_cores']:.2f} cores",
              flush=True)
    return results


def add_round_flags(ap, B, T):
    """The flags that size the runs: threads, rounds, untimed and timed steps per run, batch and sequence length."""
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--B", type=int, default=B)
    ap.add_argument("--T", type=int, default=T)


def has_avx512():
    try:
        return "avx512f" in open("/proc/cpuinfo").read()
    except OSError:
        return False


def reference_info(ref, env, detected_note=""):
    """The INFO line of the PyTorch reference command `ref` run with --info-only. Where OpenBLAS did not pick its
    AVX-512 kernels on an AVX-512 CPU, sets OPENBLAS_CORETYPE=SkylakeX in `env` (saying so) and asks again."""
    def ask():
        return json.loads(subprocess.run(ref + ["--info-only"], env=env, check=True, capture_output=True,
                                         text=True).stdout.split("INFO ", 1)[1])
    info = ask()
    if has_avx512() and info["blas_core"] not in AVX512_CORES and "OPENBLAS_CORETYPE" not in os.environ:
        print(f"reference: OpenBLAS detected this CPU as '{info['blas_core']}'{detected_note}; running the reference "
              f"with OPENBLAS_CORETYPE=SkylakeX")
        env["OPENBLAS_CORETYPE"] = "SkylakeX"
        info = ask()
    return info


def median_s(runs):
    """A side's figure: the median over its runs of each run's median step, in seconds."""
    return statistics.median(r["median_ms"] for r in runs) / 1e3


def best_s(runs):
    """The fastest step of any of the runs, in seconds."""
    return min(r["min_ms"] for r in runs) / 1e3


def peak_rss_mb(runs):
    return max(r["peak_rss_mb"] for r in runs)


def print_table_header(hdr):
    print(hdr)
    print("-" * len(hdr))


def print_other_processes(runs):
    """The CPU time other processes took during the runs (cores), flagged when it may have disturbed them."""
    fc = [r["foreign_cores"] for r in runs]
    print(f"other processes during the runs: median {statistics.median(fc):.2f} cores, max {max(fc):.2f} cores"
          + ("  (DISTURBED: re-run on a quiet machine)" if max(fc) > 0.25 else ""))
