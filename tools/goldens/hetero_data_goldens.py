"""Writes tests/goldens/gnn/hetero_data_pyg.safetensors (a small HeteroData saved by
tools/pyg_hetero_to_safetensors.py) and tests/goldens/gnn/hetero_data_homogeneous.safetensors (what
PyG's HeteroData.to_homogeneous() makes of it: edge_index, edge_type, node_type). HeteroData.*
loads the first with io::load_hetero_data and checks that its graph's edges, relations and node
types are PyG's, edge by edge.

    python3 -m venv DIR && DIR/bin/pip install torch torch_geometric && DIR/bin/python tools/goldens/hetero_data_goldens.py
"""
import os
import sys

import torch
from torch_geometric.data import HeteroData

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from pyg_hetero_to_safetensors import save_hetero_data, write_safetensors  # noqa: E402

OUT = os.path.join(HERE, "..", "..", "tests", "goldens", "gnn")
torch.manual_seed(0)
d = HeteroData()
# Node types in an order that is not alphabetical; "venue" has features of another width, "topic"
# none at all (num_nodes only), "author" labels and masks.
d["paper"].x = torch.randn(6, 4)
d["author"].x = torch.randn(5, 4)
d["author"].y = torch.tensor([0, 1, 2, 1, 0])
d["author"].train_mask = torch.tensor([True, True, False, False, True])
d["author"].val_mask = torch.tensor([False, False, True, False, False])
d["author"].test_mask = torch.tensor([False, False, False, True, False])
d["venue"].x = torch.randn(2, 3)
d["topic"].num_nodes = 3
d["author", "writes", "paper"].edge_index = torch.tensor([[0, 1, 1, 2, 4, 4], [0, 0, 2, 3, 5, 5]])
d["paper", "cites", "paper"].edge_index = torch.tensor([[0, 2, 3, 5], [1, 1, 0, 4]])
d["paper", "published_in", "venue"].edge_index = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 1, 0, 1, 0, 1]])
d["paper", "about", "topic"].edge_index = torch.tensor([[1, 3, 5], [2, 0, 2]])
d["topic", "rev_about", "paper"].edge_index = torch.tensor([[2, 0, 2], [1, 3, 5]])
save_hetero_data(d, os.path.join(OUT, "hetero_data_pyg.safetensors"), name="toy-dblp", num_classes=3)
h = d.to_homogeneous(add_node_type=True, add_edge_type=True)
write_safetensors(os.path.join(OUT, "hetero_data_homogeneous.safetensors"),
                  {"edge_index": h.edge_index, "edge_type": h.edge_type, "node_type": h.node_type}, {})
print("node types", d.node_types, "edge types", d.edge_types)
