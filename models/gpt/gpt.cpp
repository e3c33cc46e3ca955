#include "strata/models/gpt.h"

#include <algorithm>
#include <cmath>

#include "strata/autograd/grad_mode.h"
#include "strata/ops.h"

namespace strata::models {

GPTConfig GPTConfig::preset(const std::string& name) {
  GPTConfig c;
  if (name == "gpt2") {
    c.n_layer = 12, c.n_head = 12, c.n_embd = 768;
  } else if (name == "gpt2-medium") {
    c.n_layer = 24, c.n_head = 16, c.n_embd = 1024;
  } else if (name == "gpt2-large") {
    c.n_layer = 36, c.n_head = 20, c.n_embd = 1280;
  } else if (name == "gpt2-xl") {
    c.n_layer = 48, c.n_head = 25, c.n_embd = 1600;
  } else if (name == "tiny") {
    c.n_layer = 2, c.n_head = 4, c.n_embd = 64, c.block_size = 64, c.vocab_size = 256;
  } else if (name == "small") {
    c.n_layer = 4, c.n_head = 4, c.n_embd = 256, c.block_size = 256, c.vocab_size = 256;
  } else {
    throw ValueError("GPTConfig: unknown preset '" + name + "' (gpt2, gpt2-medium, gpt2-large, gpt2-xl, tiny, small)");
  }
  return c;
}

GPTConfig GPTConfig::from_state_dict(const nn::StateDict& sd, int64_t n_head, double dropout) {
  const auto matrix = [&](const std::string& name) {
    STRATA_CHECK(
        sd.contains(name) && sd.at(name).dim() == 2, ShapeError, "GPTConfig::from_state_dict: ", name,
        sd.contains(name) ? " is " + sd.at(name).str() + ", not a matrix" : " is not in the state dict");
    return sd.at(name).shape();
  };
  const Shape wte = matrix("transformer.wte.weight"), wpe = matrix("transformer.wpe.weight");
  STRATA_CHECK(wte[1] == wpe[1], ShapeError, "GPTConfig::from_state_dict: transformer.wte.weight ",
               shape_str(wte), " and transformer.wpe.weight ", shape_str(wpe), " disagree on n_embd");
  GPTConfig c;
  c.vocab_size = wte[0], c.n_embd = wte[1], c.block_size = wpe[0], c.n_head = n_head, c.dropout = dropout;
  c.n_layer = 0;
  while (sd.contains("transformer.h." + std::to_string(c.n_layer) + ".ln_1.weight")) ++c.n_layer;
  c.validate();
  return c;
}

void GPTConfig::validate() const {
  STRATA_CHECK(n_layer > 0 && n_head > 0 && n_embd > 0 && block_size > 0 && vocab_size > 0, ValueError,
               "GPTConfig: sizes must be positive (", str(), ")");
  STRATA_CHECK(n_embd % n_head == 0, ValueError, "GPTConfig: n_embd ", n_embd, " is not divisible by n_head ", n_head);
  STRATA_CHECK(dropout >= 0.0 && dropout < 1.0, ValueError, "GPTConfig: dropout ", dropout, " not in [0, 1)");
}

std::string GPTConfig::str() const {
  return detail::concat("n_layer=", n_layer, " n_head=", n_head, " n_embd=", n_embd, " block_size=", block_size,
                        " vocab_size=", vocab_size, " dropout=", dropout, " bias=", bias ? "true" : "false");
}

int64_t GPTConfig::num_parameters() const {
  const int64_t C = n_embd, b = bias ? 1 : 0;
  const int64_t per_block = 2 * (C + b * C) + (3 * C * C + b * 3 * C) + (C * C + b * C) + (4 * C * C + b * 4 * C) +
                            (4 * C * C + b * C);
  return vocab_size * C + block_size * C + n_layer * per_block + (C + b * C);
}

// ---- attention ----

CausalSelfAttention::CausalSelfAttention(const GPTConfig& c) : n_head_(c.n_head), n_embd_(c.n_embd) {
  c_attn = register_module("c_attn", std::make_shared<nn::Linear>(nn::LinearOptions(c.n_embd, 3 * c.n_embd).bias(c.bias)));
  c_proj = register_module("c_proj", std::make_shared<nn::Linear>(nn::LinearOptions(c.n_embd, c.n_embd).bias(c.bias)));
  resid_dropout = register_module("resid_dropout", std::make_shared<nn::Dropout>(c.dropout));
}

namespace {
// [B, T, C] -> [B, NH, T, hs]
Tensor split_heads(const Tensor& t, int64_t nh) {
  const int64_t B = t.size(0), T = t.size(1), C = t.size(2);
  return ops::transpose(ops::view(t, {B, T, nh, C / nh}), 1, 2);
}
// [B, NH, T, hs] -> [B, T, C]
Tensor merge_heads(const Tensor& t) {
  const int64_t B = t.size(0), NH = t.size(1), T = t.size(2), hs = t.size(3);
  return ops::reshape(ops::transpose(t, 1, 2), {B, T, NH * hs});
}
}  // namespace

Tensor CausalSelfAttention::forward(const Tensor& x) {
  // The heads are read from and written to the packed layouts in place (no split/merge copies).
  // Under autocast the projection stays bf16: attention reads it as it is (no cast either way).
  Tensor y = ops::packed_self_attention(c_attn->forward(x, ops::AutocastResult::Narrow), n_head_,
                                        /*is_causal=*/true);
  return (*resid_dropout)((*c_proj)(y));
}

Tensor CausalSelfAttention::forward_cached(const Tensor& x, Tensor& k_cache, Tensor& v_cache, int64_t pos) {
  nn::ModuleScope scope(*this);
  const int64_t Tn = x.size(1);
  STRATA_CHECK(pos == 0 || Tn == 1, ValueError, "CausalSelfAttention::forward_cached: ", Tn,
               " new positions at offset ", pos, " (only a prompt at 0 or one token at a time)");
  std::vector<Tensor> qkv = ops::split((*c_attn)(x), n_embd_, 2);
  Tensor q = split_heads(qkv[0], n_head_), k = split_heads(qkv[1], n_head_), v = split_heads(qkv[2], n_head_);
  ops::narrow(k_cache, 2, pos, Tn).copy_(k);
  ops::narrow(v_cache, 2, pos, Tn).copy_(v);
  Tensor keys = ops::narrow(k_cache, 2, 0, pos + Tn), values = ops::narrow(v_cache, 2, 0, pos + Tn);
  Tensor y = ops::scaled_dot_product_attention(q, keys, values, Tensor(), 0.0, /*is_causal=*/pos == 0);
  return (*c_proj)(merge_heads(y));
}

// ---- MLP and block ----

MLP::MLP(const GPTConfig& c) {
  c_fc = register_module("c_fc", std::make_shared<nn::Linear>(nn::LinearOptions(c.n_embd, 4 * c.n_embd).bias(c.bias)));
  c_proj = register_module("c_proj", std::make_shared<nn::Linear>(nn::LinearOptions(4 * c.n_embd, c.n_embd).bias(c.bias)));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(c.dropout));
}

