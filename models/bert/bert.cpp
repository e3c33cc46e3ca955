#include "strata/models/bert.h"

#include <cmath>

#include "strata/autograd/grad_mode.h"
#include "strata/autograd/scope.h"
#include "strata/ops.h"

namespace strata::models {

BertConfig BertConfig::preset(const std::string& name) {
  BertConfig c;
  if (name == "bert-base") {
    // the defaults
  } else if (name == "bert-large") {
    c.num_hidden_layers = 24, c.hidden_size = 1024, c.num_attention_heads = 16, c.intermediate_size = 4096;
  } else if (name == "tiny" || name == "small") {
    c.vocab_size = 260, c.pad_token_id = 256;
    if (name == "tiny") {
      c.num_hidden_layers = 2, c.hidden_size = 64, c.num_attention_heads = 4, c.intermediate_size = 256;
      c.max_position_embeddings = 128;
    } else {
      c.num_hidden_layers = 4, c.hidden_size = 256, c.num_attention_heads = 4, c.intermediate_size = 1024;
      c.max_position_embeddings = 256;
    }
  } else {
    throw ValueError("BertConfig: unknown preset '" + name + "' (bert-base, bert-large, tiny, small)");
  }
  return c;
}

BertConfig BertConfig::from_state_dict(const nn::StateDict& sd, int64_t num_attention_heads) {
  const auto matrix = [&](const std::string& name) {
    STRATA_CHECK(
        sd.contains(name) && sd.at(name).dim() == 2, ShapeError, "BertConfig::from_state_dict: ", name,
        sd.contains(name) ? " is " + sd.at(name).str() + ", not a matrix" : " is not in the state dict");
    return sd.at(name).shape();
  };
  const std::string e = "bert.embeddings.";
  const Shape words = matrix(e + "word_embeddings.weight"),
              positions = matrix(e + "position_embeddings.weight"),
              types = matrix(e + "token_type_embeddings.weight"),
              inter = matrix("bert.encoder.layer.0.intermediate.dense.weight");
  STRATA_CHECK(positions[1] == words[1] && types[1] == words[1] && inter[1] == words[1], ShapeError,
               "BertConfig::from_state_dict: the embeddings ", shape_str(words), ", ", shape_str(positions),
               ", ", shape_str(types), " and layer 0's intermediate.dense.weight ", shape_str(inter),
               " disagree on the hidden size");
  BertConfig c;
  c.vocab_size = words[0], c.hidden_size = words[1], c.max_position_embeddings = positions[0];
  c.type_vocab_size = types[0], c.intermediate_size = inter[0], c.num_attention_heads = num_attention_heads;
  c.num_hidden_layers = 0;
  while (
      sd.contains("bert.encoder.layer." + std::to_string(c.num_hidden_layers) + ".intermediate.dense.weight"))
    ++c.num_hidden_layers;
  c.validate();
  return c;
}

void BertConfig::validate() const {
  STRATA_CHECK(vocab_size > 0 && hidden_size > 0 && num_hidden_layers > 0 && num_attention_heads > 0 &&
                   intermediate_size > 0 && max_position_embeddings > 0 && type_vocab_size > 0,
               ValueError, "BertConfig: sizes must be positive (", str(), ")");
  STRATA_CHECK(hidden_size % num_attention_heads == 0, ValueError, "BertConfig: hidden_size ", hidden_size,
               " is not divisible by num_attention_heads ", num_attention_heads);
  STRATA_CHECK(hidden_dropout_prob >= 0.0 && hidden_dropout_prob < 1.0, ValueError,
               "BertConfig: hidden_dropout_prob ", hidden_dropout_prob, " not in [0, 1)");
  STRATA_CHECK(attention_probs_dropout_prob == 0.0, NotImplementedError,
               "BertConfig: attention_probs_dropout_prob must be 0 (the fused attention has no dropout), got ",
               attention_probs_dropout_prob);
  STRATA_CHECK(pad_token_id >= 0 && pad_token_id < vocab_size, ValueError, "BertConfig: pad_token_id ", pad_token_id,
               " outside the vocabulary of ", vocab_size);
  STRATA_CHECK(layer_norm_eps > 0.0 && num_labels > 0, ValueError, "BertConfig: layer_norm_eps ", layer_norm_eps,
               " and num_labels ", num_labels, " must be positive");
}

std::string BertConfig::str() const {
  return detail::concat("vocab_size=", vocab_size, " hidden_size=", hidden_size, " num_hidden_layers=",
                        num_hidden_layers, " num_attention_heads=", num_attention_heads,
                        " intermediate_size=", intermediate_size, " max_position_embeddings=",
                        max_position_embeddings, " type_vocab_size=", type_vocab_size,
                        " hidden_dropout_prob=", hidden_dropout_prob, " pad_token_id=", pad_token_id);
}

int64_t BertConfig::num_parameters(bool with_pooler) const {
  const int64_t C = hidden_size, I = intermediate_size;
  const int64_t emb = (vocab_size + max_position_embeddings + type_vocab_size) * C + 2 * C;
  const int64_t layer = 4 * (C * C + C) + 2 * C + (C * I + I) + (I * C + C) + 2 * C;
  return emb + num_hidden_layers * layer + (with_pooler ? C * C + C : 0);
}

namespace {

nn::LayerNormOptions ln_options(const BertConfig& c) {
  return nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps);
}

}  // namespace

