"""PyTorch Geometric fixtures for the graph convolutions (tests/goldens/gnn/gnn_layers.safetensors):
GCNConv and SAGEConv in float64 on a small odd-sized graph with an isolated node, self loops and
duplicate edges, for each option tests/models/gnn_conv_test.cpp checks: each layer's parameters
(exactly float32 values), output, the loss sum(out * seed), and the gradients of every parameter
and of x. Run by hand in a virtualenv with torch and torch-geometric from PyPI:

    python tools/goldens/gnn_goldens.py tests/goldens/gnn/gnn_layers.safetensors
"""
import json, os, sys
import torch
import torch_geometric
from torch_geometric.nn import GCNConv, SAGEConv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_file import write_safetensors, as_f32_exact  # noqa: E402

torch.manual_seed(0)
N, F_IN, F_OUT = 11, 7, 5
# Random edges, then duplicates (0->1 twice more), self loops (2->2, 5->5 twice); node 10 isolated.
src = torch.randint(0, 10, (30,))
dst = torch.randint(0, 10, (30,))
extra = torch.tensor([[0, 0, 2, 5, 5], [1, 1, 2, 5, 5]])
edge_index = torch.cat([torch.stack([src, dst]), extra], dim=1)
x0 = torch.randn(N, F_IN).float().double()
seed = torch.randn(N, F_OUT).float().double()

cases = {
    "gcn": lambda: GCNConv(F_IN, F_OUT),
    "gcn_no_loops": lambda: GCNConv(F_IN, F_OUT, add_self_loops=False),
    "gcn_plain": lambda: GCNConv(F_IN, F_OUT, normalize=False, bias=False),
    "sage_mean": lambda: SAGEConv(F_IN, F_OUT),
    "sage_sum": lambda: SAGEConv(F_IN, F_OUT, aggr="sum"),
    "sage_no_root": lambda: SAGEConv(F_IN, F_OUT, root_weight=False),
    "sage_normalize": lambda: SAGEConv(F_IN, F_OUT, normalize=True),
}
tensors = {"edge_index": edge_index, "x": x0, "seed": seed}
for name, make in cases.items():
    layer = as_f32_exact(make())
    x = x0.clone().requires_grad_(True)
    out = layer(x, edge_index)
    loss = (out * seed).sum()
    loss.backward()
    tensors[f"{name}.out"] = out.detach()
    tensors[f"{name}.loss"] = loss.detach().reshape(1)
    tensors[f"{name}.grad.x"] = x.grad
    for pname, p in layer.named_parameters():
        tensors[f"{name}.param.{pname}"] = p.detach()
        tensors[f"{name}.grad.{pname}"] = p.grad
meta = {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__, "N": str(N),
        "cases": json.dumps(list(cases))}
write_safetensors(sys.argv[1], tensors, meta)
print("wrote", sys.argv[1], "with", len(tensors), "tensors")