// Under autocast c_fc's result and GELU stay bf16, as torch.autocast runs them: c_proj takes
// GELU's output without a cast, and their gradients flow back in bf16.
Tensor MLP::forward(const Tensor& x) {
  return (*dropout)((*c_proj)(ops::gelu(c_fc->forward(x, ops::AutocastResult::Narrow), "tanh")));
}

Block::Block(const GPTConfig& c) {
  ln_1 = register_module("ln_1", std::make_shared<nn::LayerNorm>(nn::LayerNormOptions({c.n_embd}).bias(c.bias)));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(c));
  ln_2 = register_module("ln_2", std::make_shared<nn::LayerNorm>(nn::LayerNormOptions({c.n_embd}).bias(c.bias)));
  mlp = register_module("mlp", std::make_shared<MLP>(c));
  mark_as_block();
}

// Under autocast ln_1's and ln_2's results are bf16: each feeds only a linear (c_attn, c_fc),
// which would round them to bf16 anyway.
Tensor Block::forward(const Tensor& x) {
  Tensor h = ops::add(x, (*attn)(ln_1->forward(x, ops::AutocastResult::Narrow)));
  return ops::add(h, (*mlp)(ln_2->forward(h, ops::AutocastResult::Narrow)));
}

Tensor Block::forward_cached(const Tensor& x, Tensor& k_cache, Tensor& v_cache, int64_t pos) {
  nn::ModuleScope scope(*this);
  Tensor h = ops::add(x, attn->forward_cached((*ln_1)(x), k_cache, v_cache, pos));
  return ops::add(h, (*mlp)((*ln_2)(h)));
}

