#!/usr/bin/env python3
"""Full-graph GNN training epochs (forward, backward, AdamW), Strata beside PyTorch Geometric in
the same run, 2 threads, on the same graph, features (d=128), labels and split.

Usage (after the build and `STRATA_GRAPH_DATA=1 tools/setup.sh` for the graph-tool files):
  # $TORCH_PYTHON: a Python with PyPI's torch and torch-geometric (docs/benchmarks.md says how)
  $TORCH_PYTHON tools/bench/gnn_bench.py --train-gnn build/examples/train_gnn/train_gnn

Graphs: cond-mat-2005 and pgp-strong-2009 (graph-tool collection, made undirected, random labels),
R-MAT with 1M (scale 16, edge factor 16) and 10M (scale 19, edge factor 19) directed edges.
Models: GCN and SAGE-mean (hidden 128) and GAT (8 heads x 8), 2 layers. Each (graph, model, side)
runs in its own process, so its peak RSS is its own: train_gnn --max-steps warmup+epochs (its mean
step over steps 2..N) and PyG's median epoch after a warmup one. PyG runs without its optional
compiled extensions (torch-scatter, torch-sparse, pyg-lib): only the wheels of PyPI's
torch-geometric and torch.
"""
import argparse, json, os, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

GRAPHS = {
    "cond-mat-2005": ["--graph", "{data}/cond-mat-2005.gt.gz", "--random-labels", "8"],
    "pgp-strong-2009": ["--graph", "{data}/pgp-strong-2009.gt.gz", "--random-labels", "8"],
    "rmat-1M": ["--rmat-scale", "16", "--rmat-edge-factor", "16", "--undirected=false", "--dcsbm-classes", "8"],
    "rmat-10M": ["--rmat-scale", "19", "--rmat-edge-factor", "19", "--undirected=false", "--dcsbm-classes", "8"],
}
MODELS = {"gcn": 128, "sage": 128, "gat": 8}
TIMING = re.compile(r"timing: ([0-9.]+) ms/step")
EDGES = re.compile(r"data: .*?: (\d+) nodes, (\d+) edges")


def run_measured(cmd, env):
    """Runs cmd; returns (stdout, peak RSS in MB of that process alone)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{out[-3000:]}")
    return out, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-gnn", required=True)
    ap.add_argument("--data", default="data/graphs")
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for g in a.graphs.split(","):
            data_file = os.path.join(tmp, g + ".safetensors")
            for i, m in enumerate(a.models.split(",")):
                hidden = MODELS[m]
                cmd = [a.train_gnn, *[x.format(data=a.data) for x in GRAPHS[g]], "--features", "random:128", "--model", m,
                       "--hidden", str(hidden), "--max-steps", str(a.epochs + 1), "--eval-every", "0", "--log-every",
                       "100000", "--ckpt-every", "0", "--overwrite", "-o", os.path.join(tmp, "run")]
                if i == 0:
                    cmd += ["--save-data", data_file]
                out, strata_rss = run_measured(cmd, env)
                strata_ms = float(TIMING.search(out).group(1))
                nodes, edges = map(int, EDGES.search(out).groups())
                pyg_out, pyg_rss = run_measured(
                    [sys.executable, os.path.join(HERE, "gnn_pyg.py"), data_file, m, str(a.epochs), str(hidden),
                     str(a.threads)], env)
                pyg_ms = 1e3 * json.loads(pyg_out.strip().splitlines()[-1])["epoch_seconds"]
                row = dict(graph=g, nodes=nodes, edges=edges, model=m, strata_ms=strata_ms, pyg_ms=pyg_ms,
                           ratio=strata_ms / pyg_ms, strata_rss_mb=strata_rss, pyg_rss_mb=pyg_rss)
                rows.append(row)
                print(f"{g:16s} {m:4s} strata {strata_ms:9.1f} ms {strata_rss:7.0f} MB | pyg {pyg_ms:9.1f} ms "
                      f"{pyg_rss:7.0f} MB | time ratio {row['ratio']:.2f}", flush=True)
    print("\n| graph | nodes | edges | model | Strata ms/epoch | PyG ms/epoch | time ratio | Strata peak RSS | PyG peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['graph']} | {r['nodes']} | {r['edges']} | {r['model']} | {r['strata_ms']:.1f} | {r['pyg_ms']:.1f} | "
              f"{r['ratio']:.2f} | {r['strata_rss_mb']:.0f} MB | {r['pyg_rss_mb']:.0f} MB |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