// ---- embeddings ----

BertEmbeddings::BertEmbeddings(const BertConfig& c) : pad_token_id_(c.pad_token_id) {
  word_embeddings = register_module("word_embeddings", std::make_shared<nn::Embedding>(c.vocab_size, c.hidden_size));
  position_embeddings = register_module("position_embeddings",
                                        std::make_shared<nn::Embedding>(c.max_position_embeddings, c.hidden_size));
  token_type_embeddings =
      register_module("token_type_embeddings", std::make_shared<nn::Embedding>(c.type_vocab_size, c.hidden_size));
  LayerNorm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(ln_options(c)));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(c.hidden_dropout_prob));
}

Tensor BertEmbeddings::forward(const Tensor& input_ids, const Tensor& token_type_ids) {
  nn::ModuleScope scope(*this);  // the same scope called directly or through call()
  STRATA_CHECK(input_ids.dim() == 2 && input_ids.dtype() == DType::i64, ValueError,
               "BertEmbeddings: input_ids must be i64 [B, T], got ", input_ids.str());
  const int64_t T = input_ids.size(1);
  STRATA_CHECK(T <= position_embeddings->weight.size(0), ValueError, "BertEmbeddings: sequence of ", T,
               " tokens exceeds max_position_embeddings ", position_embeddings->weight.size(0));
  STRATA_CHECK(!token_type_ids.defined() || token_type_ids.shape() == input_ids.shape(), ShapeError,
               "BertEmbeddings: token_type_ids ", shape_str(token_type_ids.shape()), " must match input_ids ",
               shape_str(input_ids.shape()));
  const TensorOptions i64 = TensorOptions(DType::i64).device(input_ids.device());
  Tensor words = (*word_embeddings)(input_ids);
  // nn.Embedding(padding_idx=pad): the padding row gets no gradient from the lookup. Where the
  // batch has padding, those positions take a detached copy of the row instead.
  Tensor is_pad = ops::eq(input_ids, double(pad_token_id_));
  // (Meta tensors, shapes only: no padding.)
  if (!input_ids.device().is_meta() && ops::sum(is_pad).item() > 0) {
    Tensor pad_row;
    {
      NoGradGuard ng;
      pad_row = ops::clone(ops::select(word_embeddings->weight, 0, pad_token_id_));
    }
    words = ops::where(ops::unsqueeze(is_pad, -1), pad_row, words);
  }
  Tensor pos = (*position_embeddings)(ops::arange(0.0, double(T), 1.0, i64));
  Tensor types = (*token_type_embeddings)(token_type_ids.defined() ? token_type_ids : ops::zeros(input_ids.shape(), i64));
  return (*dropout)((*LayerNorm)(ops::add(ops::add(words, pos), types)));
}

