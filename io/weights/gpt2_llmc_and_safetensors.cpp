#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "io/file_io.h"
#include "strata/autograd/grad_mode.h"
#include "strata/io/weights/gpt_weights.h"
#include "strata/io/weights/safetensors.h"
#include "strata/ops/shape_ops.h"

namespace strata::io {

static_assert(std::endian::native == std::endian::little, "llm.c files are little-endian");

namespace {

constexpr int64_t kLlmcHeaderInts = 256;
constexpr int64_t kLlmcHeaderBytes = kLlmcHeaderInts * 4;

// One of a block's twelve parameters, in nanoGPT's (and llm.c's) order. `rows`/`cols` are
// multiples of C for the [out, in] layout (cols 0: a vector); conv1d: HF stores it [in, out].
struct BlockParam {
  const char* suffix;
  const char* llmc_name;
  int64_t rows, cols;
  bool conv1d;
};
constexpr BlockParam kBlockParams[] = {
    {"ln_1.weight", "ln1w", 1, 0, false},           {"ln_1.bias", "ln1b", 1, 0, false},
    {"attn.c_attn.weight", "qkvw", 3, 1, true},     {"attn.c_attn.bias", "qkvb", 3, 0, false},
    {"attn.c_proj.weight", "attprojw", 1, 1, true}, {"attn.c_proj.bias", "attprojb", 1, 0, false},
    {"ln_2.weight", "ln2w", 1, 0, false},           {"ln_2.bias", "ln2b", 1, 0, false},
    {"mlp.c_fc.weight", "fcw", 4, 1, true},         {"mlp.c_fc.bias", "fcb", 4, 0, false},
    {"mlp.c_proj.weight", "fcprojw", 1, 4, true},   {"mlp.c_proj.bias", "fcprojb", 1, 0, false},
};

// A parameter of the whole model: its nanoGPT name (without "transformer."), [out, in] shape.
struct ParamSpec {
  std::string name;
  Shape shape;
  bool conv1d = false;
  std::string llmc_name;
};

std::string block_name(int64_t layer, const BlockParam& p) {
  return "h." + std::to_string(layer) + "." + p.suffix;
}

Shape block_shape(const BlockParam& p, int64_t C) {
  return p.cols == 0 ? Shape{p.rows * C} : Shape{p.rows * C, p.cols * C};
}

// nanoGPT order, without lm_head; wte with `vocab_rows` rows.
std::vector<ParamSpec> param_specs(const GptShape& s, int64_t vocab_rows) {
  const int64_t C = s.n_embd;
  std::vector<ParamSpec> out;
  out.push_back({"wte.weight", {vocab_rows, C}, false, "wte"});
  out.push_back({"wpe.weight", {s.block_size, C}, false, "wpe"});
  for (int64_t l = 0; l < s.n_layer; ++l)
    for (const BlockParam& p : kBlockParams)
      out.push_back({block_name(l, p), block_shape(p, C), p.conv1d, p.llmc_name});
  out.push_back({"ln_f.weight", {C}, false, "lnfw"});
  out.push_back({"ln_f.bias", {C}, false, "lnfb"});
  return out;
}

Shape transposed(const Shape& s) { return s.size() == 2 ? Shape{s[1], s[0]} : s; }

// A contiguous f32 CPU copy (or the tensor itself when it already is one).
Tensor host_f32(const Tensor& t) {
  NoGradGuard no_grad;
  Tensor h = t.detach();
  if (!h.device().is_cpu()) h = h.to(kCPU);
  if (h.dtype() != DType::f32) h = h.to(DType::f32);
  return h.contiguous();
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

void check_shape_sane(const GptShape& s, const char* fn) {
  STRATA_CHECK(s.n_layer > 0 && s.n_head > 0 && s.n_embd > 0 && s.block_size > 0 && s.vocab_size > 0,
               ValueError, fn, ": GptShape L=", s.n_layer, " NH=", s.n_head, " C=", s.n_embd,
               " T=", s.block_size, " V=", s.vocab_size, " must be positive");
  STRATA_CHECK(s.n_embd % s.n_head == 0, ValueError, fn, ": n_embd ", s.n_embd,
               " is not a multiple of n_head ", s.n_head);
}

// The state dict's tensors in param_specs order, as contiguous f32 [out, in] tensors with V
// wte rows; ValueError naming every missing, unexpected or misshaped key.
std::vector<Tensor> gather_for_export(const GptShape& s, const nn::StateDict& sd, const char* fn) {
  check_shape_sane(s, fn);
  std::vector<ParamSpec> specs = param_specs(s, s.vocab_size);
  std::vector<Tensor> out;
  std::set<std::string> used;
  std::string problems;
  for (const ParamSpec& p : specs) {
    const std::string key = "transformer." + p.name;
    const Tensor* t = sd.find(key);
    if (t == nullptr) {
      problems += "\n\tmissing '" + key + "'";
      continue;
    }
    used.insert(key);
    if (!t->defined() || !is_floating(t->dtype()) || t->device().is_meta()) {
      problems += "\n\t'" + key + "' is not a floating tensor with data";
      continue;
    }
    Shape want = p.shape;
    bool padded_wte = p.name == "wte.weight" && t->dim() == 2 && t->size(0) == s.padded_vocab_size &&
                      s.padded_vocab_size > s.vocab_size && t->size(1) == s.n_embd;
    if (t->shape() != want && !padded_wte) {
      problems += "\n\t'" + key + "' has shape " + shape_str(t->shape()) + ", expected " + shape_str(want);
      continue;
    }
    Tensor h = host_f32(padded_wte ? t->narrow(0, 0, s.vocab_size) : *t);
    out.push_back(std::move(h));
  }
  for (const auto& [key, t] : sd)
    if (!used.count(key) && key != "lm_head.weight") problems += "\n\tunexpected '" + key + "'";
  if (const Tensor* lm = sd.find("lm_head.weight"); lm && problems.empty()) {
    // Tied in GPT-2: writing wte alone must not lose a different lm_head. state_dict()
    // detaches each entry, so tied entries are distinct tensors viewing the same storage.
    const Tensor& wte = sd.at("transformer.wte.weight");
    bool tied = lm->defined() && lm->storage() == wte.storage() &&
                lm->storage_offset() == wte.storage_offset() && lm->shape() == wte.shape() &&
                lm->strides() == wte.strides() && lm->dtype() == wte.dtype();
    if (!tied && !(lm->defined() && !lm->device().is_meta() && same_bytes(host_f32(*lm), host_f32(wte))))
      problems += "\n\t'lm_head.weight' differs from 'transformer.wte.weight' (GPT-2 ties them)";
  }
  STRATA_CHECK(problems.empty(), ValueError, fn, ": the state dict does not match GPT L=", s.n_layer,
               " C=", s.n_embd, " T=", s.block_size, " V=", s.vocab_size, ":", problems);
  return out;
}

// Builds the returned state dict: "transformer." names plus lm_head.weight tied to wte.
nn::StateDict assemble(const std::vector<ParamSpec>& specs, std::vector<Tensor> tensors) {
  nn::StateDict sd;
  for (size_t i = 0; i < specs.size(); ++i) sd.insert("transformer." + specs[i].name, std::move(tensors[i]));
  sd.insert("lm_head.weight", sd.at("transformer.wte.weight"));
  return sd;
}

}  // namespace

std::vector<std::string> gpt_parameter_names(int64_t n_layer) {
  GptShape s;
  s.n_layer = n_layer;
  std::vector<std::string> names;
  for (const ParamSpec& p : param_specs(s, 0)) names.push_back("transformer." + p.name);
  names.push_back("lm_head.weight");
  return names;
}

namespace {

// n_head from the Hugging Face config.json beside `path` ("n_head"), 0 when there is none.
int64_t n_head_beside(const std::string& path) {
  std::ifstream in(std::filesystem::path(path).parent_path() / "config.json");
  if (!in) return 0;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("n_head") || !j["n_head"].is_number_integer()) return 0;
  return j["n_head"].get<int64_t>();
}

}  // namespace

GptWeights load_hf_gpt2_safetensors(const std::string& path, int64_t n_head) {
  Safetensors file = read_safetensors(path);
  auto bad = [&](auto&&... what) {
    return IoError(detail::concat("HF GPT-2 safetensors '", path, "': ", what...));
  };

  // Strip the "transformer." prefix (GPT2LMHeadModel) so GPT2Model files read the same.
  nn::StateDict by_name;
  std::set<std::string> skipped;
  for (auto& [key, t] : file.tensors) {
    std::string name = key.rfind("transformer.", 0) == 0 ? key.substr(12) : key;
    // The causal-mask buffers of older transformers versions: h.{i}.attn.bias / .masked_bias.
    if (name.rfind("h.", 0) == 0) {
      size_t dot = name.find('.', 2);
      std::string rest = dot == std::string::npos ? "" : name.substr(dot + 1);
      if (rest == "attn.bias" || rest == "attn.masked_bias") continue;
    }
    if (by_name.contains(name)) throw bad("both '", key, "' and '", name, "' are present");
    by_name.insert(name, t);
  }

  GptShape s;
  const Tensor* wte = by_name.find("wte.weight");
  const Tensor* wpe = by_name.find("wpe.weight");
  if (!wte || wte->dim() != 2)
    throw bad("no 2-D 'wte.weight' (or 'transformer.wte.weight'): not a GPT-2 checkpoint");
  if (!wpe || wpe->dim() != 2)
    throw bad("no 2-D 'wpe.weight' (or 'transformer.wpe.weight'): not a GPT-2 checkpoint");
  s.vocab_size = s.padded_vocab_size = wte->size(0);
  s.n_embd = wte->size(1);
  s.block_size = wpe->size(0);
  // n_layer: blocks h.0 ... h.{L-1}, which must all be present (checked below, key by key).
  for (const auto& [name, t] : by_name)
    if (name.rfind("h.", 0) == 0) {
      size_t dot = name.find('.', 2);
      const std::string idx = name.substr(2, dot == std::string::npos ? std::string::npos : dot - 2);
      auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
      if (idx.empty() || !std::all_of(idx.begin(), idx.end(), digit) || idx.size() > 6)
        throw bad("unexpected key '", name, "'");
      s.n_layer = std::max<int64_t>(s.n_layer, std::stoll(idx) + 1);
    }
  if (s.n_layer == 0) throw bad("no transformer blocks (h.0.*)");
  if (n_head > 0) {
    s.n_head = n_head;
  } else if (auto it = file.metadata.find("n_head"); it != file.metadata.end()) {
    try {
      s.n_head = std::stoll(it->second);
    } catch (const std::exception&) {
      throw bad("metadata n_head '", it->second, "' is not a number");
    }
  } else if (const int64_t from_config = n_head_beside(path); from_config > 0) {
    s.n_head = from_config;
  } else {
    // Nothing says n_head: GPT-2's head size of 64 is the one guess that may be right, and only
    // where it divides n_embd (C=96 with 6 heads built 1 head without a word: the loss moved by 9e-6).
    if (s.n_embd % 64 != 0)
      throw bad("n_head is not in the call, the file's metadata or a config.json beside it, and n_embd ",
                s.n_embd, " is not a multiple of GPT-2's head size 64, so it cannot be guessed: pass n_head");
    s.n_head = s.n_embd / 64;
    std::fprintf(stderr,
                 "warning: HF GPT-2 safetensors '%s': n_head is not in the call, the file's metadata or a "
                 "config.json beside it; taking n_embd / 64 = %ld (GPT-2's head size)\n",
                 path.c_str(), long(s.n_head));
  }
  if (s.n_head <= 0 || s.n_embd % s.n_head != 0)
    throw bad("n_embd ", s.n_embd, " is not a positive multiple of n_head ", s.n_head,
              " (pass n_head: it cannot be inferred from the weights)");

  std::vector<ParamSpec> specs = param_specs(s, s.vocab_size);
  std::vector<Tensor> tensors;
  std::set<std::string> used;
  NoGradGuard no_grad;
  for (const ParamSpec& p : specs) {
    const Tensor* t = by_name.find(p.name);
    if (t == nullptr) throw bad("missing tensor '", p.name, "' (or 'transformer.", p.name, "')");
    used.insert(p.name);
    const Shape want = p.conv1d ? transposed(p.shape) : p.shape;
    if (t->shape() != want)
      throw bad("tensor '", p.name, "' has shape ", shape_str(t->shape()), ", expected ", shape_str(want),
                p.conv1d ? " (HF Conv1D layout [in, out])" : "");
    if (t->dtype() != DType::f32 && t->dtype() != DType::f16 && t->dtype() != DType::bf16)
      throw bad("tensor '", p.name, "' has dtype ", dtype_name(t->dtype()), " (expected F32, F16 or BF16)");
    Tensor f = host_f32(*t);
    tensors.push_back(p.conv1d ? f.t().contiguous() : f);
  }
  for (const auto& [name, t] : by_name) {
    if (used.count(name)) continue;
    if (name == "lm_head.weight") {
      if (!same_bytes(host_f32(t), tensors[0]))
        throw bad("'lm_head.weight' differs from wte (GPT-2 ties them; an untied head is not supported)");
      continue;
    }
    throw bad("unexpected tensor '", name, "' ", dtype_name(t.dtype()), shape_str(t.shape()));
  }
  return {s, assemble(specs, std::move(tensors))};
}

void save_hf_gpt2_safetensors(const std::string& path, const GptShape& shape,
                              const nn::StateDict& state_dict) {
  std::vector<Tensor> tensors = gather_for_export(shape, state_dict, "save_hf_gpt2_safetensors");
  std::vector<ParamSpec> specs = param_specs(shape, shape.vocab_size);
  nn::StateDict out;
  NoGradGuard no_grad;
  for (size_t i = 0; i < specs.size(); ++i)
    out.insert("transformer." + specs[i].name, specs[i].conv1d ? tensors[i].t().contiguous() : tensors[i]);
  write_safetensors(path, out, {{"format", "pt"}, {"n_head", std::to_string(shape.n_head)}});
}

GptWeights load_llmc_checkpoint(const std::string& path) {
  InputFile f(path);
  auto bad = [&](auto&&... what) {
    return IoError(detail::concat("llm.c checkpoint '", path, "': ", what...));
  };
  if (f.size() < uint64_t(kLlmcHeaderBytes))
    throw bad(f.size(), " bytes is shorter than the ", kLlmcHeaderBytes, "-byte header");
  int32_t h[kLlmcHeaderInts];
  f.read_at(h, sizeof(h), 0, "the header");
  if (h[0] != kLlmcModelMagic)
    throw bad("bad magic ", h[0], " at offset 0 (expected ", kLlmcModelMagic, ": llm.c's model file)");
  if (h[1] != kLlmcVersionF32 && h[1] != kLlmcVersionBF16)
    throw bad("unsupported version ", h[1], " at offset 4 (expected 3 = fp32 or 5 = bf16)");
  const char* fields[] = {"maxT", "V", "L", "NH", "C", "Vp"};
  for (int i = 0; i < 6; ++i)
    if (h[2 + i] <= 0)
      throw bad("header field ", fields[i], " = ", h[2 + i], " at offset ", 4 * (2 + i), " is not positive");
  GptShape s;
  s.block_size = h[2];
  s.vocab_size = h[3];
  s.n_layer = h[4];
  s.n_head = h[5];
  s.n_embd = h[6];
  s.padded_vocab_size = h[7];
  if (s.padded_vocab_size < s.vocab_size)
    throw bad("padded vocab Vp = ", s.padded_vocab_size, " (offset 28) is below V = ", s.vocab_size,
              " (offset 12)");
  if (s.n_embd % s.n_head != 0)
    throw bad("C = ", s.n_embd, " (offset 24) is not a multiple of NH = ", s.n_head, " (offset 20)");

  const DType file_dtype = h[1] == kLlmcVersionBF16 ? DType::bf16 : DType::f32;
  const uint64_t es = element_size(file_dtype);
  const int64_t C = s.n_embd, L = s.n_layer;
  // The 16 arrays in file order: name, shape of the whole array (layers stacked first).
  struct Array {
    std::string name;
    Shape shape;
  };
  std::vector<Array> arrays = {{"wte", {s.padded_vocab_size, C}}, {"wpe", {s.block_size, C}}};
  for (const BlockParam& p : kBlockParams) {
    Shape sh = block_shape(p, C);
    sh.insert(sh.begin(), L);
    arrays.push_back({p.llmc_name, sh});
  }
  arrays.push_back({"lnfw", {C}});
  arrays.push_back({"lnfb", {C}});
  // Offsets in 128-bit arithmetic: header fields are arbitrary int32s in a corrupt file.
  unsigned __int128 offset = kLlmcHeaderBytes;
  std::vector<uint64_t> offsets;
  for (const Array& a : arrays) {
    offsets.push_back(uint64_t(offset));
    unsigned __int128 n = es;
    for (int64_t d : a.shape) n *= uint64_t(d);
    if (offset + n > f.size()) {
      throw bad("truncated: ", a.name, " ", shape_str(a.shape), " at offset ", uint64_t(offset),
                " needs bytes up to ",
                offset + n > (unsigned __int128)(UINT64_MAX) ? UINT64_MAX : uint64_t(offset + n),
                ", but the file has ", f.size(), " (or the header's sizes are wrong: maxT=", h[2],
                " V=", h[3], " L=", h[4], " NH=", h[5], " C=", h[6], " Vp=", h[7], ")");
    }
    offset += n;
  }
  if (uint64_t(offset) != f.size())
    throw bad(f.size() - uint64_t(offset), " unexpected bytes after the last tensor (lnfb) at offset ",
              uint64_t(offset), " (the header's sizes do not describe this file)");

  NoGradGuard no_grad;
  std::vector<Tensor> whole;
  for (size_t i = 0; i < arrays.size(); ++i) {
    Tensor raw = Tensor::empty(arrays[i].shape, file_dtype, kCPU);
    f.read_at(raw.data_ptr(), raw.nbytes(), offsets[i], "tensor '" + arrays[i].name + "'");
    whole.push_back(file_dtype == DType::f32 ? raw : raw.to(DType::f32));
  }
  std::vector<ParamSpec> specs = param_specs(s, s.vocab_size);
  std::vector<Tensor> tensors(specs.size());
  tensors[0] = whole[0].narrow(0, 0, s.vocab_size).clone();  // drop the Vp - V padding rows
  tensors[1] = whole[1];
  for (int64_t l = 0; l < L; ++l)
    for (size_t k = 0; k < std::size(kBlockParams); ++k)
      tensors[2 + size_t(l) * std::size(kBlockParams) + k] = whole[2 + k].select(0, l).clone();
  tensors[specs.size() - 2] = whole[whole.size() - 2];
  tensors[specs.size() - 1] = whole[whole.size() - 1];
  return {s, assemble(specs, std::move(tensors))};
}

void save_llmc_checkpoint(const std::string& path, const GptShape& shape, const nn::StateDict& state_dict,
                          bool bf16) {
  std::vector<Tensor> tensors = gather_for_export(shape, state_dict, "save_llmc_checkpoint");
  const int64_t C = shape.n_embd, L = shape.n_layer, V = shape.vocab_size;
  const int64_t Vp = (V + 127) / 128 * 128;
  for (int64_t v : {shape.block_size, V, L, shape.n_head, C, Vp})
    STRATA_CHECK(v <= INT32_MAX, ValueError, "save_llmc_checkpoint: size ", v,
                 " does not fit llm.c's int32 header");
  int32_t h[kLlmcHeaderInts] = {};
  h[0] = kLlmcModelMagic;
  h[1] = bf16 ? kLlmcVersionBF16 : kLlmcVersionF32;
  h[2] = int32_t(shape.block_size);
  h[3] = int32_t(V);
  h[4] = int32_t(L);
  h[5] = int32_t(shape.n_head);
  h[6] = int32_t(C);
  h[7] = int32_t(Vp);

  NoGradGuard no_grad;
  const uint64_t es = bf16 ? 2 : 4;
  OutputFile out(path, /*atomic=*/true);
  out.write(h, sizeof(h));
  auto put = [&](const Tensor& t) {
    Tensor w = bf16 ? t.to(DType::bf16) : t;  // round to nearest even, as torch's .to(bfloat16)
    out.write(w.data_ptr(), w.nbytes());
  };
  put(tensors[0]);
  out.write_zeros(uint64_t((Vp - V) * C) * es);
  put(tensors[1]);
  const size_t nb = std::size(kBlockParams);
  for (size_t k = 0; k < nb; ++k)
    for (int64_t l = 0; l < L; ++l) put(tensors[2 + size_t(l) * nb + k]);
  put(tensors[tensors.size() - 2]);
  put(tensors[tensors.size() - 1]);
  out.commit();
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  fsync_directory(parent.empty() ? std::string(".") : parent.string());
}

}  // namespace strata::io
