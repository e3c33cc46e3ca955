"""What the PyTorch reference sides (gpt_bench_torch.py, bert_bench_torch.py, resnet_bench_torch.py) share: the setup
line (torch, its BLAS, threads), the timed training-step loop and the figures of their RESULT lines."""
import ctypes, json, os, resource, statistics, sys, time

import torch


def blas_info():
    """(library path, OpenBLAS config string, OpenBLAS core name) of the BLAS torch loaded."""
    path = ""
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            if ("libopenblas" in p or "/libblas.so" in p) and p.endswith(tuple(".so.%d" % i for i in range(10))):
                path = os.path.realpath(p)
                break
    cfg, core = "", ""
    if path:
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_config.restype = ctypes.c_char_p
            lib.openblas_get_corename.restype = ctypes.c_char_p
            cfg = lib.openblas_get_config().decode()
            core = lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            pass
    return path, cfg, core


def add_step_flags(ap):
    """--threads, the untimed (--warmup) and timed (--steps) step counts, --info-only and the result's --tag."""
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--info-only", action="store_true", help="print the setup line and exit")
    ap.add_argument("--tag", default="", help="a label the RESULT line carries")


def add_size_flags(ap, **sizes):
    """One integer flag per size, e.g. add_size_flags(ap, L=12, C=768) adds --L and --C with those defaults."""
    for name, default in sizes.items():
        ap.add_argument("--" + name, type=int, default=default)


def setup_run(a):
    """Runs torch on a.threads threads and prints the `INFO {json}` setup line (and exits there with a.info_only);
    seeds the model's initialisation with 0. Returns (the INFO dict, the batch's generator, seeded with 1234)."""
    torch.set_num_threads(a.threads)
    path, cfg, core = blas_info()
    info = dict(torch=torch.__version__, blas=path, blas_config=cfg, blas_core=core,
                openblas_coretype_env=os.environ.get("OPENBLAS_CORETYPE", ""), threads=torch.get_num_threads(),
                mkldnn=torch.backends.mkldnn.is_available())
    print("INFO " + json.dumps(info), flush=True)
    if a.info_only:
        sys.exit(0)
    torch.manual_seed(0)
    return info, torch.Generator().manual_seed(1234)


def timed_steps(opt, loss_fn, warmup, steps):
    """`warmup` untimed steps, then `steps` timed ones, each printed; a step is zero_grad(set_to_none=True) +
    loss_fn() + backward + opt.step() + loss.item(). Returns (the last loss, each timed step's seconds)."""
    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(warmup):
        loss = step()
    times = []
    for i in range(steps):
        t0 = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - t0)
        print(f"step {i}: loss {loss:.4f} {times[-1] * 1e3:.1f} ms", flush=True)
    return loss, times


def step_figures(times, loss):
    """The RESULT line's figures: min and median step (ms), the process's peak RSS (MB) and the last loss."""
    return dict(min_ms=min(times) * 1e3, median_ms=statistics.median(times) * 1e3,
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, loss=loss)


def print_result(fields, times, loss, info):
    """The `RESULT {json}` line of a transformer reference: `fields`, the step figures, each timed step (ms) and the
    INFO setup."""
    res = dict(fields, **step_figures(times, loss), times_ms=[round(t * 1e3, 1) for t in times], **info)
    print("RESULT " + json.dumps(res), flush=True)