// ---- attention and layer ----

BertSelfAttention::BertSelfAttention(const BertConfig& c) : n_head_(c.num_attention_heads) {
  const int64_t C = c.hidden_size;
  query = register_module("query", std::make_shared<nn::Linear>(C, C));
  key = register_module("key", std::make_shared<nn::Linear>(C, C));
  value = register_module("value", std::make_shared<nn::Linear>(C, C));
}

Tensor BertSelfAttention::forward(const Tensor& x, const Tensor& mask) {
  nn::ModuleScope scope(*this);
  // One [3C, C] projection instead of three [C, C] ones (one GEMM each way, and backward sums no
  // three dx), feeding the packed attention, which reads the heads in place. The three
  // parameters stay (Hugging Face's names); concatenating them each step costs 3 C^2 copies
  // against the 6 B T C^2 FLOPs of the projection, and cat's backward splits the gradient.
  Tensor w = ops::cat({query->weight, key->weight, value->weight}, 0);
  Tensor b = ops::cat({query->bias, key->bias, value->bias}, 0);
  return ops::packed_self_attention(ops::linear(x, w, b, ops::AutocastResult::Narrow), n_head_, mask,
                                    /*is_causal=*/false);
}

BertResidualOutput::BertResidualOutput(const BertConfig& c, int64_t in_features) {
  dense = register_module("dense", std::make_shared<nn::Linear>(in_features, c.hidden_size));
  LayerNorm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(ln_options(c)));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(c.hidden_dropout_prob));
}

Tensor BertResidualOutput::forward(const Tensor& x, const Tensor& residual) {
  nn::ModuleScope scope(*this);
  return (*LayerNorm)(ops::add((*dropout)((*dense)(x)), residual));
}

BertAttention::BertAttention(const BertConfig& c) {
  self = register_module("self", std::make_shared<BertSelfAttention>(c));
  output = register_module("output", std::make_shared<BertResidualOutput>(c, c.hidden_size));
}

Tensor BertAttention::forward(const Tensor& x, const Tensor& mask) {
  nn::ModuleScope scope(*this);
  Tensor a = self->call(&BertSelfAttention::forward, x, mask);
  return output->call(&BertResidualOutput::forward, a, x);
}

BertLayer::BertLayer(const BertConfig& c) {
  attention = register_module("attention", std::make_shared<BertAttention>(c));
  intermediate = register_module("intermediate", std::make_shared<nn::Module>());
  intermediate_dense =
      intermediate->register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.intermediate_size));
  output = register_module("output", std::make_shared<BertResidualOutput>(c, c.intermediate_size));
  mark_as_block();
}

Tensor BertLayer::forward(const Tensor& x, const Tensor& mask) {
  nn::ModuleScope scope(*this);
  Tensor a = attention->call(&BertAttention::forward, x, mask);
  Tensor h;
  {
    nn::ModuleScope scope(*intermediate);
    h = ops::gelu(intermediate_dense->forward(a, ops::AutocastResult::Narrow));  // bf16 under autocast
  }
  return output->call(&BertResidualOutput::forward, h, a);
}

// ---- BertModel ----

