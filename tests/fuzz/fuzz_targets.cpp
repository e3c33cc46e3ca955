#include "tests/fuzz/fuzz_targets.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "strata/io/bert_weights.h"
#include "strata/io/checkpoint.h"
#include "strata/io/gpt_weights.h"
#include "strata/io/image.h"
#include "strata/io/safetensors.h"
#include "strata/io/token_shards.h"
#include "strata/memory/plan.h"
#include "strata/memory/planner/hardware.h"
#include "strata/models/bert.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

namespace strata::fuzz {

namespace fs = std::filesystem;

namespace {

// A scratch folder of this process, removed at exit: the file-based loaders read what a target
// writes there.
const fs::path& scratch() {
  struct Scratch {
    fs::path dir = fs::temp_directory_path() / ("strata_fuzz_" + std::to_string(::getpid()));
    Scratch() { fs::create_directories(dir); }
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  };
  static const Scratch s;
  return s.dir;
}

void put(const fs::path& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

std::string bytes_of(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string as_file(const char* name, const uint8_t* data, size_t size) {
  const fs::path p = scratch() / name;
  put(p, data, size);
  return p.string();
}

// A checkpoint directory as one input: a 4-byte little-endian length n, index.pb (n bytes), then
// tensors.bin (the rest); a length past the end takes everything for the index.
void run_checkpoint(const uint8_t* data, size_t size) {
  uint32_t n = 0;
  if (size >= 4) std::memcpy(&n, data, 4);
  const size_t body = size >= 4 ? size - 4 : 0;
  const size_t index_bytes = std::min<size_t>(n, body);
  const fs::path dir = scratch() / "checkpoint";
  fs::create_directories(dir);
  put(dir / io::kCheckpointIndexFile, data + (size - body), index_bytes);
  put(dir / io::kCheckpointTensorsFile, data + (size - body) + index_bytes, body - index_bytes);
  io::load_checkpoint(dir.string());
}

void run_safetensors(const uint8_t* data, size_t size) { io::read_safetensors(as_file("st", data, size)); }
void run_hf_gpt2(const uint8_t* data, size_t size) {
  io::load_hf_gpt2_safetensors(as_file("gpt2", data, size));
}
void run_hf_bert(const uint8_t* data, size_t size) {
  io::load_hf_bert_safetensors(as_file("bert", data, size));
}
void run_llmc(const uint8_t* data, size_t size) { io::load_llmc_checkpoint(as_file("llmc", data, size)); }

void run_token_shard(const uint8_t* data, size_t size) {
  const std::string path = as_file("shard.bin", data, size);
  io::TokenLoader loader({path}, {.batch = 2, .seq_len = 8, .token_limit = 256});
  Tensor x, y;
  loader.next(&x, &y);
}

void run_image(const uint8_t* data, size_t size) { io::decode_image(data, size, "fuzz input"); }

void run_plan_text(const uint8_t* data, size_t size) {
  memory::plan_from_text(std::string(reinterpret_cast<const char*>(data), size));
}

void run_hardware_text(const uint8_t* data, size_t size) {
  memory::planner::hardware_profile_from_text(std::string(reinterpret_cast<const char*>(data), size));
}

void write_seed(const fs::path& dir, const std::string& target, int n, const std::string& bytes) {
  fs::create_directories(dir / target);
  std::ofstream(dir / target / ("seed_" + std::to_string(n)), std::ios::binary) << bytes;
}

}  // namespace

const std::vector<Target>& targets() {
  // A function's static: the test suites that list the targets are made during static
  // initialization, in another file.
  static const std::vector<Target> all = {
      {"checkpoint", run_checkpoint}, {"safetensors", run_safetensors}, {"hf_gpt2", run_hf_gpt2},
      {"hf_bert", run_hf_bert},       {"llmc_weights", run_llmc},       {"token_shard", run_token_shard},
      {"image", run_image},           {"plan_text", run_plan_text},     {"hardware_text", run_hardware_text},
  };
  return all;
}

const Target& target(const std::string& name) {
  for (const Target& t : targets())
    if (name == t.name) return t;
  throw std::invalid_argument("no fuzz target '" + name + "'");
}

void write_seeds(const std::string& out) {
  const fs::path dir(out);
  const fs::path tmp = scratch() / "seeds";
  fs::create_directories(tmp);
  manual_seed(1);
  {  // a checkpoint: index and tensors of a few dtypes
    io::CheckpointState s;
    s.config = "n_layer: 1";
    s.step = 42;
    s.data = {1, 0, 7};
    s.metadata = {{"loss", "3.5"}};
    s.model.insert("w", ops::randn({3, 5}));
    s.model.insert("b", ops::randn({5}).to(DType::bf16));
    s.model.insert("ids", ops::arange(int64_t(4)));
    s.optimizer.insert("state.0.step", ops::scalar_tensor(2.0, DType::f64));
    io::save_checkpoint((tmp / "ckpt").string(), s);
    const std::string index = bytes_of(tmp / "ckpt" / io::kCheckpointIndexFile);
    const std::string tensors = bytes_of(tmp / "ckpt" / io::kCheckpointTensorsFile);
    const uint32_t n = uint32_t(index.size());
    write_seed(dir, "checkpoint", 0, std::string(reinterpret_cast<const char*>(&n), 4) + index + tensors);
  }
  {  // safetensors of every dtype the reader maps
    nn::StateDict sd;
    sd.insert("f32", ops::randn({2, 3}));
    sd.insert("f16", ops::randn({4}).to(DType::f16));
    sd.insert("i64", ops::arange(int64_t(3)));
    sd.insert("u8", ops::arange(int64_t(5)).to(DType::u8));
    io::write_safetensors((tmp / "st").string(), sd, {{"format", "pt"}});
    write_seed(dir, "safetensors", 0, bytes_of(tmp / "st"));
  }
  models::GPTConfig gc;
  gc.n_layer = 1, gc.n_head = 2, gc.n_embd = 8, gc.block_size = 8, gc.vocab_size = 16;
  models::GPT gpt(gc);
  const io::GptShape shape{1, 2, 8, 8, 16, 16};
  io::save_hf_gpt2_safetensors((tmp / "gpt2").string(), shape, gpt.state_dict());
  write_seed(dir, "hf_gpt2", 0, bytes_of(tmp / "gpt2"));
  io::save_llmc_checkpoint((tmp / "llmc").string(), shape, gpt.state_dict());
  write_seed(dir, "llmc_weights", 0, bytes_of(tmp / "llmc"));
  io::save_llmc_checkpoint((tmp / "llmc16").string(), shape, gpt.state_dict(), /*bf16=*/true);
  write_seed(dir, "llmc_weights", 1, bytes_of(tmp / "llmc16"));
  {
    models::BertConfig bc = models::BertConfig::preset("tiny");
    bc.hidden_size = 8, bc.num_hidden_layers = 1, bc.num_attention_heads = 2, bc.intermediate_size = 16;
    bc.max_position_embeddings = 16;
    models::BertForMaskedLM bert(bc);
    io::write_safetensors((tmp / "bert").string(), bert.state_dict());
    write_seed(dir, "hf_bert", 0, bytes_of(tmp / "bert"));
  }
  {
    std::vector<int32_t> tokens(100);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 37) % 256);
    io::write_token_shard((tmp / "shard").string(), tokens);
    write_seed(dir, "token_shard", 0, bytes_of(tmp / "shard"));
  }
  {
    io::Image img(6, 5);
    for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t(i * 7);
    const std::vector<uint8_t> png = io::encode_png(img), jpeg = io::encode_jpeg(img, 90);
    write_seed(dir, "image", 0, std::string(png.begin(), png.end()));
    write_seed(dir, "image", 1, std::string(jpeg.begin(), jpeg.end()));
  }
  {
    memory::Plan p;
    p.blocks = {{"transformer.h.0", memory::CacheAction::Nvme},
                {"transformer.h.1", memory::CacheAction::Recompute}};
    p.tensors = {{"transformer.h.0.mlp.c_fc#0:LinearBackward", memory::CacheAction::Keep}};
    p.budget_bytes = 1 << 30;
    p.solver = "fuzz seed";
    write_seed(dir, "plan_text", 0, memory::plan_to_text(p));
  }
  {
    memory::planner::HardwareProfile h;
    h.name = "fuzz seed";
    h.matmul_flops_fp32 = {1e11, "seed"};
    h.host_memcpy_bytes_per_second = {1e10, "seed"};
    write_seed(dir, "hardware_text", 0, memory::planner::hardware_profile_to_text(h));
  }
  fs::remove_all(tmp);
}

}  // namespace strata::fuzz
