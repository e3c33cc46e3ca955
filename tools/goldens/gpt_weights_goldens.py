#!/usr/bin/python3
"""Golden fixtures for strata::io's GPT-2 weight import/export (io/gpt_weights.h).

Run by hand (Debian's python3-torch), outputs are committed:
    /usr/bin/python3 tools/goldens/gpt_weights_goldens.py [--out tests/goldens/weights]

One tiny GPT-2 of odd sizes (L=2, NH=4, C=20, V=97, T=12) with random weights in nanoGPT's
layout (PyTorch Linear, [out, in]) is written three ways:

  gpt2_tiny.safetensors  as Hugging Face's GPT2LMHeadModel.save_pretrained lays it out:
                         "transformer." prefix, Conv1D weights [in, out], the per-block
                         attn.bias (BOOL causal mask [1, 1, T, T]) and attn.masked_bias (F32
                         scalar) buffers, no lm_head.weight (tied), metadata {"format": "pt"}.
                         Written by hand (no safetensors package): 8-byte little-endian header
                         length, JSON header padded with spaces to 8 bytes, raw data; tensors in
                         key order, so data offsets do not follow the model's order.
  gpt2_tiny_f32.bin      llm.c's model file, version 3 (fp32), as llm.c's train_gpt2.py
  gpt2_tiny_bf16.bin     write_model does: 256 x int32 header, wte padded with zero rows to a
                         multiple of 128, then the parameters stacked over layers; version 5
                         stores bfloat16 (torch's round-to-nearest-even .to(torch.bfloat16)).
  gpt2_tiny.json         the shape, and per nanoGPT parameter (in [out, in] layout): shape,
                         the first values, sum, and an index-weighted sum that changes if a
                         weight is transposed; plus the same sums of the bf16-rounded values;
                         and PyTorch's loss (float64) of the model on fixed tokens, with the f32
                         weights and with the bf16-rounded ones ("loss").
"""
import argparse
import json
import os

import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_file import write_safetensors  # noqa: E402
from gpt_goldens import GPT  # noqa: E402

L, NH, C, V, T = 2, 4, 20, 97, 12
SEED = 1234

# A block's parameters in nanoGPT's (and llm.c's) order: suffix, [out, in] shape, HF Conv1D?
BLOCK = [
    ("ln_1.weight", [C], False), ("ln_1.bias", [C], False),
    ("attn.c_attn.weight", [3 * C, C], True), ("attn.c_attn.bias", [3 * C], False),
    ("attn.c_proj.weight", [C, C], True), ("attn.c_proj.bias", [C], False),
    ("ln_2.weight", [C], False), ("ln_2.bias", [C], False),
    ("mlp.c_fc.weight", [4 * C, C], True), ("mlp.c_fc.bias", [4 * C], False),
    ("mlp.c_proj.weight", [C, 4 * C], True), ("mlp.c_proj.bias", [C], False),
]


def make_weights():
    """nanoGPT names (without lm_head) -> f32 tensors in [out, in] layout."""
    gen = torch.Generator().manual_seed(SEED)
    w = {}

    def randn(shape, scale=0.5, mean=0.0):
        return (torch.randn(shape, generator=gen, dtype=torch.float32) * scale + mean).contiguous()

    w["transformer.wte.weight"] = randn([V, C])
    w["transformer.wpe.weight"] = randn([T, C])
    for i in range(L):
        for suffix, shape, _ in BLOCK:
            mean = 1.0 if suffix.endswith("weight") and suffix.startswith("ln_") else 0.0
            w[f"transformer.h.{i}.{suffix}"] = randn(shape, 0.1 if mean else 0.5, mean)
    w["transformer.ln_f.weight"] = randn([C], 0.1, 1.0)
    w["transformer.ln_f.bias"] = randn([C])
    return w


def is_conv1d(name):
    return any(name.endswith("." + s) for s, _, conv in BLOCK if conv)