BertModel::BertModel(const BertConfig& config, bool add_pooling_layer) : config_(config) {
  config_.validate();
  const BertConfig& c = config_;
  embeddings = register_module("embeddings", std::make_shared<BertEmbeddings>(c));
  encoder = register_module("encoder", std::make_shared<nn::Module>());
  layer = encoder->register_module("layer", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layer->push_back(std::make_shared<BertLayer>(c));
  if (add_pooling_layer) {
    pooler = register_module("pooler", std::make_shared<nn::Module>());
    pooler_dense = pooler->register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
  }
  init_weights();
}

void BertModel::init_weights() {
  NoGradGuard ng;
  for (const auto& [name, m] : named_modules()) {
    if (auto lin = std::dynamic_pointer_cast<nn::Linear>(m)) {
      ops::normal_(lin->weight, 0.0, config_.initializer_range);
      if (lin->bias.defined()) lin->bias.zero_();
    } else if (auto emb = std::dynamic_pointer_cast<nn::Embedding>(m)) {
      ops::normal_(emb->weight, 0.0, config_.initializer_range);
    } else if (auto ln = std::dynamic_pointer_cast<nn::LayerNorm>(m)) {
      ln->reset_parameters();
    }
  }
  ops::select(embeddings->word_embeddings->weight, 0, config_.pad_token_id).zero_();
}

Tensor BertModel::forward(const Tensor& input_ids, const Tensor& token_type_ids, const Tensor& attention_mask) {
  nn::ModuleScope scope(*this);
  Tensor mask;  // bool [B, 1, 1, T], only when some key is padding
  if (attention_mask.defined()) {
    STRATA_CHECK(attention_mask.shape() == input_ids.shape(), ShapeError, "BertModel: attention_mask ",
                 shape_str(attention_mask.shape()), " must match input_ids ", shape_str(input_ids.shape()));
    NoGradGuard ng;
    Tensor keep = attention_mask.dtype() == DType::boolean
                      ? attention_mask
                      : ops::ne(attention_mask,
                                ops::zeros({}, TensorOptions(attention_mask.dtype()).device(attention_mask.device())));
    if (attention_mask.device().is_meta() || ops::sum(keep).item() < double(keep.numel()))
      mask = ops::reshape(keep, {input_ids.size(0), 1, 1, input_ids.size(1)});
  }
  Tensor x = embeddings->call(&BertEmbeddings::forward, input_ids, token_type_ids);
  for (const auto& block : *layer) x = std::static_pointer_cast<BertLayer>(block)->call(&BertLayer::forward, x, mask);
  return x;
}

Tensor BertModel::pool(const Tensor& hidden_states) {
  STRATA_CHECK(pooler != nullptr, ValueError, "BertModel::pool: built without a pooling layer");
  nn::ModuleScope scope(*pooler);
  return ops::tanh((*pooler_dense)(ops::select(hidden_states, 1, 0)));
}

// ---- masked-LM head ----

BertLMPredictionHead::BertLMPredictionHead(const BertConfig& c, const Tensor& word_embeddings) {
  // Own parameter first, as in Hugging Face (cls.predictions.bias, then transform, decoder).
  bias = register_parameter("bias", ops::zeros({c.vocab_size}));
  transform = register_module("transform", std::make_shared<nn::Module>());
  transform_dense = transform->register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
  transform_LayerNorm = transform->register_module("LayerNorm", std::make_shared<nn::LayerNorm>(ln_options(c)));
  decoder = register_module("decoder", std::make_shared<nn::Module>());
  decoder->register_parameter("weight", word_embeddings);
  decoder->register_parameter("bias", bias);
}

Tensor BertLMPredictionHead::transform_rows(const Tensor& x) {
  nn::ModuleScope scope(*transform);
  return (*transform_LayerNorm)(ops::gelu((*transform_dense)(x)));
}

MaskedPositions masked_positions(const Tensor& labels) {
  STRATA_CHECK(labels.dtype() == DType::i64, TypeError, "masked_positions: labels must be i64, got ", labels.str());
  std::vector<int64_t> all = ops::to(labels, Device()).contiguous().to_vector<int64_t>();
  std::vector<int64_t> rows, targets;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i] != -100) {
      rows.push_back(int64_t(i));
      targets.push_back(all[i]);
    }
  const int64_t M = int64_t(rows.size());
  TensorOptions o = TensorOptions(DType::i64).device(labels.device());
  return {ops::from_vector(rows, {M}, o), ops::from_vector(targets, {M}, o)};
}

BertForMaskedLM::BertForMaskedLM(const BertConfig& config) {
  bert = register_module("bert", std::make_shared<BertModel>(config, /*add_pooling_layer=*/false));
  cls = register_module("cls", std::make_shared<nn::Module>());
  predictions = cls->register_module(
      "predictions", std::make_shared<BertLMPredictionHead>(bert->config(), bert->embeddings->word_embeddings->weight));
  init_weights();
}

