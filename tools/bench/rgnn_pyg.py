"""The PyTorch Geometric side of rgnn_bench.py: one relational layer (RGCNConv, FastRGCNConv, RGATConv
or HGTConv, in = out = d) over the graph `strata_rgnn_bench --save-graph` wrote, inference (forward
under no_grad) or training (loss sum(out * a fixed random tensor), backward, AdamW at lr 1e-3, the
update Strata's side runs), printing one `RESULT {json}` line with the fields strata_rgnn_bench
prints: the median ms of the timed iterations, setup_peak_rss_mb (reading the graph) and peak_rss_mb
(the iterations; the peak is reset in between through /proc/self/clear_refs), or "status": "oom".

  # $TORCH_PYTHON: a Python with PyPI's torch and torch-geometric (docs/benchmarks.md says how)
  $TORCH_PYTHON tools/bench/rgnn_pyg.py /tmp/g.safetensors --layer hgt --dim 64 --mode train

Layers as PyG 2.8.1 runs them without pyg-lib, torch-scatter and torch-sparse: RGCNConv loops over
the relations, aggregating x per relation and then transforming it (aggregate-first); FastRGCNConv and
RGATConv gather a weight matrix per edge (E x d x d floats); HGTConv transforms keys and values once
per (source-type node, relation) and runs one softmax over the merged bipartite graph. RGATConv has
dropout 0 and PyG's defaults (across-relation additive self-attention), d / heads channels per head
concatenated; HGTConv reads x_dict and edge_index_dict built per node type and relation from the
same file (relations named r0, r1, ... so that PyG's ParameterDict keys stay valid).
"""
import argparse, json, resource, struct, sys, time

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8}


def read_safetensors(path):
    """name -> numpy array, metadata; each tensor read on its own (no copy of the whole file)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        meta = header.pop("__metadata__", {})
        out = {}
        for name, info in header.items():
            a, b = info["data_offsets"]
            dt = np.dtype(DTYPES[info["dtype"]])
            f.seek(8 + n + a)
            out[name] = np.fromfile(f, dtype=dt, count=(b - a) // dt.itemsize).reshape(info["shape"])
    return out, meta


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graph_file")
    ap.add_argument("--layer", required=True, choices=["rgcn", "fast_rgcn", "rgat", "hgt"])
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--mode", choices=["infer", "train"], default="infer")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu", help="cpu or cuda: where the layer, the graph and x live")
    a = ap.parse_args()
    layer_name = {"rgcn": "RGCNConv", "fast_rgcn": "FastRGCNConv", "rgat": "RGATConv", "hgt": "HGTConv"}[a.layer]
    result = {"side": "pyg", "layer": layer_name, "model": "rgcn" if "rgcn" in a.layer else a.layer, "dim": a.dim,
              "heads": a.heads, "mode": a.mode, "threads": a.threads, "device": a.device}

    def emit(**kw):
        print("RESULT " + json.dumps({**result, **kw}), flush=True)

    try:
        import torch
        torch.set_num_threads(a.threads)
        torch.manual_seed(a.seed)
        dev = torch.device(a.device)
        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        from torch_geometric.nn import FastRGCNConv, HGTConv, RGATConv, RGCNConv

        t_graph = time.perf_counter()
        t, meta = read_safetensors(a.graph_file)
        node_types = meta["node_types"].split("\n")
        rel_names = meta["relation_names"].split("\n")
        off = t["node_type_offsets"].astype(np.int64)
        rel_types = t["relation_types"].astype(np.int64)
        N, R, E = int(off[-1]), len(rel_names), int(t["edge_index"].shape[1])
        result.update(graph=meta["name"], nodes=N, edges=E, relations=R, node_types=len(node_types),
                      torch=torch.__version__)
        edge_index = torch.from_numpy(t.pop("edge_index")).long()
        edge_type = torch.from_numpy(t.pop("edge_type")).long()
        graph_s = time.perf_counter() - t_graph
        d, H = a.dim, a.heads

        if a.layer == "hgt":
            # x_dict per node type, edge_index_dict per relation in local ids, both in file order
            # (PyG's HeteroLinear assumes edge_index_dict's order is metadata[1]'s).
            counts = torch.bincount(edge_type, minlength=R).tolist()
            assert bool((edge_type[1:] >= edge_type[:-1]).all()), "edges must be grouped by relation"
            edge_types, ei_dict, start = [], {}, 0
            for r in range(R):
                s, dd = int(rel_types[r, 0]), int(rel_types[r, 1])
                key = (node_types[s], f"r{r}", node_types[dd])
                edge_types.append(key)
                ei = edge_index[:, start:start + counts[r]]
                ei_dict[key] = ei - torch.tensor([[int(off[s])], [int(off[dd])]])
                start += counts[r]
            del edge_index, edge_type
            conv = HGTConv(d, d, (node_types, edge_types), heads=H).to(dev)
            ei_dict = {k: v.to(dev) for k, v in ei_dict.items()}
            x = {nt: torch.randn(int(off[i + 1] - off[i]), d).to(dev) for i, nt in enumerate(node_types)}
            seed = {nt: torch.randn(int(off[i + 1] - off[i]), d).to(dev) for i, nt in enumerate(node_types)}
            forward = lambda: conv(x, ei_dict)
            loss_of = lambda out: sum((o * seed[k]).sum() for k, o in out.items() if o is not None)
        else:
            if a.layer == "rgcn":
                conv = RGCNConv(d, d, R)
            elif a.layer == "fast_rgcn":
                conv = FastRGCNConv(d, d, R)
            else:
                conv = RGATConv(d, d // H, R, heads=H, dropout=0.0)
            conv = conv.to(dev)
            edge_index, edge_type = edge_index.to(dev), edge_type.to(dev)
            x = torch.randn(N, d).to(dev)
            seed = torch.randn(N, d).to(dev)
            forward = lambda: conv(x, edge_index, edge_type)
            loss_of = lambda out: (out * seed).sum()

        setup_peak = peak_rss_mb()
        peak_reset = reset_peak_rss()
        opt = torch.optim.AdamW(conv.parameters(), lr=1e-3) if a.mode == "train" else None
        times, loss = [], 0.0
        for i in range(a.warmup + a.iters):
            t0 = time.perf_counter()
            if opt is not None:
                opt.zero_grad()
                l = loss_of(forward())
                l.backward()
                opt.step()
                loss = float(l)
            else:
                with torch.no_grad():
                    forward()
            sync()
            if i >= a.warmup:
                times.append(time.perf_counter() - t0)
        ts = sorted(times)
        med = ts[len(ts) // 2] if len(ts) % 2 else 0.5 * (ts[len(ts) // 2 - 1] + ts[len(ts) // 2])
        emit(status="ok", params=sum(p.numel() for p in conv.parameters()), graph_s=round(graph_s, 3),
             median_ms=med * 1e3, min_ms=ts[0] * 1e3, times_ms=[round(s * 1e3, 3) for s in times], loss=loss,
             setup_peak_rss_mb=round(setup_peak, 1), peak_rss_mb=round(peak_rss_mb(), 1), peak_reset=peak_reset)
    except (MemoryError, RuntimeError) as e:
        msg = str(e)
        if isinstance(e, MemoryError) or "memory" in msg.lower():
            emit(status="oom", error=msg[:300], peak_rss_mb=round(peak_rss_mb(), 1))
            return 0
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
