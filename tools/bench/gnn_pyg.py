"""The PyTorch Geometric side of the GNN comparisons: the same models train_gnn builds (GCN, SAGE,
GAT as models::GNN stacks them), read from a dataset file train_gnn --save-data wrote, trained with
the same AdamW groups (weight decay on >= 2-D parameters only), learning rate and epochs.

Imported by gnn_accuracy.py and gnn_bench.py; needs torch and torch-geometric (PyPI).
"""
import json, struct, time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        blob = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(blob[a:b], dtype=DTYPES[info["dtype"]]).reshape(info["shape"]).copy())
    return out, header.get("__metadata__", {})


class Net(torch.nn.Module):
    """train_gnn's models::GNN: dropout on every layer's input, ReLU (GCN, SAGE) or ELU (GAT) between."""

    def __init__(self, conv, in_ch, hidden, classes, layers=2, heads=8, aggr="mean", dropout=0.5, attn_dropout=0.0):
        super().__init__()
        self.conv, self.dropout = conv, dropout
        self.convs = torch.nn.ModuleList()
        c = in_ch
        for l in range(layers):
            last = l + 1 == layers
            out = classes if last else hidden
            if conv == "gcn":
                self.convs.append(GCNConv(c, out))
                c = out
            elif conv == "sage":
                self.convs.append(SAGEConv(c, out, aggr=aggr))
                c = out
            else:
                h = 1 if last else heads
                self.convs.append(GATConv(c, out, heads=h, concat=not last, dropout=attn_dropout))
                c = out * h

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = F.dropout(x, self.dropout, self.training)
            x = conv(x, edge_index)
            if i + 1 < len(self.convs):
                x = F.elu(x) if self.conv == "gat" else F.relu(x)
        return x


def make_model(conv, data, hidden=None, layers=2, heads=8, aggr="mean", dropout=None):
    if hidden is None:
        hidden = 8 if conv == "gat" else 64
    if dropout is None:
        dropout = 0.6 if conv == "gat" else 0.5
    return Net(conv, data["x"].shape[1], hidden, int(data["num_classes"]), layers, heads, aggr, dropout)


def optimizer(model, lr=0.01, weight_decay=5e-4, fused=None):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.999), eps=1e-8, fused=fused)


def load(path):
    t, meta = read_safetensors(path)
    d = {"edge_index": t["edge_index"], "x": t["x"].float(), "y": t["y"].long(), "num_classes": int(meta["num_classes"])}
    for m in ("train_mask", "val_mask", "test_mask"):
        d[m] = t[m].bool()
    return d


def train_accuracy(conv, data, epochs=200, seed=0, eval_every=1, **kw):
    """Returns (final test accuracy, test accuracy at the best validation accuracy)."""
    torch.manual_seed(seed)
    model = make_model(conv, data, **kw)
    opt = optimizer(model)
    x, ei, y = data["x"], data["edge_index"], data["y"]
    best_val, test_at_best = -1.0, 0.0
    final_test = 0.0
    for epoch in range(1, epochs + 1):
        model.train()
        opt.zero_grad()
        loss = F.cross_entropy(model(x, ei)[data["train_mask"]], y[data["train_mask"]])
        loss.backward()
        opt.step()
        if epoch % eval_every == 0 or epoch == epochs:
            model.eval()
            with torch.no_grad():
                pred = model(x, ei).argmax(1)
            acc = lambda m: float((pred[m] == y[m]).float().mean())
            val, test = acc(data["val_mask"]), acc(data["test_mask"])
            if val > best_val:
                best_val, test_at_best = val, test
            final_test = test
    return final_test, test_at_best


def epoch_seconds(conv, data, epochs=5, warmup=1, device="cpu", **kw):
    """Median seconds of a full-graph training epoch (forward, backward, AdamW) on `device` (each
    epoch waits for it; AdamW fused there, as PyTorch's users run it on a GPU)."""
    torch.manual_seed(0)
    dev = torch.device(device)
    model = make_model(conv, data, **kw).to(dev)
    opt = optimizer(model) if dev.type == "cpu" else optimizer(model, fused=True)
    x, ei, y, m = (data[k].to(dev) for k in ("x", "edge_index", "y", "train_mask"))
    times = []
    for i in range(warmup + epochs):
        t0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x, ei)[m], y[m]).backward()
        opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


if __name__ == "__main__":  # one timing in its own process (its peak RSS is its own): FILE MODEL EPOCHS HIDDEN [THREADS [DEVICE]]
    import sys
    torch.set_num_threads(int(sys.argv[5]) if len(sys.argv) > 5 else 2)
    data = load(sys.argv[1])
    secs = epoch_seconds(sys.argv[2], data, epochs=int(sys.argv[3]), hidden=int(sys.argv[4]),
                         device=sys.argv[6] if len(sys.argv) > 6 else "cpu")
    print(json.dumps({"epoch_seconds": secs}))
