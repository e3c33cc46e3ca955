#!/usr/bin/env python3
"""Strata on a device beside PyTorch and PyG on the same device, in the same run: the driver behind
tools/gpu_bench.sh (see its --help). Each workload runs in its own process; a row names the kernel
path each side ran, and the table's ratio is Strata's time over the reference's (below 1: Strata faster).

Workloads (--only picks; the default is gpt,cache,graphs-one,planner):
  gpt      GPT-2 124M, T=1024, the largest of B=32/16/8 Strata fits; Strata (bf16 autocast + TF32) beside
           PyTorch eager (bf16 autocast, flash SDPA, fused AdamW, TF32) and torch.compile; tokens/s, MFU
  bert     BERT-base MLM B=32 T=128 bf16 beside Hugging Face's BertForMaskedLM (SDPA), eager
  resnet   ResNet-50 224px B=64 bf16 beside torchvision's, eager, channels-last
  cache    the tensor cache on GPT-2 124M at a batch keep-all fits: keep, recompute, host, nvme, adaptive;
           then GPT-2 large at a batch keep-all does not fit, under --memory-budget
  graphs   GCN, SAGE, GAT full-graph epochs on a 10M-edge R-MAT beside PyG (graphs-one: GAT only)
  rgnn     RGCN, RGAT, HGT training iterations on typed R-MATs of 1M and 8M edges beside PyG
  planner  the planner's predicted step time and activation peak against the measured planned step

Outputs under --out: gpu_bench.json (every row, every field both sides printed), gpu_bench.md (the
table), logs/ (each process's output) and profiles/ (top ops by device time, per workload and side).
"""
import argparse, json, os, re, shlex, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_ONLY = "gpt,cache,graphs-one,planner"

# The kernel path each Strata workload takes on CUDA (ops/cuda): what the GEMMs, attention, norms
# and optimizer run on. On the sim device every op is the CPU's kernel.
STRATA_PATHS = {
    "gpt": "cuBLASLt GEMMs (bf16 under autocast, else TF32); own kernels: attention, layernorm, GELU, "
           "fused cross-entropy, AdamW",
    "bert": "cuBLASLt GEMMs; own kernels: attention, layernorm, GELU, AdamW",
    "resnet": "cuDNN convolution and batch norm; own pooling; SGD kernel",
    "graphs": "own g-SpMM / g-SDDMM / edge-softmax kernels; cuBLASLt dense layers",
    "rgnn": "own segment-GEMM and gather-scatter kernels; cuBLASLt",
    "cache": "own kernels as gpt; cache copy stream and page-locked host pool",
}


