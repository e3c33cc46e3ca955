"""PyTorch Geometric fixtures for the relational graph convolutions
(tests/goldens/gnn/rgnn_layers.safetensors): RGCNConv, RGATConv (dropout 0) and HGTConv in float64
on small odd-sized typed graphs: each layer's parameters (exactly float32 values), output, the
loss sum(out * seed) and the gradients of every parameter and of the node features. Run by hand
in a virtualenv with torch and torch-geometric from PyPI:

    python tools/goldens/rgnn_goldens.py tests/goldens/gnn/rgnn_layers.safetensors

Conventions (all layers): edge_index[0] is the source j, edge_index[1] the destination i; a message
flows j -> i. Self loops and duplicate edges in the input are ordinary edges (nothing is added,
removed or merged). Parameters that PyG initialises to a constant (biases 0, HGT's skip and p_rel
1) get uniform(-0.5, 0.5) noise added before the float32 rounding, so that each of them shows in
the forward pass; every stored parameter is float32-exact, computations are float64.

Graphs
------
RGCN / RGAT ("edge_index" [2, E] i64, "edge_type" [E] i64, "x" [13, 6] f64): N = 13 nodes,
R = 4 relations, E = 51. 45 random edges (sources 0..12, destinations 0..11, types 0..2) in random
order, then 0->1 (type 0) twice (a duplicate pair), 0->1 with type 2, the self loop 4->4
(type 1), and the only two edges of relation 3: 12->5 and the self loop 7->7. Node 12 has no
in-edges (its output is the bias / root term only) but is a source. edge_type is not sorted.

HGT: node types in this order (it is also the order of the global node ids, the x_dict order
and metadata[0]): paper (7 nodes, global ids 0..6), author (5 nodes, 7..11), field (3 nodes,
12..14). Relations in this order (metadata[1], the edge_index_dict order, relation index r):
  0 ("author", "writes", "paper")   1 ("paper", "cites", "paper")
  2 ("paper", "has", "field")       3 ("field", "rev_has", "paper")
Stored both ways: "hgt.x.<type>" [n_type, 6] and "hgt.edge_index.<src>__<rel>__<dst>" [2, E_r] in
local ids; "hgt.x" [15, 6] (types concatenated in the order above), "hgt.edge_index" [2, 29]
(relations concatenated in relation order, global ids) and "hgt.edge_type" [29] (r).
Paper 6 and field 2 have no in-edges; author is never a destination, so HGTConv returns no
author output. writes has a duplicate edge, cites a self loop.

Cases and tensor names
----------------------
<case>.out, <case>.loss [1], <case>.grad.x, <case>.param.<name>, <case>.grad.<name> (<name>: the
PyG state_dict name), <case>.seed when the output width differs from the shared "seed" [13, 4];
RGAT also <case>.alpha [E, heads] (the attention coefficients). HGT per type:
<case>.out.<type>, <case>.grad.x.<type>, seed "hgt.seed.<type>" [n, 4] or <case>.seed.<type>;
loss = sum over output types of sum(out[type] * seed[type]). A registered parameter that the
case's forward pass never reads (RGAT's w, l1, b1, l2, b2; HGT's out_lin and skip of a type that
receives no message) has no gradient and is not stored; the metadata lists it with used=false.
(RGAT's l2 is even left uninitialised by PyG: reset_parameters calls torch.full without storing it.)

RGCNConv (PyG 2.8.1, no pyg_lib: the per-relation loop). in F = 6, out C = 4. Parameters:
weight [R, F, C] (plain) | weight [B, F, C] and comp [R, B] (num_bases B) | weight [R, NB, F/NB,
C/NB] (num_blocks NB); root [F, C] (root_weight); bias [C] (bias).
  W_r = weight[r]; with bases W_r = sum_b comp[r, b] * weight[b]; with blocks W_r is block-diagonal
  with blocks weight[r, 0..NB-1] (input slice b*F/NB.., output slice b*C/NB..).
  y_i = sum_r agg_{e = (j -> i), type r} (x_j @ W_r) + x_i @ root + bias
  agg = mean: (1 / |edges of type r into i|) * sum (a multiset: duplicates count; an empty set
  contributes 0, so the mean is per destination AND per relation); agg = add: the sum.
  FastRGCNConv gives the same values (asserted here for every case, not stored).
  cases: rgcn (default: mean, root, bias), rgcn_bases (num_bases=2), rgcn_blocks (num_blocks=2),
  rgcn_no_root (root_weight=False), rgcn_no_bias (bias=False), rgcn_add (aggr="add").

RGATConv (PyG 2.8.1), path exercised by every case: attention_mechanism="across-relation",
attention_mode="additive-self-attention", dim=1 (dim > 1 is only allowed in the multiplicative
mode), mod=None, num_bases=None, num_blocks=None, edge_dim=None, negative_slope=0.2, dropout=0,
aggr "add". in F = 6, out C = 4, H = heads. Parameters: weight [R, F, H*C]; q [H*C, H];
k [H*C, H]; bias [H*C] when concat else [C]; w [C], l1 [1, C], b1 [1, C], l2 [C, C], b2 [1, C]
(registered, unused on this path). For every edge e = (j -> i) with relation r = edge_type[e]:
  g_i = x_i @ weight[r]   [H*C]  (the DESTINATION transformed with the edge's relation)
  g_j = x_j @ weight[r]   [H*C]
  s_e = g_i @ q + g_j @ k  [H]   (q and k are dense [H*C, H]: head h's logit reads all H*C
                                   features of g, not just head h's slice)
  a_e[h] = leaky_relu(s_e[h], 0.2)
  alpha_e[h] = exp(a_e[h] - m_i[h]) / (sum_{e' into i} exp(a_e'[h] - m_i[h]) + 1e-16),
      m_i[h] = max_{e' into i} a_e'[h]: one softmax per destination i and head h over ALL its
      in-edges of every relation (duplicates and self loops included).
  o_i[h, :] = sum_{e into i} alpha_e[h] * g_j[h*C:(h+1)*C]
  concat=True: y_i = [o_i[0, :], ..., o_i[H-1, :]] + bias  [H*C];
  concat=False: y_i = (1/H) sum_h o_i[h, :] + bias  [C].
  No self loop is added, there is no root/skip term and no output nonlinearity; a node with no
  in-edges gets y_i = bias.
  cases: rgat (heads=1, concat=True), rgat_heads (heads=3, concat=True),
  rgat_mean (heads=2, concat=False).

HGTConv (PyG 2.8.1). in F = 6 for every type, out C, H heads, D = C / H, R = 4 relations.
Parameters (named_parameters order): kqv_lin.lins.<type>.weight [3C, F], .bias [3C];
out_lin.lins.<type>.weight [C, C], .bias [C]; k_rel.weight [H*R, D, D]; v_rel.weight [H*R, D, D]
(no bias); skip.<type> [1]; p_rel.<src>__<rel>__<dst> [1, H].
  per node n of type t: kqv = x_n @ kqv_lin.lins.t.weight^T + kqv_lin.lins.t.bias, split into
  k = kqv[0:C], q = kqv[C:2C], v = kqv[2C:3C]; head h is the slice h*D:(h+1)*D of each.
  per edge e = (j -> i) of relation r, head h (W @ is a row vector times the matrix, no
  transpose): k'_e[h] = k_j[h] @ k_rel.weight[h*R + r], v'_e[h] = v_j[h] @ v_rel.weight[h*R + r]
  s_e[h] = (q_i[h] . k'_e[h]) * p_rel_r[0, h] / sqrt(D)
  alpha_e[h] = softmax of s over all in-edges of i of every relation, per head (same form as
      RGAT above, with + 1e-16 in the denominator)
  m_i = [sum_{e into i} alpha_e[0] v'_e[0], ..., sum alpha_e[H-1] v'_e[H-1]]  [C]
  a_i = gelu(m_i) @ out_lin.lins.t.weight^T + out_lin.lins.t.bias  (exact erf gelu; t = type of i)
  if C == F (the type's input width): y_i = sigmoid(skip.t) * a_i + (1 - sigmoid(skip.t)) * x_i,
  else y_i = a_i. Only types that are the destination of some relation get an output; a
  destination-type node without in-edges has m_i = 0, so a_i = out_lin bias.
  The relation index r is the position in metadata[1]. PyG builds the k_rel/v_rel type vector in
  edge_index_dict order but calls HeteroLinear with is_sorted=True, so an edge_index_dict whose
  order differs from metadata[1] silently applies the wrong relation matrices; here both orders
  agree. (The x_dict order does not matter.)
  cases: hgt_h2 (C=4, H=2, no skip), hgt_h1 (C=4, H=1, no skip), hgt_skip (C=6, H=2, D=3, skip).

Metadata (every value a string): torch, torch_geometric, N, num_relations, hgt_node_types
(JSON list), hgt_node_offsets (JSON object), hgt_edge_types (JSON list of [src, rel, dst]) and
cases (JSON object): case -> {"layer": PyG class, "options": constructor keyword arguments,
"params": [[state_dict name, shape, used], ...] in named_parameters order, "out_shape" (HGT:
{type: shape}), "seed": tensor name(s) of the seed}.
"""
import json, os, struct, sys
import torch
import torch_geometric
from torch_geometric.nn import FastRGCNConv, HGTConv, RGATConv, RGCNConv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_file import write_safetensors, as_f32_exact  # noqa: E402

