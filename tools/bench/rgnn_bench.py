#!/usr/bin/env python3
"""Relational GNN layers (RGCN, RGAT, HGT), Hector's protocol: Strata's materialization variants beside
PyTorch Geometric's layers on the same graphs, one layer, in = out = d, full graph, inference and
training, 2 threads, in the same run.

  # $TORCH_PYTHON: a Python with PyPI's torch and torch-geometric (docs/benchmarks.md says how)
  $TORCH_PYTHON tools/bench/rgnn_bench.py               # the table (20-30 min on 2 idle cores)
  $TORCH_PYTHON tools/bench/rgnn_bench.py --quick       # UMLS, d=32, about a minute
  $TORCH_PYTHON tools/bench/rgnn_bench.py --graphs umls --dims 64
  $TORCH_PYTHON tools/bench/rgnn_bench.py --largest     # largest typed R-MAT that trains (~1 h)
  $TORCH_PYTHON tools/bench/rgnn_bench.py --from-json out.json --stat min  # a table again

Graphs: PyKEEN's Nations, Kinships and UMLS training triples with reverse relations
(`STRATA_KG_DATA=1 tools/setup.sh`), and the typed R-MAT shaped like ogbn-mag (`rmat-2M`: --edges 2M of
io::generate_typed_rmat plus their reverse relations, so E = 4M). strata_rgnn_bench writes each graph
once (--save-graph) and every run, Strata's and PyG's, reads that file. Strata's variants: edge
(a message row per edge, nothing reordered), compact (a row per (source, relation) pair), compact +
reordered (RGAT, HGT: adjacent linears folded first) and aggregate_first (RGCN). PyG's layers (2.8.1
without pyg-lib, torch-scatter, torch-sparse): RGCNConv and FastRGCNConv, RGATConv, HGTConv.

Each (graph, model, d, mode, variant, side) runs in its own process under --mem-limit: the driver
polls the process's resident set and kills it past the limit (reported "oom"), and an address-space
limit of the limit plus --as-headroom (the libraries' mappings: torch maps about 3.4 GB at import)
turns one oversized allocation into the process's own out-of-memory report. A cell is the median ms
of the timed iterations (--stat min: their minimum, for a machine others are using) and the
process's peak RSS (its graph setup included). The JSON (--json) keeps every field both sides
print, among them each iteration's time and the peak of the iterations alone.

--largest: per model and variant, the largest typed R-MAT (--edges doubling from 0.5M to 64M, then
the gap between the last fit and the first failure halved geometrically --largest-refine times, to
within 2^(1/4) by default) whose one training iteration (d=64, no warmup) runs within --mem-limit;
a variant is not tried past its first failure. Generating and building the graph peaks near 105 B
per edge in Strata (E = 128M at --edges 64M: about 13 GB).
"""
import argparse, json, math, os, re, resource, shlex, signal, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

KGS = ("nations", "kinships", "umls")
HECTOR = {"infer": "3.8x", "train": "2.7x"}  # Wu et al., ASPLOS 2024: reordering + compaction, GPU
# Strata's variants: (name, --materialization, --reorder); PyG's layers per model.
STRATA_VARIANTS = {
    "rgcn": [("edge", "edge", "off"), ("compact", "compact", "off"), ("aggregate_first", "aggregate_first", "off")],
    "rgat": [("edge", "edge", "off"), ("compact", "compact", "off"), ("compact+reordered", "compact", "on")],
    "hgt": [("edge", "edge", "off"), ("compact", "compact", "off"), ("compact+reordered", "compact", "on")],
}
PYG_LAYERS = {"rgcn": [("RGCNConv", "rgcn"), ("FastRGCNConv", "fast_rgcn")], "rgat": [("RGATConv", "rgat")],
              "hgt": [("HGTConv", "hgt")]}
STAT = "median_ms"  # what a cell shows: --stat median (the protocol's) or min (a busy machine's)
STRATA_COLS = ["edge", "compact", "compact+reordered", "aggregate_first"]
PYG_COLS = ["RGCNConv", "FastRGCNConv", "RGATConv", "HGTConv"]


def parse_size(s):
    """An edge count: '0.5M', '64M', '50K' (decimal), plain integers."""
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)", s.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {s}")
    return int(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2).upper()])