void BertForMaskedLM::init_weights() {
  bert->init_weights();
  NoGradGuard ng;
  const double r = bert->config().initializer_range;
  ops::normal_(predictions->transform_dense->weight, 0.0, r);
  predictions->transform_dense->bias.zero_();
  predictions->transform_LayerNorm->reset_parameters();
  predictions->bias.zero_();
}

Tensor BertForMaskedLM::hidden_states(const Tensor& input_ids, const Tensor& token_type_ids,
                                      const Tensor& attention_mask) {
  return bert->forward(input_ids, token_type_ids, attention_mask);
}

Tensor BertForMaskedLM::masked_rows(const Tensor& input_ids, const Tensor& token_type_ids,
                                    const Tensor& attention_mask, const Tensor& rows) {
  Tensor h = hidden_states(input_ids, token_type_ids, attention_mask);
  const int64_t C = h.size(2);
  nn::ModuleScope s1(*cls), s2(*predictions);
  return predictions->transform_rows(ops::index_select(ops::reshape(h, {-1, C}), 0, rows));
}

Tensor BertForMaskedLM::mlm_logits(const Tensor& input_ids, const Tensor& token_type_ids,
                                   const Tensor& attention_mask, const Tensor& labels) {
  MaskedPositions m = masked_positions(labels);
  Tensor x = masked_rows(input_ids, token_type_ids, attention_mask, m.rows);
  return ops::linear(x, bert->embeddings->word_embeddings->weight, predictions->bias);
}

Tensor BertForMaskedLM::loss(const Tensor& input_ids, const Tensor& token_type_ids, const Tensor& attention_mask,
                             const Tensor& labels) {
  STRATA_CHECK(labels.shape() == input_ids.shape(), ShapeError, "BertForMaskedLM::loss: labels ",
               shape_str(labels.shape()), " must match input_ids ", shape_str(input_ids.shape()));
  MaskedPositions m = masked_positions(labels);
  STRATA_CHECK(m.rows.numel() > 0, ValueError, "BertForMaskedLM::loss: no masked position (every label is -100)");
  Tensor x = masked_rows(input_ids, token_type_ids, attention_mask, m.rows);
  nn::ModuleScope s1(*cls), s2(*predictions), s3(*predictions->decoder);
  return ops::linear_cross_entropy(x, bert->embeddings->word_embeddings->weight, predictions->bias, m.targets);
}

Tensor BertForMaskedLM::forward(const Tensor& input_ids) {
  Tensor h = hidden_states(input_ids, Tensor(), Tensor());
  nn::ModuleScope s1(*cls), s2(*predictions);
  return ops::linear(predictions->transform_rows(h), bert->embeddings->word_embeddings->weight, predictions->bias);
}

// ---- sequence classification ----

BertForSequenceClassification::BertForSequenceClassification(const BertConfig& config) {
  bert = register_module("bert", std::make_shared<BertModel>(config, /*add_pooling_layer=*/true));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(config.hidden_dropout_prob));
  classifier = register_module("classifier", std::make_shared<nn::Linear>(config.hidden_size, config.num_labels));
  init_weights();
}

void BertForSequenceClassification::init_weights() {
  bert->init_weights();
  NoGradGuard ng;
  ops::normal_(classifier->weight, 0.0, bert->config().initializer_range);
  classifier->bias.zero_();
}

Tensor BertForSequenceClassification::forward(const Tensor& input_ids, const Tensor& token_type_ids,
                                              const Tensor& attention_mask) {
  nn::ModuleScope scope(*this);
  Tensor pooled = bert->pool(bert->forward(input_ids, token_type_ids, attention_mask));
  return (*classifier)((*dropout)(pooled));
}

Tensor BertForSequenceClassification::loss(const Tensor& input_ids, const Tensor& token_type_ids,
                                           const Tensor& attention_mask, const Tensor& labels) {
  return ops::cross_entropy(forward(input_ids, token_type_ids, attention_mask), labels);
}

}  // namespace strata::models