torch.set_num_threads(2)
torch.manual_seed(0)


def perturb_constants(layer):
    """Adds uniform(-0.5, 0.5) noise to parameters that PyG initialises to a constant (the noise
    is drawn for every parameter, so the random stream does not depend on the initial values)."""
    with torch.no_grad():
        for p in layer.parameters():
            noise = torch.rand(p.shape, dtype=p.dtype) - 0.5
            if p.numel() > 0 and torch.isfinite(p).all() and bool((p == p.reshape(-1)[0]).all()):
                p.add_(noise)
    return layer


def read_safetensors(path):
    """A minimal safetensors reader (name -> tensor, metadata) for the self-check."""
    dts = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "BOOL": torch.bool}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__")
    out = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=dts[h["dtype"]]).reshape(h["shape"])
    return out, meta


def params_meta(layer):
    return [[n, list(p.shape), p.grad is not None] for n, p in layer.named_parameters()]


def store_params(tensors, name, layer):
    for pname, p in layer.named_parameters():
        if p.grad is not None:
            tensors[f"{name}.param.{pname}"] = p.detach()
            tensors[f"{name}.grad.{pname}"] = p.grad


# ---- RGCN / RGAT graph ----
N, R, F_IN, F_OUT = 13, 4, 6, 4
src = torch.randint(0, 13, (45,))
dst = torch.randint(0, 12, (45,))
typ = torch.randint(0, 3, (45,))
extra = torch.tensor([[0, 0, 0, 4, 12, 7], [1, 1, 1, 4, 5, 7]])
extra_type = torch.tensor([0, 0, 2, 1, 3, 3])
edge_index = torch.cat([torch.stack([src, dst]), extra], dim=1)
edge_type = torch.cat([typ, extra_type])
assert not (edge_index[1] == 12).any() and int((edge_type == 3).sum()) == 2
x0 = torch.randn(N, F_IN).float().double()
seed = torch.randn(N, F_OUT).float().double()
tensors = {"edge_index": edge_index, "edge_type": edge_type, "x": x0, "seed": seed}
cases_meta = {}

