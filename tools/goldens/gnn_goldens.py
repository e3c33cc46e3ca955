"""PyTorch Geometric fixtures for the graph convolutions (tests/goldens/gnn/gnn_layers.safetensors):
GCNConv, SAGEConv and GATConv (dropout 0) in float64 on a small odd-sized graph with an isolated node, self loops and
duplicate edges, for each option tests/models/gnn_conv_test.cpp checks: each layer's parameters
(exactly float32 values), output, the loss sum(out * seed) (seed: the case's own where its
output width differs), and the gradients of every parameter
and of x. Run by hand in a virtualenv with torch and torch-geometric from PyPI:

    python tools/goldens/gnn_goldens.py tests/goldens/gnn/gnn_layers.safetensors
"""
import json, os, sys
import torch
import torch_geometric
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

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
E_DIM = 3
edge_attr = torch.randn(edge_index.size(1), E_DIM).float().double()  # input edge order

cases = {
    "gcn": lambda: GCNConv(F_IN, F_OUT),
    "gcn_no_loops": lambda: GCNConv(F_IN, F_OUT, add_self_loops=False),
    "gcn_plain": lambda: GCNConv(F_IN, F_OUT, normalize=False, bias=False),
    "sage_mean": lambda: SAGEConv(F_IN, F_OUT),
    "sage_sum": lambda: SAGEConv(F_IN, F_OUT, aggr="sum"),
    "sage_no_root": lambda: SAGEConv(F_IN, F_OUT, root_weight=False),
    "sage_normalize": lambda: SAGEConv(F_IN, F_OUT, normalize=True),
    "sage_max": lambda: SAGEConv(F_IN, F_OUT, aggr="max"),
    "gat": lambda: GATConv(F_IN, F_OUT),
    "gat_heads": lambda: GATConv(F_IN, 4, heads=3),
    "gat_mean": lambda: GATConv(F_IN, 4, heads=3, concat=False),
    "gat_slope_no_loops": lambda: GATConv(F_IN, F_OUT, heads=2, negative_slope=0.1, add_self_loops=False),
    "gat_edge": lambda: GATConv(F_IN, 4, heads=2, edge_dim=E_DIM),
    "gat_edge_no_loops": lambda: GATConv(F_IN, 4, heads=2, edge_dim=E_DIM, add_self_loops=False),
    "gat_residual": lambda: GATConv(F_IN, 4, heads=2, residual=True, bias=False),
}
tensors = {"edge_index": edge_index, "x": x0, "seed": seed, "edge_attr": edge_attr}
for name, make in cases.items():
    layer = as_f32_exact(make())
    x = x0.clone().requires_grad_(True)
    out = layer(x, edge_index, edge_attr=edge_attr) if "edge" in name else layer(x, edge_index)
    case_seed = seed
    if out.shape != seed.shape:
        case_seed = torch.randn(out.shape).float().double()
        tensors[f"{name}.seed"] = case_seed
    loss = (out * case_seed).sum()
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
