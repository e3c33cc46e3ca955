"""Writes a PyTorch Geometric HeteroData as the typed graph file Strata reads (io::load_hetero_data,
io/include/strata/io/graphs/hetero_data.h): x.<type>, y.<type>, train_mask.<type>, val_mask.<type>,
test_mask.<type> and edge_index.<src>__<rel>__<dst> in safetensors, with the node types, their
counts and the edge types in HeteroData's order in the metadata (relation r is the r-th edge type,
as in HeteroData.to_homogeneous(): the relational layers' weight row r).

As a module:   from pyg_hetero_to_safetensors import save_hetero_data; save_hetero_data(data, "g.safetensors")
From a file:   python3 tools/pyg_hetero_to_safetensors.py data.pt g.safetensors [--name NAME --num-classes C]
               (data.pt: torch.save(hetero_data, "data.pt"))
Needs torch (and torch_geometric to unpickle a HeteroData); writes the safetensors bytes itself.
"""
import argparse
import json
import struct

import torch

DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL"}
FIELDS = ("x", "y", "train_mask", "val_mask", "test_mask")


def write_safetensors(path, tensors, metadata):
    """tensors: name -> torch.Tensor, in file order; metadata: str -> str."""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if t.dtype not in DTYPES:
            raise ValueError(f"{name}: dtype {t.dtype} has no safetensors name here")
        data = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def check_name(name):
    if not name or "," in name or "__" in name:
        raise ValueError(f"type name {name!r} is empty or holds ',' or '__', which the file's keys cannot hold")


def save_hetero_data(data, path, name="", num_classes=0):
    tensors = {}
    edge_keys = []
    for (src, rel, dst) in data.edge_types:
        for part in (src, rel, dst):
            check_name(part)
        key = f"{src}__{rel}__{dst}"
        edge_keys.append(key)
        tensors[f"edge_index.{key}"] = data[src, rel, dst].edge_index.to(torch.int64)
    counts = []
    for t in data.node_types:
        check_name(t)
        counts.append(str(int(data[t].num_nodes)))
        for field in FIELDS:
            v = getattr(data[t], field, None)
            if v is not None:
                tensors[f"{field}.{t}"] = v.to(torch.uint8) if field.endswith("mask") else v
    write_safetensors(path, tensors, {"format": "strata-hetero/1", "node_types": ",".join(data.node_types),
                                      "num_nodes": ",".join(counts), "edge_types": ",".join(edge_keys),
                                      "name": name, "num_classes": str(int(num_classes))})


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input", help="a torch.save'd HeteroData")
    ap.add_argument("output", help="the .safetensors file to write")
    ap.add_argument("--name", default="")
    ap.add_argument("--num-classes", type=int, default=0)
    a = ap.parse_args()
    save_hetero_data(torch.load(a.input, weights_only=False), a.output, a.name, a.num_classes)
    print(f"wrote {a.output}")