def parse_bytes(s):
    """A byte size: '22G', '512M' (binary units), plain integers."""
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)B?", s.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a byte size: {s}")
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " "))


def fmt_edges(n):
    return f"{n / 1e6:g}M"


def is_kg(spec):
    return spec in KGS or os.path.isdir(spec)


def rss_mb(pid):
    """Resident set of a running process, MB (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return 0.0


def run_limited(cmd, env, mem_limit, as_headroom, timeout):
    """Runs cmd in its own process under the memory limit; returns its RESULT dict (status ok, graph,
    oom, timeout or error) with the driver's own observations added."""
    limit_as = mem_limit + as_headroom

    def preexec():
        resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.time()
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, preexec_fn=preexec)
        killed, max_rss, status, usage = None, 0.0, None, None
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            r = rss_mb(p.pid) or 0.0
            max_rss = max(max_rss, r)
            if killed is None and r * 2 ** 20 > mem_limit:
                killed = "oom"
                p.send_signal(signal.SIGKILL)
            elif killed is None and time.time() - t0 > timeout:
                killed = "timeout"
                p.send_signal(signal.SIGKILL)
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    lines = [l for l in stdout.splitlines() if l.startswith("RESULT ")]
    res = json.loads(lines[-1][len("RESULT "):]) if lines else {}
    res["wall_s"] = round(time.time() - t0, 2)
    res["driver_max_rss_mb"] = round(max_rss, 1)
    if killed:
        res["status"] = killed
        res["error"] = f"killed by the driver: {'RSS over the limit' if killed == 'oom' else 'timeout'}"
    elif not lines:
        text = stderr[-2000:]
        if p.returncode == -signal.SIGKILL or re.search(r"bad_alloc|out of memory|MemoryError|Cannot allocate", text):
            res["status"], res["error"] = "oom", text[-300:]
        else:
            res["status"], res["error"] = "error", f"exit {p.returncode}: {text[-600:]}"
    res["cmd"] = " ".join(shlex.quote(c) for c in cmd)
    return res


class Bench:
    def __init__(self, a):
        self.a = a
        self.env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads),
                        MKL_NUM_THREADS=str(a.threads), PYTHONWARNINGS="ignore")
        self.tmp = tempfile.mkdtemp(prefix="rgnn_bench_")
        self.results = []

    def run(self, cmd):
        r = run_limited(cmd, self.env, self.a.mem_limit, self.a.as_headroom, self.a.timeout)
        if r["status"] == "error":
            print(f"  error: {r['cmd']}\n    {r.get('error', '')}", file=sys.stderr, flush=True)
        return r

    def prepare_graph(self, spec):
        """Builds the graph once (strata_rgnn_bench --iters 0 --save-graph); returns (file, info)."""
        path = os.path.join(self.tmp, re.sub(r"[^A-Za-z0-9_.-]", "_", spec) + ".safetensors")
        if is_kg(spec):
            src = ["--kg", spec if os.path.isdir(spec) else os.path.join(self.a.kg_dir, spec)]
        elif spec.startswith("rmat-"):
            src = ["--edges", str(parse_size(spec[len("rmat-"):]))]
        else:
            sys.exit(f"graph '{spec}' is none of {', '.join(KGS)}, a triples folder or rmat-<edges>")
        info = self.run([self.a.bench, *src, "--save-graph", path, "--iters", "0", "--threads", str(self.a.threads),
                         "--seed", str(self.a.seed)])
        return (path if info["status"] == "graph" else None), info

    def iterations(self, edges):
        if self.a.iters is not None:
            return self.a.warmup if self.a.warmup is not None else 1, self.a.iters
        w, n = (3, 20) if edges <= 100_000 else (1, 5) if edges <= 2_000_000 else (1, 3)
        return (self.a.warmup if self.a.warmup is not None else w), n

    def strata(self, path, model, d, mode, mat, reorder, warmup, iters, check=False):
        cmd = [self.a.bench, "--graph-file", path, "--model", model, "--dim", str(d), "--heads", str(self.a.heads),
               "--mode", mode, "--materialization", mat, "--reorder", reorder, "--iters", str(iters), "--warmup",
               str(warmup), "--threads", str(self.a.threads), "--seed", str(self.a.seed)]
        return self.run(cmd + (["--check"] if check else []))

    def pyg(self, path, layer, d, mode, warmup, iters):
        return self.run([self.a.python, os.path.join(HERE, "rgnn_pyg.py"), path, "--layer", layer, "--dim", str(d),
                         "--heads", str(self.a.heads), "--mode", mode, "--iters", str(iters), "--warmup", str(warmup),
                         "--threads", str(self.a.threads), "--seed", str(self.a.seed)])


