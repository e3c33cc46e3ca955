#!/usr/bin/env python3
"""PyTorch parity fixtures for Strata's BERT (models/bert): run by hand, outputs committed.

  /usr/bin/python3 tools/goldens/bert_goldens.py [--out tests/goldens/bert]

transformers is not needed: the reference is Hugging Face's BertForMaskedLM /
BertForSequenceClassification written out in plain torch with the same module names
(bert.embeddings.word_embeddings, bert.encoder.layer.N.attention.self.query, ...,
cls.predictions.transform.dense, cls.predictions.decoder tied to the word embeddings,
cls.predictions.bias), the same computation (post-LN layers, erf GELU, LayerNorm eps 1e-12,
additive padding mask of finfo.min, padding_idx on the word embeddings) and HF's
_init_weights (N(0, 0.02), zero biases, zero padding row, LayerNorm 1/0). Dropout is 0.

For each config it runs one batch in float64 and writes a safetensors file with: the initial
state dict (HF names, tied entries included), input_ids, token_type_ids, attention_mask,
labels (-100 except at ~15% of the real tokens), the hidden states, the MLM logits at the
masked positions (row-major order), every parameter's gradient of the MLM loss, and in
__metadata__ the config, the loss and the losses of 5 AdamW steps (lr 1e-3, betas 0.9/0.999,
eps 1e-6, weight decay 0.01 on >= 2-D parameters, grad clipping at 1.0, same batch each step).
Configs with "classifier" also hold a BertForSequenceClassification (prefix "seqcls.": its
state dict, logits, loss and gradients against labels "seqcls.labels").
Tensors are float32 (initial parameters exactly float32, outputs rounded), ids int64.
"""
import json, math, os, sys
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_file import (adamw_losses, as_f32_exact, gradients, seeded_models, start_fixtures, state_f32,  # noqa: E402
                         write_fixture)

CONFIGS = {
    # powers of two, no padding, both segments
    "pow2": dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 max_position_embeddings=32, type_vocab_size=2, pad_token_id=0, B=2, T=16, lengths=[16, 16],
                 classifier=False),
    # odd everywhere: hidden 36 over 3 heads (head size 12), odd vocab, intermediate and T, padding
    "odd": dict(vocab_size=97, hidden_size=36, num_hidden_layers=3, num_attention_heads=3, intermediate_size=53,
                max_position_embeddings=23, type_vocab_size=2, pad_token_id=0, B=3, T=13, lengths=[13, 9, 6],
                classifier=True, num_labels=3),
}
EPS = 1e-12


class SelfAttention(nn.Module):
    def __init__(s, c):
        super().__init__()
        C = c["hidden_size"]
        s.query, s.key, s.value = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        s.NH = c["num_attention_heads"]

    def forward(s, x, ext_mask):
        B, T, C = x.shape
        hs = C // s.NH
        q, k, v = [t.view(B, T, s.NH, hs).transpose(1, 2) for t in (s.query(x), s.key(x), s.value(x))]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs) + ext_mask
        return (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class ResidualOutput(nn.Module):  # BertSelfOutput / BertOutput
    def __init__(s, c, inp):
        super().__init__()
        s.dense = nn.Linear(inp, c["hidden_size"])
        s.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=EPS)

    def forward(s, x, res):
        return s.LayerNorm(s.dense(x) + res)


