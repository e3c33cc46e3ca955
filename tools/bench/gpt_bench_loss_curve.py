#!/usr/bin/env python3
"""bf16 autocast against fp32: the loss curves of the default train_gpt run, side by side.

Usage (after building train_gpt):
  /usr/bin/python3 tools/bench/gpt_bench_loss_curve.py --train-gpt build/examples/train_gpt

Runs the default job (small byte-level GPT on the built-in corpus, same seed and data order)
for --steps optimizer steps twice, once in fp32 and once with --bf16 (linear / LM-head GEMMs in
bf16, f32 master weights and reductions), logging every step, and compares the curves:
  - per step: |loss_bf16 - loss_fp32| / loss_fp32 (max and mean over the run),
  - smoothed: the same over a --window-step moving average (one step's loss is one batch),
  - held-out loss at every evaluation (--eval-every).
It passes when the smoothed curves and every held-out loss agree within --tol (default 1%).
Prints the table, the verdict and the exact commands; --json writes all numbers.
"""
import argparse, json, os, re, subprocess, sys, tempfile

LINE = re.compile(r"step\s+(\d+) \| loss ([0-9.eE+-]+|nan|inf) \| val ([0-9.eE+-]+|nan|inf)")


def run(train_gpt, steps, eval_every, extra, out_dir, threads):
    cmd = [train_gpt, "--max-steps", str(steps), "--log-every", "1", "--eval-every", str(eval_every),
           "--sample-tokens", "0", "--out-dir", out_dir] + extra
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    loss, val = {}, {}
    for line in p.stdout.splitlines():
        m = LINE.search(line)
        if not m:
            continue
        s = int(m.group(1))
        loss[s] = float(m.group(2))
        if eval_every > 0 and s % eval_every == 0:
            val[s] = float(m.group(3))
    if len(loss) < steps:
        sys.exit(f"expected {steps} logged steps from {' '.join(cmd)}, parsed {len(loss)}\n{p.stdout[-4000:]}")
    return cmd, loss, val


def moving_average(xs, w):
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= w:
            acc -= xs[i - w]
        out.append(acc / min(i + 1, w))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-gpt", required=True, help="path to train_gpt")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--window", type=int, default=10, help="moving-average window (steps)")
    ap.add_argument("--tol", type=float, default=0.01, help="relative tolerance")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default="")
    ap.add_argument("extra", nargs="*", help="more train_gpt flags for both runs (after --)")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="strata_loss_curve_") as tmp:
        c32, l32, v32 = run(a.train_gpt, a.steps, a.eval_every, a.extra, os.path.join(tmp, "fp32"), a.threads)
        c16, l16, v16 = run(a.train_gpt, a.steps, a.eval_every, a.extra + ["--bf16"], os.path.join(tmp, "bf16"),
                            a.threads)
    steps = sorted(set(l32) & set(l16))
    x32, x16 = [l32[s] for s in steps], [l16[s] for s in steps]
    rel = [abs(b - f) / abs(f) for f, b in zip(x32, x16)]
    s32, s16 = moving_average(x32, a.window), moving_average(x16, a.window)
    srel = [abs(b - f) / abs(f) for f, b in zip(s32, s16)]
    vsteps = sorted(set(v32) & set(v16))
    vrel = {s: abs(v16[s] - v32[s]) / abs(v32[s]) for s in vsteps}

    print(f"{'step':>5} | {'fp32 loss':>9} | {'bf16 loss':>9} | {'rel':>7} | {'fp32 avg':>9} | {'bf16 avg':>9} | {'rel avg':>7}")
    for i, s in enumerate(steps):
        if s == 1 or s % 10 == 0:
            print(f"{s:5d} | {x32[i]:9.4f} | {x16[i]:9.4f} | {rel[i]*100:6.2f}% | {s32[i]:9.4f} | {s16[i]:9.4f} | {srel[i]*100:6.2f}%")
    print()
    for s in vsteps:
        print(f"held-out loss at step {s}: fp32 {v32[s]:.4f}  bf16 {v16[s]:.4f}  rel {vrel[s]*100:.2f}%")
    worst_step = steps[max(range(len(rel)), key=lambda i: rel[i])]
    print(f"per step: max {max(rel)*100:.2f}% (step {worst_step}), mean {sum(rel)/len(rel)*100:.2f}%")
    print(f"{a.window}-step moving average: max {max(srel)*100:.2f}%, final {srel[-1]*100:.2f}%")
    ok = max(srel) <= a.tol and all(r <= a.tol for r in vrel.values())
    print(f"verdict: bf16 within {a.tol*100:.1f}% of fp32 (moving average and held-out): {'PASS' if ok else 'FAIL'}")
    print("commands (each with OMP_NUM_THREADS=%d):\n  %s\n  %s" % (a.threads, " ".join(c32), " ".join(c16)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"steps": steps, "fp32": x32, "bf16": x16, "val_fp32": v32, "val_bf16": v16,
                       "max_rel": max(rel), "mean_rel": sum(rel) / len(rel), "max_rel_avg": max(srel),
                       "val_rel": vrel, "pass": ok}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