def peak(r):
    return max(r.get("setup_peak_rss_mb", 0.0), r.get("peak_rss_mb", 0.0))


def cell(r):
    if r is None:
        return "—"
    if r["status"] != "ok":
        return r["status"]
    return f"{r[STAT]:.1f} ms, {peak(r):.0f} MB"


def best(rs):
    ok = [r for r in rs if r and r["status"] == "ok"]
    return min(ok, key=lambda r: r[STAT]) if ok else None


def table(a, b):
    rows = []
    for spec in a.graphs.split(","):
        path, info = b.prepare_graph(spec)
        if path is None:
            print(f"{spec}: the graph could not be built ({info['status']}: {info.get('error', '')})", flush=True)
            continue
        E = info["edges"]
        warmup, iters = b.iterations(E)
        dims = [int(x) for x in (a.dims if is_kg(spec) else a.rmat_dims).split(",")]
        print(f"{spec}: {info['nodes']} nodes, {E} edges, {info['relations']} relations, {info['source_pairs']} "
              f"source pairs (compaction {info['compaction']:.3f}), built in {info['graph_s']:.1f} s; "
              f"{warmup} warmup + {iters} timed iterations", flush=True)
        for model in a.models.split(","):
            for d in dims:
                for mode in a.modes.split(","):
                    row = dict(graph=spec, nodes=info["nodes"], edges=E, relations=info["relations"],
                               compaction=info["compaction"], model=model, d=d, heads=a.heads, mode=mode,
                               strata={}, pyg={})
                    for name, mat, reorder in STRATA_VARIANTS[model]:
                        row["strata"][name] = b.strata(path, model, d, mode, mat, reorder, warmup, iters, a.check)
                    for name, layer in PYG_LAYERS[model]:
                        row["pyg"][name] = b.pyg(path, layer, d, mode, warmup, iters)
                    rows.append(row)
                    checks = [r.get("check", -1) for r in row["strata"].values() if r.get("check", -1) >= 0]
                    print(f"  {model:4s} d={d:<3d} {mode:5s} " +
                          " | ".join(f"{n} {cell(r)}" for n, r in {**row["strata"], **row["pyg"]}.items()) +
                          (f" | max rel. diff vs edge {max(checks):.1e}" if checks else ""), flush=True)
        os.remove(path)
    return rows


def compare(row):
    """Strata's best over PyG's best, and compact+reordered's (RGCN: compact's) speed-up over edge."""
    sb, pb = best(row["strata"].values()), best(row["pyg"].values())
    row["ratio"] = sb[STAT] / pb[STAT] if sb and pb else None
    edge = row["strata"].get("edge")
    opt = row["strata"].get("compact+reordered", row["strata"].get("compact"))
    row["speedup"] = edge[STAT] / opt[STAT] if edge and opt and edge["status"] == opt["status"] == "ok" else None