class Attention(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.self = SelfAttention(c)
        s.output = ResidualOutput(c, c["hidden_size"])

    def forward(s, x, m):
        return s.output(s.self(x, m), x)


class Intermediate(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(s, x):
        return F.gelu(s.dense(x))


class Layer(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.attention, s.intermediate = Attention(c), Intermediate(c)
        s.output = ResidualOutput(c, c["intermediate_size"])

    def forward(s, x, m):
        a = s.attention(x, m)
        return s.output(s.intermediate(a), a)


class Embeddings(nn.Module):
    def __init__(s, c):
        super().__init__()
        C = c["hidden_size"]
        s.word_embeddings = nn.Embedding(c["vocab_size"], C, padding_idx=c["pad_token_id"])
        s.position_embeddings = nn.Embedding(c["max_position_embeddings"], C)
        s.token_type_embeddings = nn.Embedding(c["type_vocab_size"], C)
        s.LayerNorm = nn.LayerNorm(C, eps=EPS)

    def forward(s, ids, types):
        T = ids.shape[1]
        return s.LayerNorm(s.word_embeddings(ids) + s.position_embeddings(torch.arange(T)) +
                           s.token_type_embeddings(types))


class Encoder(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.layer = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])


class Pooler(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(s, h):
        return torch.tanh(s.dense(h[:, 0]))


class BertModel(nn.Module):
    def __init__(s, c, pooler):
        super().__init__()
        s.embeddings, s.encoder = Embeddings(c), Encoder(c)
        if pooler:
            s.pooler = Pooler(c)

    def forward(s, ids, types, mask):
        x = s.embeddings(ids, types)
        ext = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for l in s.encoder.layer:
            x = l(x, ext)
        return x


class Transform(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        s.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=EPS)

    def forward(s, x):
        return s.LayerNorm(F.gelu(s.dense(x)))


class LMPredictionHead(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.transform = Transform(c)
        s.decoder = nn.Linear(c["hidden_size"], c["vocab_size"])
        s.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        s.decoder.bias = s.bias


class OnlyMLMHead(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.predictions = LMPredictionHead(c)


def hf_init(model, c):
    for m in model.modules():
        if isinstance(m, nn.Linear):
            m.weight.data.normal_(0.0, 0.02)
            if m.bias is not None:
                m.bias.data.zero_()
        elif isinstance(m, nn.Embedding):
            m.weight.data.normal_(0.0, 0.02)
            if m.padding_idx is not None:
                m.weight.data[m.padding_idx].zero_()
        elif isinstance(m, nn.LayerNorm):
            m.weight.data.fill_(1.0)
            m.bias.data.zero_()


class BertForMaskedLM(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.bert = BertModel(c, pooler=False)
        s.cls = OnlyMLMHead(c)
        s.cls.predictions.decoder.weight = s.bert.embeddings.word_embeddings.weight
        hf_init(s, c)

    def forward(s, ids, types, mask, labels):
        h = s.bert(ids, types, mask)
        sel = labels.view(-1) != -100
        rows = h.reshape(-1, h.shape[-1])[sel]
        logits = s.cls.predictions.decoder(s.cls.predictions.transform(rows))
        return h, logits, F.cross_entropy(logits, labels.view(-1)[sel])


class BertForSequenceClassification(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.bert = BertModel(c, pooler=True)
        s.dropout = nn.Dropout(0.0)
        s.classifier = nn.Linear(c["hidden_size"], c["num_labels"])
        hf_init(s, c)

    def forward(s, ids, types, mask, labels):
        logits = s.classifier(s.dropout(s.bert.pooler(s.bert(ids, types, mask))))
        return logits, F.cross_entropy(logits, labels)


def batch(c, g):
    B, T, V = c["B"], c["T"], c["vocab_size"]
    ids = torch.randint(1, V, (B, T), generator=g)  # 0 is [PAD]
    types = torch.zeros(B, T, dtype=torch.long)
    mask = torch.zeros(B, T, dtype=torch.long)
    labels = torch.full((B, T), -100, dtype=torch.long)
    for b, n in enumerate(c["lengths"]):
        ids[b, n:] = c["pad_token_id"]
        mask[b, :n] = 1
        types[b, n // 2:n] = 1  # second segment
        sel = torch.rand(n, generator=g) < 0.15
        sel[b % n] = True  # at least one masked position per sequence
        labels[b, :n][sel] = ids[b, :n][sel]
        ids[b, :n][sel] = V - 1  # stands in for [MASK]
    return ids, types, mask, labels


def main():
    out_dir = start_fixtures(__file__, "bert")
    for name, c, model, out, g in seeded_models(CONFIGS, BertForMaskedLM):
        ids, types, mask, labels = batch(c, g)
        h, logits, loss = model(ids, types, mask, labels)
        loss.backward()
        out.update(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels)
        out["hidden_states"] = h.detach().float()
        out["mlm_logits"] = logits.detach().float()
        out.update(gradients(model))
        losses = adamw_losses(model, lambda: model(ids, types, mask, labels)[2], 5, weight_decay=0.01,
                              betas=(0.9, 0.999), eps=1e-6)
        meta = {"config": json.dumps(c), "loss": repr(loss.item()), "adamw_losses": json.dumps(losses)}
        if c["classifier"]:
            torch.manual_seed(4321)
            sc = as_f32_exact(BertForSequenceClassification(c))
            out.update(state_f32(sc, "seqcls.param."))
            cl = torch.randint(0, c["num_labels"], (c["B"],), generator=g)
            sl, sloss = sc(ids, types, mask, cl)
            sloss.backward()
            out["seqcls.labels"], out["seqcls.logits"] = cl, sl.detach().float()
            out.update(gradients(sc, "seqcls.grad."))
            meta["seqcls.loss"] = repr(sloss.item())
        path = write_fixture(out_dir, f"bert_{name}.safetensors", out, meta)
        print(f"wrote {path} ({os.path.getsize(path)} bytes): loss {loss.item():.6f}, "
              f"{int((labels != -100).sum())} masked, 5-step losses {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
