#!/usr/bin/env python3
"""Node-classification accuracy on real labels: train_gnn beside PyTorch Geometric on the same
graph, features (one-hot node ids), split, model, optimizer and epochs, over several seeds.

Usage (after `STRATA_GRAPH_DATA=1 tools/setup.sh` fetched data/graphs and the build):
  # $TORCH_PYTHON: a Python with PyPI's torch and torch-geometric (docs/benchmarks.md says how)
  $TORCH_PYTHON tools/bench/gnn_accuracy.py --train-gnn build/examples/train_gnn/train_gnn

For each graph (polblogs: 2 classes, football: 12 conferences), model (gcn, gat) and seed,
train_gnn trains 200 full-graph epochs, evaluating every epoch, and writes its prepared dataset
(--save-data); PyG then trains its own model from that file with the same settings. Printed: the
mean and standard deviation over seeds of the final test accuracy and of the test accuracy at the
best validation accuracy, for both. Dropout masks and initial weights differ between the two
(different generators): the figures agree in distribution, not per seed.
"""
import argparse, os, re, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gnn_pyg  # noqa: E402
import torch  # noqa: E402

FINAL = re.compile(r"final: step \d+, .*accuracy train [^,]+, val [^,]+, test ([0-9.]+)%; best val [0-9.]+% at step \d+ "
                   r"\(test ([0-9.]+)% there\)")


def stats(v):
    return f"{100 * statistics.mean(v):5.1f} ± {100 * (statistics.stdev(v) if len(v) > 1 else 0):4.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-gnn", required=True)
    ap.add_argument("--data", default="data/graphs")
    ap.add_argument("--graphs", default="polblogs,football")
    ap.add_argument("--models", default="gcn,gat")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for g in a.graphs.split(","):
            for m in a.models.split(","):
                ours, pyg = ([], []), ([], [])
                for seed in range(1, a.seeds + 1):
                    data_file = os.path.join(tmp, f"{g}-{seed}.safetensors")
                    cmd = [a.train_gnn, "--graph", os.path.join(a.data, g + ".gt.gz"), "--model", m, "--seed", str(seed),
                           "--max-steps", str(a.epochs), "--eval-every", "1", "--log-every", "1000", "--save-data",
                           data_file, "--overwrite", "-o", os.path.join(tmp, "run")]
                    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
                    match = FINAL.search(out.stdout)
                    if out.returncode != 0 or not match:
                        sys.exit(f"train_gnn failed: {' '.join(cmd)}\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
                    ours[0].append(float(match.group(1)) / 100), ours[1].append(float(match.group(2)) / 100)
                    final, at_best = gnn_pyg.train_accuracy(m, gnn_pyg.load(data_file), epochs=a.epochs, seed=seed)
                    pyg[0].append(final), pyg[1].append(at_best)
                rows.append((g, m, ours, pyg))
                print(f"{g:9s} {m:4s} strata final {stats(ours[0])} best-val {stats(ours[1])} | "
                      f"pyg final {stats(pyg[0])} best-val {stats(pyg[1])}", flush=True)
    print("\n| graph | model | Strata test (final) | PyG test (final) | Strata test at best val | PyG test at best val |")
    print("|---|---|---|---|---|---|")
    for g, m, ours, pyg in rows:
        print(f"| {g} | {m} | {stats(ours[0])} | {stats(pyg[0])} | {stats(ours[1])} | {stats(pyg[1])} |")


if __name__ == "__main__":
    main()