// ---- GPT ----

GPT::GPT(const GPTConfig& config) : config_(config) {
  config_.validate();
  const GPTConfig& c = config_;
  transformer = register_module("transformer", std::make_shared<nn::Module>());
  wte = transformer->register_module("wte", std::make_shared<nn::Embedding>(c.vocab_size, c.n_embd));
  wpe = transformer->register_module("wpe", std::make_shared<nn::Embedding>(c.block_size, c.n_embd));
  drop = transformer->register_module("drop", std::make_shared<nn::Dropout>(c.dropout));
  h = transformer->register_module("h", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < c.n_layer; ++i) h->push_back(std::make_shared<Block>(c));
  ln_f = transformer->register_module("ln_f", std::make_shared<nn::LayerNorm>(nn::LayerNormOptions({c.n_embd}).bias(c.bias)));
  lm_head = register_module("lm_head", std::make_shared<nn::Module>());
  lm_head->register_parameter("weight", wte->weight);
  init_weights();
}

void GPT::init_weights() {
  NoGradGuard ng;
  const double proj_std = 0.02 / std::sqrt(2.0 * double(config_.n_layer));
  for (const auto& [name, p] : named_parameters()) {
    Tensor t = p;
    const bool is_weight = name.size() >= 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    if (name.find(".ln_") != std::string::npos) {
      t.fill_(is_weight ? 1.0 : 0.0);
    } else if (!is_weight) {
      t.zero_();
    } else if (name.size() >= 14 && name.compare(name.size() - 14, 14, "c_proj.weight") == 0) {
      ops::normal_(t, 0.0, proj_std);
    } else {
      ops::normal_(t, 0.0, 0.02);
    }
  }
}

Tensor GPT::embed(const Tensor& idx, int64_t pos0) {
  STRATA_CHECK(idx.dim() == 2 && idx.dtype() == DType::i64, ValueError, "GPT: idx must be i64 [B, T], got ", idx.str());
  const int64_t T = idx.size(1);
  STRATA_CHECK(pos0 + T <= config_.block_size, ValueError, "GPT: sequence of ", pos0 + T,
               " tokens exceeds block_size ", config_.block_size);
  Tensor pos = ops::arange(double(pos0), double(pos0 + T), 1.0, TensorOptions(DType::i64).device(idx.device()));
  return (*drop)(ops::add((*wte)(idx), (*wpe)(pos)));
}

Tensor GPT::hidden_states(const Tensor& idx) {
  Tensor x = embed(idx, 0);
  for (const auto& block : *h) x = (*block)(x);
  return (*ln_f)(x);
}

Tensor GPT::forward(const Tensor& idx) { return ops::linear(hidden_states(idx), wte->weight); }

Tensor GPT::loss(const Tensor& idx, const Tensor& targets) {
  Tensor x = hidden_states(idx);
  nn::ModuleScope scope(*lm_head);
  return ops::linear_cross_entropy(x, wte->weight, targets);
}