rgcn_cases = {
    "rgcn": {},
    "rgcn_bases": {"num_bases": 2},
    "rgcn_blocks": {"num_blocks": 2},
    "rgcn_no_root": {"root_weight": False},
    "rgcn_no_bias": {"bias": False},
    "rgcn_add": {"aggr": "add"},
}
rgat_cases = {
    "rgat": {"heads": 1, "concat": True},
    "rgat_heads": {"heads": 3, "concat": True},
    "rgat_mean": {"heads": 2, "concat": False},
}


def case_seed(name, shape):
    if tuple(shape) == tuple(seed.shape):
        return seed, "seed"
    s = torch.randn(shape).float().double()
    tensors[f"{name}.seed"] = s
    return s, f"{name}.seed"


for name, opts in rgcn_cases.items():
    layer = as_f32_exact(perturb_constants(RGCNConv(F_IN, F_OUT, R, **opts)))
    x = x0.clone().requires_grad_(True)
    out = layer(x, edge_index, edge_type)
    s, sname = case_seed(name, out.shape)
    loss = (out * s).sum()
    loss.backward()
    tensors[f"{name}.out"] = out.detach()
    tensors[f"{name}.loss"] = loss.detach().reshape(1)
    tensors[f"{name}.grad.x"] = x.grad
    store_params(tensors, name, layer)
    cases_meta[name] = {"layer": "RGCNConv", "options": {"in_channels": F_IN, "out_channels": F_OUT,
                        "num_relations": R, **opts}, "params": params_meta(layer),
                        "out_shape": list(out.shape), "seed": sname}
    # FastRGCNConv (one edge per bmm, per-(node, relation) mean) must agree.
    fast = FastRGCNConv(F_IN, F_OUT, R, **opts).double()
    fast.load_state_dict(layer.state_dict())
    xf = x0.clone().requires_grad_(True)
    outf = fast(xf, edge_index, edge_type)
    (outf * s).sum().backward()
    assert torch.allclose(outf, out, rtol=1e-12, atol=1e-12), name
    assert torch.allclose(xf.grad, x.grad, rtol=1e-12, atol=1e-12), name
    for (pn, p), (_, pf) in zip(layer.named_parameters(), fast.named_parameters()):
        assert torch.allclose(p.grad, pf.grad, rtol=1e-12, atol=1e-12), (name, pn)

