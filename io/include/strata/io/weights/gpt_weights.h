// GPT-2 weights in and out of Strata: Hugging Face `model.safetensors` and llm.c's
// `gpt2_124M.bin` / `gpt2_124M_bf16.bin`, as state dicts with nanoGPT's names and PyTorch
// Linear layout [out, in] (what strata::models::GPT's state_dict() holds):
//
//   transformer.wte.weight [V, C]            transformer.wpe.weight [T, C]
//   transformer.h.{i}.ln_1.{weight,bias} [C]
//   transformer.h.{i}.attn.c_attn.weight [3C, C], .bias [3C]
//   transformer.h.{i}.attn.c_proj.weight [C, C],  .bias [C]
//   transformer.h.{i}.ln_2.{weight,bias} [C]
//   transformer.h.{i}.mlp.c_fc.weight [4C, C],    .bias [4C]
//   transformer.h.{i}.mlp.c_proj.weight [C, 4C],  .bias [C]
//   transformer.ln_f.{weight,bias} [C]       lm_head.weight (the same tensor as wte: tied)
//
//   auto [shape, weights] = io::load_hf_gpt2_safetensors("gpt2/model.safetensors");
//   models::GPT gpt(models::GPTConfig::from_state_dict(weights, shape.n_head));
//   gpt.load_state_dict(weights);
//
// Loaded tensors are contiguous f32 CPU tensors. Savers take any float dtype and device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/nn/module.h"

namespace strata::io {

struct GptShape {
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_embd = 0;             // C
  int64_t block_size = 0;         // T, positions in wpe
  int64_t vocab_size = 0;         // V, rows of the loaded wte
  int64_t padded_vocab_size = 0;  // Vp: llm.c pads wte to a multiple of 128; = V for HF files
};

struct GptWeights {
  GptShape shape;
  nn::StateDict state_dict;
};

// nanoGPT's state_dict names, in its order, for `n_layer` blocks ("lm_head.weight" last).
std::vector<std::string> gpt_parameter_names(int64_t n_layer);

// Hugging Face GPT-2 (GPT2LMHeadModel or GPT2Model) safetensors. Keys may carry the
// "transformer." prefix or not; HF's Conv1D weights ([in, out]: attn.c_attn, attn.c_proj,
// mlp.c_fc, mlp.c_proj) are transposed to [out, in]; the attn.bias / attn.masked_bias
// buffers are skipped; an lm_head.weight must equal wte (GPT-2 ties them). F32, F16 and BF16
// become f32. n_layer, n_embd, vocab and block size come from the shapes; n_head cannot, so
// it is `n_head` when > 0, else the file's "n_head" metadata (save_hf_gpt2_safetensors
// writes it), else n_embd / 64 (GPT-2's head size). Throws IoError naming the file and key
// for a missing, misshaped or unexpected tensor.
GptWeights load_hf_gpt2_safetensors(const std::string& path, int64_t n_head = 0);

// Writes the HF layout (Conv1D weights [in, out], "transformer." prefix, no lm_head since it
// is tied, no attn.bias buffers, f32, metadata {"format": "pt", "n_head": ...}) that
// GPT2LMHeadModel.from_pretrained reads. `state_dict` holds nanoGPT's names (lm_head.weight
// optional); wte may have `padded_vocab_size` rows, of which the first vocab_size are kept.
void save_hf_gpt2_safetensors(const std::string& path, const GptShape& shape,
                              const nn::StateDict& state_dict);

// llm.c's model file (train_gpt2.py's write_model): a 256 x int32 header (magic 20240326,
// version 3 = fp32 or 5 = bf16, maxT, V, L, NH, C, Vp), then wte (Vp, C), wpe (maxT, C), and
// each of ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b fcw fcb fcprojw fcprojb stacked
// over the L layers, then lnfw, lnfb. The Vp - V padding rows of wte are dropped (wte has V
// rows; shape.padded_vocab_size records Vp); bf16 becomes f32 exactly. Throws IoError naming
// the file, the field or tensor and its offset for a bad magic/version/size or truncation.
GptWeights load_llmc_checkpoint(const std::string& path);

// Writes llm.c's format (version 5 with bf16 = true, rounding to nearest even, else 3),
// padding wte with zero rows to Vp = the next multiple of 128 as llm.c does. Atomic
// (temporary file, fsync, rename).
void save_llmc_checkpoint(const std::string& path, const GptShape& shape, const nn::StateDict& state_dict,
                          bool bf16 = false);

// Either format by what the file holds: llm.c's (its magic), else Hugging Face safetensors; a
// directory means its model.safetensors. For safetensors without "n_head" metadata and `n_head` 0,
// a config.json beside the file gives n_head. Throws IoError naming the path.
GptWeights load_gpt2_weights(const std::string& path, int64_t n_head = 0);

// A Hugging Face model directory: model.safetensors (save_hf_gpt2_safetensors) and the config.json
// GPT2LMHeadModel.from_pretrained(dir) reads. Creates `dir`.
void save_hf_gpt2_dir(const std::string& dir, const GptShape& shape, const nn::StateDict& state_dict);

inline constexpr int32_t kLlmcModelMagic = 20240326;
inline constexpr int32_t kLlmcVersionF32 = 3;
inline constexpr int32_t kLlmcVersionBF16 = 5;

}  // namespace strata::io