def print_table(rows):
    for r in rows:
        compare(r)
    print(f"\nCells: {STAT[:-3]} ms of the timed iterations, the process's peak RSS.")
    print("\n| graph | E | R | compaction | model | d | mode | " + " | ".join(f"Strata {c}" for c in STRATA_COLS) +
          " | " + " | ".join(f"PyG {c}" for c in PYG_COLS) + " | Strata best / PyG best | compact+reordered vs edge |")
    print("|" + "---|" * (7 + len(STRATA_COLS) + len(PYG_COLS) + 2))
    for r in rows:
        s = [cell(r["strata"].get(c)) for c in STRATA_COLS]
        p = [cell(r["pyg"].get(c)) for c in PYG_COLS]
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else "—"
        sp = f"{r['speedup']:.2f}x" + (" (compact)" if r["model"] == "rgcn" else "") if r["speedup"] else "—"
        print(f"| {r['graph']} | {r['edges']} | {r['relations']} | {r['compaction']:.3f} | {r['model']} | {r['d']} | "
              f"{r['mode']} | " + " | ".join(s + p) + f" | {ratio} | {sp} |")
    print("\nSpeed-up of compact+reordered (RGCN: compact) over Strata's own edge-wise variant, beside Hector's:")
    print("\n| model | mode | rows | geometric mean | max | Hector's paper (GPU, up to) |\n|---|---|---|---|---|---|")
    for model in dict.fromkeys(r["model"] for r in rows):
        for mode in dict.fromkeys(r["mode"] for r in rows):
            sps = [r["speedup"] for r in rows if r["model"] == model and r["mode"] == mode and r["speedup"]]
            if sps:
                gm = math.exp(statistics.fmean(math.log(x) for x in sps))
                print(f"| {model} | {mode} | {len(sps)} | {gm:.2f}x | {max(sps):.2f}x | {HECTOR[mode]} |")