for name, opts in rgat_cases.items():
    layer = as_f32_exact(perturb_constants(RGATConv(F_IN, F_OUT, R, dropout=0.0, **opts)))
    x = x0.clone().requires_grad_(True)
    out, (_, alpha) = layer(x, edge_index, edge_type, return_attention_weights=True)
    s, sname = case_seed(name, out.shape)
    loss = (out * s).sum()
    loss.backward()
    tensors[f"{name}.out"] = out.detach()
    tensors[f"{name}.loss"] = loss.detach().reshape(1)
    tensors[f"{name}.alpha"] = alpha.detach()
    tensors[f"{name}.grad.x"] = x.grad
    store_params(tensors, name, layer)
    cases_meta[name] = {"layer": "RGATConv", "options": {
        "in_channels": F_IN, "out_channels": F_OUT, "num_relations": R, **opts,
        "attention_mechanism": layer.attention_mechanism, "attention_mode": layer.attention_mode,
        "dim": layer.dim, "negative_slope": layer.negative_slope, "dropout": layer.dropout,
        "mod": layer.mod, "num_bases": layer.num_bases, "num_blocks": layer.num_blocks,
        "edge_dim": layer.edge_dim, "bias": layer.bias is not None},
        "params": params_meta(layer), "out_shape": list(out.shape), "seed": sname}
    # The formula in the module docstring, written out.
    with torch.no_grad():
        H, C = layer.heads, F_OUT
        W = layer.weight[edge_type]
        gi = torch.bmm(x0[edge_index[1]].unsqueeze(1), W).squeeze(1)
        gj = torch.bmm(x0[edge_index[0]].unsqueeze(1), W).squeeze(1)
        a = torch.nn.functional.leaky_relu(gi @ layer.q + gj @ layer.k, 0.2)
        ref_alpha = torch.empty_like(a)
        o = torch.zeros(N, H, C, dtype=torch.float64)
        for i in range(N):
            m = edge_index[1] == i
            if m.any():
                ref_alpha[m] = torch.softmax(a[m], dim=0)
        o.index_add_(0, edge_index[1], ref_alpha.unsqueeze(-1) * gj.view(-1, H, C))
        ref = (o.reshape(N, H * C) if layer.concat else o.mean(1)) + layer.bias
        assert torch.allclose(ref, out, rtol=1e-10, atol=1e-12), name
        assert torch.allclose(ref_alpha, alpha, rtol=1e-10, atol=1e-12), name

# ---- HGT graph ----
node_types = ["paper", "author", "field"]
num_nodes = {"paper": 7, "author": 5, "field": 3}
offsets, off = {}, 0
for t in node_types:
    offsets[t] = off
    off += num_nodes[t]
edge_types = [("author", "writes", "paper"), ("paper", "cites", "paper"),
              ("paper", "has", "field"), ("field", "rev_has", "paper")]
has = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 6], [0, 0, 1, 1, 0, 1, 0, 1]])
edge_index_dict = {
    edge_types[0]: torch.tensor([[0, 1, 1, 2, 3, 4, 4, 0], [0, 0, 2, 3, 4, 5, 5, 1]]),
    edge_types[1]: torch.tensor([[1, 2, 3, 3, 5, 6, 0], [0, 0, 2, 3, 4, 5, 3]]),
    edge_types[2]: has,
    edge_types[3]: torch.tensor([[0, 1, 0, 1, 0, 1], [0, 1, 2, 3, 4, 5]]),
}
# paper 6 and field 2 receive nothing
for (s_t, _, d_t), ei in edge_index_dict.items():
    assert not ((d_t == "paper") and (ei[1] == 6).any()) and not ((d_t == "field") and (ei[1] == 2).any())
hx = {t: torch.randn(num_nodes[t], F_IN).float().double() for t in node_types}
hseed = {t: torch.randn(num_nodes[t], 4).float().double() for t in ("paper", "field")}
for t in node_types:
    tensors[f"hgt.x.{t}"] = hx[t]
tensors["hgt.x"] = torch.cat([hx[t] for t in node_types])
for et, ei in edge_index_dict.items():
    tensors["hgt.edge_index." + "__".join(et)] = ei
tensors["hgt.edge_index"] = torch.cat(
    [ei + torch.tensor([[offsets[et[0]]], [offsets[et[2]]]]) for et, ei in edge_index_dict.items()], dim=1)
tensors["hgt.edge_type"] = torch.cat(
    [torch.full((ei.size(1),), r) for r, ei in enumerate(edge_index_dict.values())])