Tensor GPT::generate(const Tensor& idx, const GenerateOptions& o, Generator& generator) {
  NoGradGuard ng;
  const bool was_training = is_training();
  eval();
  const GPTConfig& c = config_;
  const int64_t B = idx.size(0), hs = c.n_embd / c.n_head;
  std::vector<int64_t> tokens = idx.to_vector<int64_t>();
  std::vector<std::vector<int64_t>> seqs(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b)
    seqs[size_t(b)].assign(tokens.begin() + b * idx.size(1), tokens.begin() + (b + 1) * idx.size(1));
  std::vector<Tensor> kc, vc;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    kc.push_back(ops::zeros({B, c.n_head, c.block_size, hs}, TensorOptions(wte->weight.dtype()).device(idx.device())));
    vc.push_back(ops::zeros({B, c.n_head, c.block_size, hs}, TensorOptions(wte->weight.dtype()).device(idx.device())));
  }
  int64_t cached = 0;  // positions in the caches
  Tensor next_logits;
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    const int64_t len = int64_t(seqs[0].size());
    Tensor x;
    if (cached == 0 || cached >= c.block_size) {
      // (Re)fill the caches from the last block_size - 1 tokens (sliding window).
      const int64_t keep = std::min(len, c.block_size - 1);
      std::vector<int64_t> window;
      for (const auto& s : seqs) window.insert(window.end(), s.end() - keep, s.end());
      x = embed(ops::from_vector(window, {B, keep}, TensorOptions(DType::i64).device(idx.device())), 0);
      for (int64_t l = 0; l < c.n_layer; ++l) x = h->at<Block>(size_t(l))->forward_cached(x, kc[size_t(l)], vc[size_t(l)], 0);
      cached = keep;
    } else {
      std::vector<int64_t> last;
      for (const auto& s : seqs) last.push_back(s.back());
      x = embed(ops::from_vector(last, {B, 1}, TensorOptions(DType::i64).device(idx.device())), cached);
      for (int64_t l = 0; l < c.n_layer; ++l)
        x = h->at<Block>(size_t(l))->forward_cached(x, kc[size_t(l)], vc[size_t(l)], cached);
      cached += 1;
    }
    Tensor last_h = ops::select((*ln_f)(x), 1, x.size(1) - 1);  // [B, C]
    std::vector<double> logits = ops::linear(last_h, wte->weight).to_double_vector();
    const int64_t V = c.vocab_size;
    GeneratorGuard gg(generator);
    std::vector<double> u = ops::rand({B}, DType::f64).to_double_vector();
    for (int64_t b = 0; b < B; ++b) {
      double* row = logits.data() + b * V;
      int64_t pick = 0;
      if (o.temperature <= 0.0) {
        pick = int64_t(std::max_element(row, row + V) - row);
      } else {
        std::vector<double> sorted(row, row + V);
        double cutoff = -INFINITY;
        if (o.top_k > 0 && o.top_k < V) {
          std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<double>());
          cutoff = sorted[size_t(o.top_k - 1)];
        }
        const double mx = *std::max_element(row, row + V);
        double total = 0;
        for (int64_t i = 0; i < V; ++i) {
          row[i] = row[i] < cutoff ? 0.0 : std::exp((row[i] - mx) / o.temperature);
          total += row[i];
        }
        double acc = 0, target = u[size_t(b)] * total;
        pick = V - 1;
        for (int64_t i = 0; i < V; ++i) {
          acc += row[i];
          if (acc > target) {
            pick = i;
            break;
          }
        }
      }
      seqs[size_t(b)].push_back(pick);
    }
  }
  if (was_training) train();
  std::vector<int64_t> out;
  for (const auto& s : seqs) out.insert(out.end(), s.begin(), s.end());
  return ops::from_vector(out, {B, int64_t(seqs[0].size())}, TensorOptions(DType::i64).device(idx.device()));
}

}  // namespace strata::models