def gpu_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip()
        return out.splitlines()[0] if out else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def device_memory_gb():
    """The first GPU's memory in GB (nvidia-smi), 0 when there is none."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout.split()
        return float(out[0]) / 1024 if out else 0.0
    except (OSError, subprocess.SubprocessError, ValueError):
        return 0.0


def read_profile_value(path, field):
    """One `field { value: X }` of a hardware profile (tools/hardware/*.textproto)."""
    with open(path) as f:
        m = re.search(field + r"\s*\{\s*value:\s*([0-9.eE+-]+)", f.read())
    return float(m.group(1)) if m else None


def hardware_profile_for(name):
    """The committed hardware profile of the device named `name` (nvidia-smi's), or None."""
    n = name.upper()
    base = os.path.join(ROOT, "tools/hardware")
    if "H200" in n:
        return os.path.join(base, "h200-sxm-pcie5-1xgen5.textproto")
    if "H100" in n:
        return os.path.join(base, "h100-sxm-pcie5-1xgen5.textproto")
    if "A100" in n:
        return os.path.join(base, "a100-40gb-pcie4-1xgen4.textproto")
    return None


def gpt_mfu(tokens_per_s, res):
    """MFU at `tokens_per_s` with strata_gpt_bench's figures: its model FLOPs per token and the profile's
    matmul peak for the precision (the trainers' count, models/model_flops.h; None without a profile)."""
    if not tokens_per_s or not res.get("peak_flops"):
        return None
    return tokens_per_s * res["flops_per_token"] / res["peak_flops"]


class Bench:
    def __init__(self, a):
        self.a, self.rows, self.failures, self.on_row = a, [], [], None
        self.logs = os.path.join(a.out, "logs")
        self.profiles = os.path.join(a.out, "profiles")
        os.makedirs(self.logs, exist_ok=True)
        os.makedirs(self.profiles, exist_ok=True)
        self.kind = a.device.split(":")[0]
        self.bin = lambda *p: os.path.join(a.build_dir, *p)
        self.torch_ok = self._python_has("torch")
        self.pyg_ok = self._python_has("torch_geometric")
        self.name = gpu_name() if self.kind == "cuda" else "sim (host memory, the CPU's kernels)"
        self.hw = a.hardware or (hardware_profile_for(self.name) if self.kind == "cuda" else None)

    def _python_has(self, module):
        r = subprocess.run([self.a.python, "-c", f"import {module}"], capture_output=True)
        return r.returncode == 0

    def run(self, tag, cmd, timeout, env=None):
        """Runs cmd, its output to logs/<tag>.log; returns (rc, output, RESULT dict or None)."""
        log = os.path.join(self.logs, tag + ".log")
        t0 = time.time()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                               env=dict(os.environ, OMP_NUM_THREADS=str(self.a.threads), PYTHONUNBUFFERED="1", **(env or {})))
            rc, out = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc, out = 124, (e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")) + \
                f"\n[gpu_bench: timed out after {timeout} s]\n"
        with open(log, "w") as f:
            f.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n" + out)
        res = None
        for line in out.splitlines():
            if line.startswith("RESULT "):
                try:
                    res = json.loads(line[7:])
                except json.JSONDecodeError:
                    pass
        print(f"gpu_bench: {tag}: exit {rc}, {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
        return rc, out, res

    def torch_ref(self, tag, args, timeout):
        if not self.torch_ok:
            return None
        prof = os.path.join(self.profiles, tag + ".txt")
        cmd = [self.a.python, os.path.join(HERE, "torch_device_bench.py"), "--device", self.a.device, *args,
               "--warmup", str(self.a.warmup), "--steps", str(self.a.steps)]
        if self.a.profile:
            cmd += ["--profile", "1", "--profile-out", prof]
        rc, _, res = self.run(tag, cmd, timeout)
        return res if rc == 0 else None

    def strata_profile(self, tag, out):
        """Cuts the per-op table strata_*_bench --profile printed into profiles/<tag>.txt."""
        lines = out.splitlines()
        start = next((i for i, l in enumerate(lines) if re.match(r"^\s*(phase|profile)", l, re.I)), None)
        if start is None:
            start = next((i for i, l in enumerate(lines) if "ms/step" in l), None)
        if start is not None:
            with open(os.path.join(self.profiles, tag + ".txt"), "w") as f:
                f.write("\n".join(l for l in lines[start:] if not l.startswith("RESULT ")) + "\n")

    def strata_bench(self, workload, cmd):
        """Runs a strata_*_bench command as <workload>_strata (with --profile 1 under --profile, the table cut into
        profiles/); its RESULT, or None with the failure noted."""
        tag = workload + "_strata"
        if self.a.profile:
            cmd += ["--profile", "1"]
        rc, out, res = self.run(tag, cmd, 600)
        if rc != 0 or not res:
            self.failures.append(f"{workload}: {os.path.basename(cmd[0])} failed (exit {rc}), see logs/{tag}.log")
            return None
        self.strata_profile(tag, out)
        return res

    def add(self, **row):
        self.rows.append(row)
        if self.on_row:
            self.on_row()
        ref = row.get("ref_ms")
        ratio = f"{row['strata_ms'] / ref:.2f}" if ref and row.get("strata_ms") else "-"
        print(f"gpu_bench: row {row['workload']} {row.get('config', '')}: strata {row.get('strata_ms')} ms, "
              f"{row.get('reference', '-')} {ref} ms, ratio {ratio}", file=sys.stderr, flush=True)

    # ---- workloads ----
    def gpt(self):
        q = self.a.quick
        shape = ["--L", "2", "--C", "64", "--NH", "2", "--V", "256", "--T", "32"] if q else ["--T", "1024"]
        batches = [2] if q else [int(b) for b in self.a.gpt_batches.split(",")]
        res = None
        for B in batches:
            tag = f"gpt_strata_B{B}"
            cmd = [self.bin("tools/bench/strata_gpt_bench"), "--device", self.a.device, *shape, "--B", str(B), "--bf16",
                   "--tf32", "--warmup", str(self.a.warmup), "--steps", str(self.a.steps), "--trace", ""]
            if self.hw:
                cmd += ["--hardware", self.hw]
            if self.a.profile:
                cmd += ["--profile", "1"]
            rc, out, res = self.run(tag, cmd, 600)
            if rc == 0 and res:
                self.strata_profile(tag, out)
                break
            if "out of memory" not in out.lower():
                self.failures.append(f"gpt: strata_gpt_bench B={B} failed (exit {rc}), see logs/{tag}.log")
                return
        if not res:
            self.failures.append("gpt: no batch of " + self.a.gpt_batches + " fits")
            return
        B, T = res["cfg"]["B"], res["cfg"]["T"]
        tok_s = B * T / (res["median_ms"] / 1e3)
        mfu = gpt_mfu(tok_s, res)
        refs = {}
        ref_shape = ["--model", "gpt", "--B", str(B)] + (shape if q else ["--T", "1024"])
        for name, extra in (("PyTorch eager", []), ("torch.compile", ["--compile"])):
            if q and extra:
                continue
            r = self.torch_ref(f"gpt_torch{'_compile' if extra else ''}_B{B}", ref_shape + ["--bf16", *extra], 900)
            if r:
                refs[name] = r
        for name in (["PyTorch eager", "torch.compile"] if refs else [None]):
            r = refs.get(name)
            self.add(workload="gpt", config=f"GPT-2 124M B={B} T={T} bf16 autocast, TF32" if not q else
                     f"GPT L2 C64 B={B} T={T}", strata_path=STRATA_PATHS["gpt"] if self.kind == "cuda" else "CPU kernels",
                     strata_ms=res["median_ms"], strata_peak_mb=res.get("peak_device_mb"), tokens_per_s=tok_s,
                     mfu=mfu, reference=name, ref_ms=r["median_ms"] if r else None,
                     ref_tokens_per_s=B * T / (r["median_ms"] / 1e3) if r else None,
                     ref_mfu=gpt_mfu(B * T / (r["median_ms"] / 1e3), res) if r else None,
                     ref_peak_mb=r.get("peak_device_mb") if r else None, ref_path="cuBLAS bf16, flash SDPA, fused "
                     "AdamW" + (", Inductor/Triton" if name == "torch.compile" else "") if r else None, strata=res,
                     ref=r)

    def bert(self):
        q = self.a.quick
        B, T = (2, 16) if q else (32, 128)
        shape = ["--L", "2", "--C", "64", "--NH", "2", "--I", "128", "--V", "512"] if q else []
        cmd = [self.bin("tools/bench/strata_bert_bench"), "--device", self.a.device, *shape, "--B", str(B), "--T", str(T),
               "--bf16", "--tf32", "--warmup", str(self.a.warmup), "--steps", str(self.a.steps), "--trace", ""]
        res = self.strata_bench("bert", cmd)
        if not res:
            return
        r = None if q else self.torch_ref("bert_torch", ["--model", "bert", "--B", str(B), "--T", str(T), "--bf16"], 600)
        self.add(workload="bert", config=f"BERT-base MLM B={B} T={T} bf16" if not q else f"BERT L2 C64 B={B} T={T}",
                 strata_path=STRATA_PATHS["bert"] if self.kind == "cuda" else "CPU kernels", strata_ms=res["median_ms"],
                 seq_per_s=B / (res["median_ms"] / 1e3), reference="PyTorch eager (HF BertForMaskedLM, SDPA)" if r else None,
                 ref_ms=r["median_ms"] if r else None, ref_seq_per_s=B / (r["median_ms"] / 1e3) if r else None,
                 ref_path="cuBLAS bf16, SDPA, fused AdamW" if r else None, strata=res, ref=r)

    def resnet(self):
        q = self.a.quick
        B, size = (2, 32) if q else (64, 224)
        preset = "resnet18" if q else "resnet50"
        cmd = [self.bin("tools/bench/strata_resnet_bench"), "--device", self.a.device, "--preset", preset, "--B", str(B),
               "--size", str(size), "--bf16", "--tf32", "--warmup", str(self.a.warmup), "--steps", str(self.a.steps)]
        res = self.strata_bench("resnet", cmd)
        if not res:
            return
        r = None if q else self.torch_ref("resnet_torch", ["--model", "resnet", "--B", str(B), "--size", str(size),
                                                          "--bf16", "--channels-last"], 600)
        self.add(workload="resnet", config=f"{preset} {size}px B={B} bf16", strata_path=STRATA_PATHS["resnet"]
                 if self.kind == "cuda" else "CPU kernels", strata_ms=res["median_ms"],
                 images_per_s=B / (res["median_ms"] / 1e3), reference="PyTorch eager (torchvision, channels-last)"
                 if r else None, ref_ms=r["median_ms"] if r else None,
                 ref_images_per_s=B / (r["median_ms"] / 1e3) if r else None,
                 ref_path="cuDNN bf16 NHWC, SGD foreach" if r else None, strata=res, ref=r)

    def cache(self):
        q = self.a.quick
        B, T = (2, 32) if q else (self.a.cache_batch, 1024)
        base = [self.bin("tools/bench/strata_cache_bench"), "--device", self.a.device, "--preset",
                "tiny" if q else "gpt2", "-b", str(B), "-t", str(T), "--tf32", "--warmup", "1",
                "--steps", str(2 if q else 3)]
        spill = os.path.join(self.a.out, "spill")
        os.makedirs(spill, exist_ok=True)
        keep = None
        link = read_profile_value(self.hw, "host_to_device_bytes_per_second") if self.hw else None
        for policy in ("keep", "recompute", "host", "nvme", "adaptive:host", "adaptive"):
            extra = ["--spill-dir", spill] if "nvme" in policy or policy == "adaptive" else []
            if "host" in policy:  # page-locked on CUDA: only the policies that use it pay for pinning it
                extra += ["--host-pool", "256M" if q else "16G"]
            tag = "cache_" + policy.replace(":", "_")
            rc, out, res = self.run(tag, base + ["--policy", policy, "--tag", policy, *extra], 600)
            if rc != 0 or not res:
                self.failures.append(f"cache: policy {policy} failed (exit {rc}), see logs/{tag}.log")
                continue
            if policy == "keep":
                keep = res
            moved = (res["host_written_mb"] + res["nvme_written_mb"] + res["nvme_read_mb"]) * 1e6
            moved += res["host_written_mb"] * 1e6  # each host store is read back once in backward
            self.add(workload="cache", config=f"GPT-2 124M B={B} T={T} TF32, {policy}" if not q else
                     f"tiny B={B} T={T}, {policy}", policy=policy, strata_ms=res["step_s"] * 1e3,
                     strata_path=STRATA_PATHS["cache"] if self.kind == "cuda" else "CPU kernels",
                     reference="Strata keep-all" if keep and policy != "keep" else None,
                     ref_ms=keep["step_s"] * 1e3 if keep and policy != "keep" else None,
                     activation_peak_mb=res["activation_peak_mb"], step_peak_mb=res["step_peak_mb"],
                     moved_mb=moved / 1e6, link_mb_in_step=link * res["step_s"] / 1e6 if link else None,
                     stall_s=res["stall_s"], io=res["io"], strata=res)
        # A batch keep-all cannot hold: it runs out, and a --memory-budget plan trains it.
        # Quick (sim): a 150 MiB device, where GPT small B=16 T=128 needs about 186 MB under keep-all.
        if q:
            preset, batch, seq, budget, env = "small", 16, 128, "120M", {"STRATA_SIM_MEMORY": "150M"}
        else:
            # GPT-2 large at T=1024 keeps about 3.1 GB per sample under keep-all (measured on an H200).
            big_device = device_memory_gb() > 100
            batch = self.a.oom_batch or (64 if big_device else 32)
            budget = self.a.oom_budget or ("100G" if big_device else "60G")
            preset, seq, env = self.a.oom_preset, 1024, {}
        big = [self.bin("tools/bench/strata_cache_bench"), "--device", self.a.device, "--preset", preset, "-b", str(batch),
               "-t", str(seq), "--tf32"]
        rc, out, res = self.run("cache_oom_keep", big + ["--policy", "keep", "--warmup", "0", "--steps", "1"], 600, env)
        keep_oom = rc != 0 and "out of memory" in out.lower()
        rc, out, res = self.run("cache_oom_budget", big + ["--memory-budget", budget, "--spill-dir", spill, "--warmup",
                                                           "1", "--steps", "2", "--tag", "budget"], 900, env)
        plan = next((l[6:] for l in out.splitlines() if l.startswith("plan: ")), "")
        if rc != 0 or not res:
            self.failures.append(f"cache: the over-capacity batch under --memory-budget {budget} failed (exit {rc})")
            return
        tokens = res["B"] * res["T"]
        self.add(workload="cache-oom", config=f"{res['preset']} B={res['B']} T={res['T']} under --memory-budget {budget}",
                 strata_ms=res["step_s"] * 1e3, tokens_per_s=tokens / res["step_s"], keep_all="out of memory"
                 if keep_oom else "ran (not over capacity)", plan=plan, step_peak_mb=res["step_peak_mb"],
                 activation_peak_mb=res["activation_peak_mb"], strata=res)

    def graphs(self, models):
        q = self.a.quick
        gen = ["--rmat-scale", "10", "--rmat-edge-factor", "8"] if q else ["--rmat-scale", "19", "--rmat-edge-factor", "19"]
        data = os.path.join(self.a.out, "rmat.safetensors")
        epochs = 2 if q else 5
        for i, m in enumerate(models):
            hidden = {"gcn": 128, "sage": 128, "gat": 8}[m]
            cmd = [self.bin("examples/train_gnn/train_gnn"), *gen, "--undirected=false", "--dcsbm-classes", "8",
                   "--features", "random:128", "--model", m, "--hidden", str(hidden), "--max-steps", str(epochs + 1),
                   "--eval-every", "0", "--log-every", "100000", "--ckpt-every", "0", "--overwrite", "-o",
                   os.path.join(self.a.out, "gnn_run"), "--device", self.a.device]
            if not os.path.exists(data):
                cmd += ["--save-data", data]
            rc, out, _ = self.run(f"graphs_{m}_strata", cmd, 600)
            t = re.search(r"timing: ([0-9.]+) ms/step", out)
            e = re.search(r"data: .*?: (\d+) nodes, (\d+) edges", out)
            if rc != 0 or not t:
                self.failures.append(f"graphs: train_gnn --model {m} failed (exit {rc}), see logs/graphs_{m}_strata.log")
                continue
            if self.a.profile and not q:  # one profiled step apart: profiling serializes the step it times
                prof_cmd = [c for c in cmd if c not in ("--save-data", data)]  # the same generated graph
                prof_cmd[prof_cmd.index("--max-steps") + 1] = "3"
                _, pout, _ = self.run(f"graphs_{m}_strata_profile", prof_cmd + ["--profile"], 600)
                self.strata_profile(f"graphs_{m}_strata", pout)
            ref = None
            if self.pyg_ok and not q:
                rc2, out2, _ = self.run(f"graphs_{m}_pyg", [self.a.python, os.path.join(HERE, "gnn_pyg.py"), data, m,
                                                           str(epochs), str(hidden), str(self.a.threads),
                                                           self.a.device], 600)
                if rc2 == 0:
                    ref = 1e3 * json.loads(out2.strip().splitlines()[-1])["epoch_seconds"]
            self.add(workload="graphs", config=f"{m.upper()} R-MAT {e.group(2) if e else '?'} edges, full graph",
                     strata_ms=float(t.group(1)), strata_path=STRATA_PATHS["graphs"] if self.kind == "cuda" else
                     "CPU kernels", reference="PyG 2.8 (no compiled extensions)" if ref else None, ref_ms=ref)

    def rgnn(self):
        q = self.a.quick
        sizes = {"0.05M": 50000} if q else {"1M": 1000000, "8M": 8000000}
        for size, edges in sizes.items():
            gfile = os.path.join(self.a.out, f"typed_rmat_{size}.safetensors")
            self.run(f"rgnn_graph_{size}", [self.bin("tools/bench/strata_rgnn_bench"), "--edges", str(edges), "--save-graph",
                                            gfile, "--iters", "0"], 600)
            for model in ("rgcn", "rgat", "hgt"):
                tag = f"rgnn_{model}_{size}"
                rc, out, res = self.run(tag + "_strata", [self.bin("tools/bench/strata_rgnn_bench"), "--graph-file", gfile,
                                                        "--model", model, "--dim", "64", "--mode", "train",
                                                        "--materialization", "compact" if model != "rgcn" else
                                                        "aggregate_first", "--reorder", "auto", "--iters",
                                                        str(self.a.steps), "--warmup", "2", "--device", self.a.device,
                                                        "--profile", "1" if self.a.profile else "0"], 600)
                if rc != 0 or not res or res.get("status") != "ok":
                    self.failures.append(f"rgnn: {model} at {size} failed, see logs/{tag}_strata.log")
                    continue
                self.strata_profile(tag + "_strata", out)
                ref = None
                if self.pyg_ok and not q:
                    _, _, r = self.run(tag + "_pyg", [self.a.python, os.path.join(HERE, "rgnn_pyg.py"), gfile, "--layer",
                                                      model, "--dim", "64", "--mode", "train", "--iters",
                                                      str(self.a.steps), "--warmup", "2", "--device", self.a.device], 600)
                    ref = r
                self.add(workload="rgnn", config=f"{model.upper()} typed R-MAT {size} edges, train d=64 "
                         f"({res.get('plan', '').split(';')[0]})", strata_ms=res["median_ms"], strata_path=STRATA_PATHS["rgnn"]
                         if self.kind == "cuda" else "CPU kernels", reference=(ref or {}).get("layer"),
                         ref_ms=ref["median_ms"] if ref and ref.get("status") == "ok" else None,
                         ref_status=(ref or {}).get("status"), strata=res, ref=ref)

    def planner(self):
        q = self.a.quick
        profile = os.path.join(self.a.out, f"{self.kind}.textproto")
        cal = [self.bin("tools/strata_calibrate"), "--device", self.a.device, "-o", profile, "--spill-dir",
               os.path.join(self.a.out, "spill")]
        os.makedirs(os.path.join(self.a.out, "spill"), exist_ok=True)
        if self.kind == "sim":
            cal += ["--memcpy-mib", "64", "--file-mib", "128", "--reps", "2"]
        rc, _, _ = self.run("planner_calibrate", cal, 600)
        if rc != 0:
            self.failures.append("planner: strata_calibrate failed, see logs/planner_calibrate.log")
            return
        shape = ["--preset", "small", "--batch", "8", "--seq", "128"] if q else ["--preset", "gpt2", "--batch", "8",
                                                                                  "--seq", "1024"]
        rc, out, _ = self.run("planner", [self.bin("tools/bench/strata_plan_bench"), "--device", self.a.device,
                                          "--hardware", profile, *shape, "--budget", "50%", "--rounds",
                                          "3", "--trace-steps", "2", "--only", "swap"], 900)
        row = next((l.split() for l in out.splitlines() if l.startswith("strata ")), None)
        if rc != 0 or not row:
            self.failures.append("planner: strata_plan_bench failed, see logs/planner.log")
            return
        self.add(workload="planner", config=f"{' '.join(shape[1::2])} at 50% of the keep-all activation peak",
                 strata_ms=float(row[4]) * 1e3, predicted_ms=float(row[3]) * 1e3, step_error=row[5],
                 predicted_act_mb=float(row[9]), measured_act_mb=float(row[10]), act_error=row[11])


def table(rows):
    """The one table: a row per (workload, reference)."""
    out = ["| workload | configuration | Strata | reference | ratio | details |", "|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['strata_ms'] / r['ref_ms']:.2f}x" if r.get("ref_ms") and r.get("strata_ms") else "-"
        d = []
        if r.get("tokens_per_s"):
            d.append(f"{r['tokens_per_s']:,.0f} tok/s")
        if r.get("mfu"):
            d.append(f"MFU {100 * r['mfu']:.1f}%")
        if r.get("ref_tokens_per_s"):
            d.append(f"ref {r['ref_tokens_per_s']:,.0f} tok/s")
        if r.get("ref_mfu"):
            d.append(f"ref MFU {100 * r['ref_mfu']:.1f}%")
        for k, label in (("seq_per_s", "seq/s"), ("ref_seq_per_s", "ref seq/s"), ("images_per_s", "img/s"),
                         ("ref_images_per_s", "ref img/s")):
            if r.get(k):
                d.append(f"{label} {r[k]:,.0f}")
        if r.get("strata_peak_mb"):
            d.append(f"peak {r['strata_peak_mb'] / 1e3:.1f} GB")
        if r.get("ref_peak_mb"):
            d.append(f"ref peak {r['ref_peak_mb'] / 1e3:.1f} GB")
        if "activation_peak_mb" in r:
            d.append(f"act peak {r['activation_peak_mb']:.0f} MB, step peak {r['step_peak_mb']:.0f} MB")
        if "moved_mb" in r:
            link = f" of {r['link_mb_in_step']:.0f} MB the link carries in the step" if r.get("link_mb_in_step") else ""
            d.append(f"moved {r['moved_mb']:.0f} MB{link}, stall {r['stall_s']:.3f} s ({r['io'] or 'no I/O'})")
        if r.get("keep_all"):
            d.append(f"keep-all: {r['keep_all']}; plan: {r['plan']}")
        if r.get("predicted_ms"):
            d.append(f"predicted {r['predicted_ms']:.1f} ms ({r['step_error']}), activation peak "
                     f"{r['predicted_act_mb']:.1f} MB predicted, {r['measured_act_mb']:.1f} measured ({r['act_error']})")
        if r.get("ref_status") and r["ref_status"] != "ok":
            d.append(f"reference: {r['ref_status']}")
        if r.get("strata_path"):
            d.append("Strata: " + r["strata_path"])
        if r.get("ref_path"):
            d.append("ref: " + r["ref_path"])
        ref = f"{r['reference']} {r['ref_ms']:.1f} ms" if r.get("ref_ms") else (r.get("reference") or "-")
        strata = f"{r['strata_ms']:.1f} ms" if r.get("strata_ms") is not None else "-"
        out.append(f"| {r['workload']} | {r.get('config', '')} | {strata} | {ref} | {ratio} | {'; '.join(d)} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="gpu_bench_out")
    ap.add_argument("--only", default=DEFAULT_ONLY)
    ap.add_argument("--quick", action="store_true", help="tiny shapes: a smoke run of every part (the sim ctest)")
    ap.add_argument("--python", default="python3", help="the interpreter with torch (and torch_geometric)")
    ap.add_argument("--hardware", default="", help="the hardware profile for MFU and the link (default: by GPU name)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--gpt-batches", default="32,16,8", help="tried in order; the first that fits is timed")
    ap.add_argument("--cache-batch", type=int, default=8)
    ap.add_argument("--oom-preset", default="gpt2-large")
    ap.add_argument("--oom-batch", type=int, default=0, help="default: 64 on a device of over 100 GB, else 32")
    ap.add_argument("--oom-budget", default="", help="default: 100G on a device of over 100 GB, else 60G")
    ap.add_argument("--no-profile", dest="profile", action="store_false")
    a = ap.parse_args()
    if a.quick:
        a.warmup, a.steps = 1, 2
    os.makedirs(a.out, exist_ok=True)
    b = Bench(a)
    t0 = time.time()
    only = a.only.split(",")
    known = {"gpt", "bert", "resnet", "cache", "graphs", "graphs-one", "rgnn", "planner"}
    bad = [w for w in only if w not in known]
    if bad:
        sys.exit(f"gpu_bench: unknown --only {','.join(bad)} (known: {','.join(sorted(known))})")
    torch_version = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                                   text=True).stdout.strip() if b.torch_ok else ""
    commit_file = os.path.join(a.build_dir, "COMMIT")  # tools/pack_build.sh writes the build's commit there
    commit = open(commit_file).read().strip() if os.path.exists(commit_file) else subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "?"

    def write(final):
        """The table so far (rewritten after each workload, so a run cut short keeps what it measured)."""
        head = (f"gpu_bench on {a.device} ({b.name}), {time.strftime('%Y-%m-%d', time.gmtime())}, commit {commit}, "
                f"{time.time() - t0:.0f} s{'' if final else ' so far'}; references: "
                f"{'torch ' + torch_version if b.torch_ok else 'none (no torch in ' + a.python + ')'}"
                f"{', PyG' if b.pyg_ok else ''}; hardware profile {os.path.basename(b.hw) if b.hw else '-'}")
        md = head + "\n\n" + table(b.rows) + "\n"
        if b.failures:
            md += "\nfailed:\n" + "\n".join("- " + f for f in b.failures) + "\n"
        with open(os.path.join(a.out, "gpu_bench.md"), "w") as f:
            f.write(md)
        with open(os.path.join(a.out, "gpu_bench.json"), "w") as f:
            json.dump(dict(head=head, rows=b.rows, failures=b.failures), f, indent=1)
        return md

    b.on_row = lambda: write(final=False)
    for w in only:
        if w == "graphs":
            b.graphs(["gcn", "sage", "gat"])
        elif w == "graphs-one":
            b.graphs(["gat"])
        else:
            getattr(b, w)()
        write(final=False)
    print(write(final=True))
    return 1 if b.failures else 0


if __name__ == "__main__":
    sys.exit(main())