for t in hseed:
    tensors[f"hgt.seed.{t}"] = hseed[t]

hgt_cases = {
    "hgt_h2": {"out_channels": 4, "heads": 2},
    "hgt_h1": {"out_channels": 4, "heads": 1},
    "hgt_skip": {"out_channels": 6, "heads": 2},
}
for name, opts in hgt_cases.items():
    layer = as_f32_exact(perturb_constants(HGTConv(F_IN, opts["out_channels"], (node_types, edge_types),
                                                   heads=opts["heads"])))
    xs = {t: hx[t].clone().requires_grad_(True) for t in node_types}
    out = layer(xs, edge_index_dict)
    assert sorted(out) == ["field", "paper"], name
    loss, seeds = 0, {}
    for t, o in out.items():
        if o.shape == hseed[t].shape:
            s, seeds[t] = hseed[t], f"hgt.seed.{t}"
        else:
            s = torch.randn(o.shape).float().double()
            seeds[t] = f"{name}.seed.{t}"
            tensors[seeds[t]] = s
        loss = loss + (o * s).sum()
    loss.backward()
    for t in node_types:
        if t in out:
            tensors[f"{name}.out.{t}"] = out[t].detach()
    tensors[f"{name}.loss"] = loss.detach().reshape(1)
    for t in node_types:
        tensors[f"{name}.grad.x.{t}"] = xs[t].grad
    store_params(tensors, name, layer)
    cases_meta[name] = {"layer": "HGTConv", "options": {"in_channels": F_IN, **opts,
                        "metadata": [node_types, [list(e) for e in edge_types]]},
                        "params": params_meta(layer),
                        "out_shape": {t: list(o.shape) for t, o in out.items()}, "seed": seeds}
    # The formula in the module docstring, written out on the global graph.
    with torch.no_grad():
        C, H = opts["out_channels"], opts["heads"]
        D, Rh = C // H, len(edge_types)
        kqv = {t: torch.nn.functional.linear(hx[t], layer.kqv_lin.lins[t].weight, layer.kqv_lin.lins[t].bias)
               for t in node_types}
        res = {}
        for d_t in ("paper", "field"):
            logits, vals, dsts = [], [], []
            for r, ((s_t, _, t_t), ei) in enumerate(edge_index_dict.items()):
                if t_t != d_t:
                    continue
                k = kqv[s_t][ei[0], :C].view(-1, H, D)
                v = kqv[s_t][ei[0], 2 * C:].view(-1, H, D)
                q = kqv[d_t][ei[1], C:2 * C].view(-1, H, D)
                kp = torch.stack([k[:, h] @ layer.k_rel.weight[h * Rh + r] for h in range(H)], 1)
                vp = torch.stack([v[:, h] @ layer.v_rel.weight[h * Rh + r] for h in range(H)], 1)
                logits.append((q * kp).sum(-1) * layer.p_rel["__".join(edge_types[r])] / D ** 0.5)
                vals.append(vp)
                dsts.append(ei[1])
            lg, vl, ds = torch.cat(logits), torch.cat(vals), torch.cat(dsts)
            m = torch.zeros(num_nodes[d_t], H, D, dtype=torch.float64)
            for i in range(num_nodes[d_t]):
                sel = ds == i
                if sel.any():
                    m[i] = (torch.softmax(lg[sel], 0).unsqueeze(-1) * vl[sel]).sum(0)
            a = torch.nn.functional.linear(torch.nn.functional.gelu(m.reshape(-1, C)),
                                           layer.out_lin.lins[d_t].weight, layer.out_lin.lins[d_t].bias)
            if C == F_IN:
                g = layer.skip[d_t].sigmoid()
                a = g * a + (1 - g) * hx[d_t]
            assert torch.allclose(a, out[d_t], rtol=1e-10, atol=1e-12), (name, d_t)

meta = {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__, "N": str(N),
        "num_relations": str(R), "hgt_node_types": json.dumps(node_types),
        "hgt_node_offsets": json.dumps(offsets), "hgt_edge_types": json.dumps([list(e) for e in edge_types]),
        "cases": json.dumps(cases_meta)}
write_safetensors(sys.argv[1], tensors, meta)

# Self-check: read the file back without the safetensors package.
back, back_meta = read_safetensors(sys.argv[1])
assert list(back) == list(tensors) and back_meta == meta
for n, t in tensors.items():
    assert back[n].dtype == t.dtype and torch.equal(back[n], t.detach()), n
size = os.path.getsize(sys.argv[1])
assert size < 200 * 1024, size
print("wrote", sys.argv[1], "with", len(tensors), "tensors,", size, "bytes")