def largest(a, b):
    """Per model and variant, the largest typed R-MAT whose training iteration fits."""
    sizes = [parse_size(s) for s in a.largest_edges.split(",")]
    d = int(a.rmat_dims.split(",")[0])
    variants = []
    for model in a.models.split(","):
        for name, mat, reorder in STRATA_VARIANTS[model]:
            if name != "compact" or model == "rgcn":
                variants.append(dict(model=model, side="Strata", name=name, mat=mat, reorder=reorder))
        for name, layer in PYG_LAYERS[model]:
            variants.append(dict(model=model, side="PyG", name=name, layer=layer))
    for v in variants:
        v.update(fits=None, failed=None)

    def probe(n, vs):
        """Trains each of vs once on the typed R-MAT of --edges n; False when the graph itself fails."""
        path, info = b.prepare_graph(f"rmat-{n}")
        if path is None:
            for v in vs:
                v["failed"] = (n, f"graph build {info['status']}")
            print(f"--edges {fmt_edges(n)}: the graph could not be built ({info['status']})", flush=True)
            return False
        print(f"--edges {fmt_edges(n)}: E = {info['edges']}, {info['nodes']} nodes, compaction "
              f"{info['compaction']:.3f}, built in {info['graph_s']:.1f} s", flush=True)
        for v in vs:
            r = (b.strata(path, v["model"], d, "train", v["mat"], v["reorder"], 0, 1) if v["side"] == "Strata" else
                 b.pyg(path, v["layer"], d, "train", 0, 1))
            r.update(size=n, variant=v["name"], model=v["model"], side=v["side"].lower())
            b.results.append(r)
            print(f"  {v['model']:4s} {v['side']} {v['name']:18s} {cell(r)}", flush=True)
            if r["status"] == "ok":
                v["fits"] = (n, info["edges"], r)
            else:
                v["failed"] = (n, r["status"])
        os.remove(path)
        return True

    # Up the ladder until each variant fails, then halve the gap between its last fit and first
    # failure geometrically --largest-refine times (variants that meet at a size share its graph).
    for n in sizes:
        alive = [v for v in variants if v["failed"] is None]
        if not alive or not probe(n, alive):
            break
    for _ in range(a.largest_refine):
        at = {}
        for v in variants:
            if v["fits"] and v["failed"]:
                lo, hi = v["fits"][0], v["failed"][0]
                mid = int(float(f"{math.sqrt(lo * hi) / 1e6:.3g}") * 1e6)
                if lo < mid < hi:
                    at.setdefault(mid, []).append(v)
        for n in sorted(at):
            probe(n, at[n])
    print(f"\nLargest typed R-MAT whose training iteration (d={d}, {a.heads} head) fits in "
          f"{a.mem_limit / 2 ** 30:g} GiB:")
    print("\n| model | side | variant | largest --edges | E | ms | peak RSS | smallest failure |")
    print("|---|---|---|---|---|---|---|---|")
    for v in variants:
        fits = v["fits"]
        fail = f"{fmt_edges(v['failed'][0])}: {v['failed'][1]}" if v["failed"] else "none up to " + fmt_edges(sizes[-1])
        if fits:
            n, E, r = fits
            print(f"| {v['model']} | {v['side']} | {v['name']} | {fmt_edges(n)} | {E} | {r[STAT]:.0f} | "
                  f"{peak(r):.0f} MB | {fail} |")
        else:
            print(f"| {v['model']} | {v['side']} | {v['name']} | < {fmt_edges(sizes[0])} | — | — | — | {fail} |")
    for model in a.models.split(","):  # Strata's best variant against its own edge-wise one, in E
        mine = {v["name"]: v["fits"][1] for v in variants if v["model"] == model and v["side"] == "Strata" and v["fits"]}
        if "edge" in mine and len(mine) > 1:
            name, E = max(((k, e) for k, e in mine.items() if k != "edge"), key=lambda x: x[1])
            print(f"{model}: {name} trains a graph {E / mine['edge']:.1f}x larger than edge-wise ({E} against "
                  f"{mine['edge']} edges)")
    return variants


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=os.path.join(ROOT, "build/tools/bench/strata_rgnn_bench"))
    ap.add_argument("--python", default=sys.executable, help="the interpreter with torch and torch_geometric")
    ap.add_argument("--kg-dir", default=os.path.join(ROOT, "data/kg"))
    ap.add_argument("--graphs", default="nations,kinships,umls,rmat-0.5M,rmat-2M",
                    help="KG names (or triples folders) and rmat-<--edges> (E is twice that: reverse relations)")
    ap.add_argument("--models", default="rgcn,rgat,hgt")
    ap.add_argument("--dims", default="32,64,128", help="d on the knowledge graphs")
    ap.add_argument("--rmat-dims", default="64", help="d on the typed R-MATs (--largest: the first)")
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--modes", default="infer,train")
    ap.add_argument("--iters", type=int, default=None, help="timed iterations (default: 20, 5 or 3 by E)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed iterations first (default: 3 or 1 by E)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mem-limit", type=parse_bytes, default=parse_bytes("22G"), help="resident set per process")
    ap.add_argument("--as-headroom", type=parse_bytes, default=parse_bytes("4G"),
                    help="address space beyond --mem-limit (the libraries' mappings)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per process")
    ap.add_argument("--check", action="store_true", help="each Strata variant checks its output against edge-wise")
    ap.add_argument("--quick", action="store_true", help="UMLS, d=32, 5 iterations, checked: a smoke test")
    ap.add_argument("--largest", action="store_true")
    ap.add_argument("--largest-edges", default="0.5M,1M,2M,4M,8M,16M,32M,64M")
    ap.add_argument("--largest-refine", type=int, default=2,
                    help="--largest: geometric halvings of each variant's gap between fit and failure")
    ap.add_argument("--stat", choices=["median", "min"], default="median",
                    help="the timed iterations' median (default) or, on a machine others are using, their minimum")
    ap.add_argument("--json", default="")
    ap.add_argument("--from-json", default="", help="print the table of an earlier --json instead of running")
    a = ap.parse_args()
    global STAT
    STAT = a.stat + "_ms"
    if a.from_json:
        with open(a.from_json) as f:
            print_table(json.load(f)["rows"])
        return
    if a.quick:
        a.graphs, a.dims, a.check = "umls", "32", True
        a.iters, a.warmup = a.iters or 5, 2 if a.warmup is None else a.warmup
    if not os.path.exists(a.bench):
        sys.exit(f"{a.bench} is missing: ninja -C build strata_rgnn_bench")
    b = Bench(a)
    print("command:", " ".join(shlex.quote(x) for x in [sys.executable, *sys.argv]))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} CPUs, {a.threads} threads per run, load average "
          f"{os.getloadavg()[0]:.2f} at the start; memory limit {a.mem_limit / 2 ** 30:g} GiB per process", flush=True)
    try:
        if a.largest:
            out = largest(a, b)
            rows = [{k: v for k, v in x.items()} for x in out]
        else:
            rows = table(a, b)
            print_table(rows)
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"args": vars(a), "rows": rows, "runs": b.results}, f, indent=1, default=str)
    finally:
        for f in os.listdir(b.tmp):
            os.remove(os.path.join(b.tmp, f))
        os.rmdir(b.tmp)


if __name__ == "__main__":
    main()