def hf_layout(w):
    out = {}
    for name, t in w.items():
        out[name] = t.t().contiguous() if is_conv1d(name) else t
    mask = torch.tril(torch.ones((T, T), dtype=torch.bool)).view(1, 1, T, T)
    for i in range(L):
        out[f"transformer.h.{i}.attn.bias"] = mask.clone()
        out[f"transformer.h.{i}.attn.masked_bias"] = torch.tensor(-1e4, dtype=torch.float32)
    return out


def llmc_bytes(t, bf16):
    t = t.detach().cpu()
    if bf16:
        return t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
    return t.to(torch.float32).numpy().tobytes()


def write_llmc(path, w, bf16):
    Vp = (V + 127) // 128 * 128
    header = torch.zeros(256, dtype=torch.int32)
    header[0:8] = torch.tensor([20240326, 5 if bf16 else 3, T, V, L, NH, C, Vp], dtype=torch.int32)
    wte = torch.cat([w["transformer.wte.weight"], torch.zeros(Vp - V, C)], dim=0)
    with open(path, "wb") as f:
        f.write(header.numpy().tobytes())
        f.write(llmc_bytes(wte, bf16))
        f.write(llmc_bytes(w["transformer.wpe.weight"], bf16))
        for suffix, _, _ in BLOCK:  # each parameter stacked over the layers
            for i in range(L):
                f.write(llmc_bytes(w[f"transformer.h.{i}.{suffix}"], bf16))
        f.write(llmc_bytes(w["transformer.ln_f.weight"], bf16))
        f.write(llmc_bytes(w["transformer.ln_f.bias"], bf16))


def summary(t):
    flat = t.detach().reshape(-1).to(torch.float64)
    weights = (torch.arange(flat.numel(), dtype=torch.float64) % 7) - 3
    return float(flat.sum()), float((flat * weights).sum())


def pytorch_losses(w):
    """PyTorch's loss (float64) of the nanoGPT model in gpt_goldens.py on fixed tokens."""
    gen = torch.Generator().manual_seed(7)
    idx = torch.randint(0, V, (2, T), generator=gen)
    targets = torch.randint(0, V, (2, T), generator=gen)
    out = {"idx": idx.reshape(-1).tolist(), "targets": targets.reshape(-1).tolist(), "B": 2, "T": T}
    for tag, cast in (("f32", lambda t: t), ("bf16", lambda t: t.to(torch.bfloat16).to(torch.float32))):
        model = GPT(dict(n_layer=L, n_head=NH, n_embd=C, block_size=T, vocab_size=V)).double()
        with torch.no_grad():
            state = {k: cast(v).double() for k, v in w.items()}
            missing, unexpected = model.load_state_dict(state, strict=False)
            assert missing == ["lm_head.weight"] and not unexpected, (missing, unexpected)
            out[tag] = model(idx, targets)[1].item()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "goldens", "weights"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    w = make_weights()
    write_safetensors(os.path.join(args.out, "gpt2_tiny.safetensors"), dict(sorted(hf_layout(w).items())),
                      {"format": "pt"})
    write_llmc(os.path.join(args.out, "gpt2_tiny_f32.bin"), w, bf16=False)
    write_llmc(os.path.join(args.out, "gpt2_tiny_bf16.bin"), w, bf16=True)

    tensors = {}
    for name, t in w.items():
        s, ws = summary(t)
        bs, bws = summary(t.to(torch.bfloat16).to(torch.float32))
        tensors[name] = {"shape": list(t.shape), "first": [float(v) for v in t.reshape(-1)[:4].tolist()],
                         "sum": s, "weighted_sum": ws, "bf16_sum": bs, "bf16_weighted_sum": bws}
    golden_loss = pytorch_losses(w)
    golden = {
        "shape": {"n_layer": L, "n_head": NH, "n_embd": C, "block_size": T, "vocab_size": V,
                  "padded_vocab_size": (V + 127) // 128 * 128},
        "weighted_sum": "sum over the flat [out, in] values x[i] * ((i % 7) - 3), in float64",
        "tensors": tensors,
        "loss": golden_loss,
    }
    with open(os.path.join(args.out, "gpt2_tiny.json"), "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
