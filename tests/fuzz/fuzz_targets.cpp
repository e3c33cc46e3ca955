#include "tests/fuzz/fuzz_targets.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "strata/io/checkpoint/checkpoint.h"
#include "strata/io/features/feature_store.h"
#include "strata/io/graphs/graph_formats.h"
#include "strata/io/graphs/knowledge_graph.h"
#include "strata/io/images/image.h"
#include "strata/io/text/token_shards.h"
#include "strata/io/weights/bert_weights.h"
#include "strata/io/weights/gpt_weights.h"
#include "strata/io/weights/safetensors.h"
#include "strata/memory/plan.h"
#include "strata/memory/planner/hardware.h"
#include "strata/models/bert.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"
#include "tests/support/gzip_stored.h"

namespace strata::fuzz {

namespace fs = std::filesystem;
using testing::gzip_stored;

namespace {

// A scratch folder of this process, removed at exit: the file-based loaders read what a target
// writes there. In memory (/dev/shm) where the machine has it: each run writes and reads a few small
// files, and on a disk-backed /tmp that I/O, not the loaders, was most of the mutation runner's time.
fs::path scratch_root() {
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return fs::temp_directory_path();
}

const fs::path& scratch() {
  struct Scratch {
    fs::path dir = scratch_root() / ("strata_fuzz_" + std::to_string(::getpid()));
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

// One input as two files' bytes: a 4-byte little-endian length n, the first file (n bytes), then
// the second (the rest); a length past the end gives everything to the first.
struct TwoParts {
  const uint8_t* first;
  size_t first_size;
  const uint8_t* second;
  size_t second_size;
};

TwoParts split_in_two(const uint8_t* data, size_t size) {
  uint32_t n = 0;
  if (size >= 4) std::memcpy(&n, data, 4);
  const size_t body = size >= 4 ? size - 4 : 0;
  const size_t first = std::min<size_t>(n, body);
  const uint8_t* at = data + (size - body);
  return {at, first, at + first, body - first};
}

// A checkpoint directory as one input: index.pb and tensors.bin, split as split_in_two splits.
void run_checkpoint(const uint8_t* data, size_t size) {
  const TwoParts in = split_in_two(data, size);
  const fs::path dir = scratch() / "checkpoint";
  fs::create_directories(dir);
  put(dir / io::kCheckpointIndexFile, in.first, in.first_size);
  put(dir / io::kCheckpointTensorsFile, in.second, in.second_size);
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

// A .gt (or .gt.gz) file, loaded with the label property "value" and the feature property "pos"
// (the seeds have both); when those do not fit the file (a ValueError: missing, or of a type that
// cannot be a label or features), loaded again without them.
void run_graph_tool(const uint8_t* data, size_t size) {
  const std::string path = as_file("graph.gt", data, size);
  io::GraphToolInfo info;
  try {
    io::load_graph_tool(path, {.label_property = "value", .feature_property = "pos"}, &info);
  } catch (const ValueError&) {
    io::load_graph_tool(path, {}, &info);
  }
}

// Byte 0 of the edge_list input picks load_edge_list's options, the rest is the file.
enum EdgeListFlags : uint8_t {
  kWeightColumn = 1,
  kRelationColumn = 2,
  kUndirected = 4,
  kNodeTypes = 8,  // with kRelationColumn: node types "paper" (ids 0-9) and "author" (10-15)
  kNodeFile = 16,  // the rest splits (split_in_two) into the edge list and a node file
};

// The node count is always given (16): with num_nodes -1 it is the largest id + 1, and a one-line
// file naming node 2^30 - 1, which the loaders' cap allows, asks for gigabytes.
void run_edge_list(const uint8_t* data, size_t size) {
  const uint8_t flags = size > 0 ? data[0] : 0;
  const uint8_t* rest = data + (size > 0 ? 1 : 0);
  const size_t rest_size = size > 0 ? size - 1 : 0;
  io::EdgeListOptions options;
  options.num_nodes = 16;
  options.weight_column = (flags & kWeightColumn) != 0;
  options.relation_column = (flags & kRelationColumn) != 0;
  options.undirected = (flags & kUndirected) != 0;
  if ((flags & kNodeTypes) != 0 && options.relation_column)
    options.node_types = {{"paper", 10}, {"author", 6}};
  std::string path;
  if ((flags & kNodeFile) != 0) {
    const TwoParts in = split_in_two(rest, rest_size);
    path = as_file("edges.txt", in.first, in.first_size);
    options.node_file = as_file("nodes.csv", in.second, in.second_size);
  } else {
    path = as_file("edges.txt", rest, rest_size);
  }
  io::load_edge_list(path, options);
}

// An OGB raw folder: raw/num-node-list.csv says 16 nodes, and the input splits (split_in_two)
// into raw/edge.npy and, when the second part is not empty, raw/node-label.npy, so read_npy's
// preamble and header parser, the dtype conversions and the id and label checks all see it.
void run_ogb_npy(const uint8_t* data, size_t size) {
  const TwoParts in = split_in_two(data, size);
  const fs::path dir = scratch() / "ogb";
  fs::create_directories(dir / "raw");
  const std::string count = "16\n";
  put(dir / "raw" / "num-node-list.csv", reinterpret_cast<const uint8_t*>(count.data()), count.size());
  put(dir / "raw" / "edge.npy", in.first, in.first_size);
  if (in.second_size > 0)
    put(dir / "raw" / "node-label.npy", in.second, in.second_size);
  else
    fs::remove(dir / "raw" / "node-label.npy");
  io::load_ogb_raw(dir.string(), {.add_inverse_edges = true});
}

// A feature file (.npy) opened by MappedFeatureStore both ways, mapped and read with pread (a
// resident limit of one byte), and gathered at its first, middle and last rows.
void run_feature_file(const uint8_t* data, size_t size) {
  const std::string path = as_file("features.npy", data, size);
  for (uint64_t limit : {uint64_t(0), uint64_t(1)}) {
    io::MappedFeatureStore store(path, {.num_threads = 0, .resident_limit_bytes = limit});
    const int64_t n = store.num_rows();
    if (n == 0) continue;
    store.gather(from_vector(std::vector<int64_t>{0, n / 2, n - 1}, {3}));
  }
}

// Planetoid's <name>.content and <name>.cites, split as split_in_two splits.
void run_planetoid(const uint8_t* data, size_t size) {
  const TwoParts in = split_in_two(data, size);
  const fs::path dir = scratch() / "planetoid";
  fs::create_directories(dir);
  put(dir / "fuzz.content", in.first, in.first_size);
  put(dir / "fuzz.cites", in.second, in.second_size);
  io::PlanetoidInfo info;
  io::load_planetoid_raw(dir.string(), "fuzz", &info);
}

// A triples folder: the input splits (split_in_two) into train.txt and the rest, which splits
// again into valid.txt and test.txt; the training graph is built with its reverse relations.
void run_triples(const uint8_t* data, size_t size) {
  const TwoParts train = split_in_two(data, size);
  const TwoParts rest = split_in_two(train.second, train.second_size);
  const fs::path dir = scratch() / "triples";
  fs::create_directories(dir);
  put(dir / "train.txt", train.first, train.first_size);
  put(dir / "valid.txt", rest.first, rest.first_size);
  put(dir / "test.txt", rest.second, rest.second_size);
  io::load_triples(dir.string()).training_graph(/*reverse_relations=*/true);
}

void write_seed(const fs::path& dir, const std::string& target, int n, const std::string& bytes) {
  fs::create_directories(dir / target);
  std::ofstream(dir / target / ("seed_" + std::to_string(n)), std::ios::binary) << bytes;
}

// A .gt file's bytes, field by field (graph_tool_format.cpp's layout), in either byte order.
class GtWriter {
 public:
  explicit GtWriter(bool big_endian) : big_(big_endian) {
    bytes_ = std::string("\xe2\x9b\xbe\x20\x67\x74\x01", 7);
    bytes_.push_back(big_ ? 1 : 0);
  }
  GtWriter& uint(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) bytes_.push_back(char(v >> (8 * (big_ ? width - 1 - i : i))));
    return *this;
  }
  GtWriter& u8(uint64_t v) { return uint(v, 1); }
  GtWriter& u64(uint64_t v) { return uint(v, 8); }
  GtWriter& str(const std::string& s) {
    u64(s.size());
    bytes_ += s;
    return *this;
  }
  GtWriter& f64(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    return u64(bits);
  }
  // x87 extended precision in 16 bytes, as x86-64 graph-tool writes a long double: a 64-bit
  // significand with its integer bit, then the sign and the exponent biased by 16383.
  GtWriter& extended(double d) {
    uint64_t mantissa = 0, exponent = 0;
    if (d != 0) {
      int e = 0;
      mantissa = uint64_t(std::ldexp(std::frexp(std::fabs(d), &e), 64));
      exponent = uint64_t(e - 1 + 16383) | (d < 0 ? 0x8000 : 0);
    }
    std::string le;
    for (int i = 0; i < 8; ++i) le.push_back(char(mantissa >> (8 * i)));
    for (int i = 0; i < 2; ++i) le.push_back(char(exponent >> (8 * i)));
    le.resize(16, '\0');
    if (big_) std::reverse(le.begin(), le.end());
    bytes_ += le;
    return *this;
  }
  // A property record's head: key (0 graph, 1 vertex, 2 edge), name, value type index.
  GtWriter& property(int key, const std::string& name, int type) { return u8(key).str(name).u8(type); }
  const std::string& bytes() const { return bytes_; }

 private:
  bool big_;
  std::string bytes_;
};

// A .npy file (format version `major`) of little-endian values (numpy/lib/format.py's layout).
template <class T>
std::string npy_bytes(int major, const std::string& descr, const std::string& shape,
                      const std::vector<T>& values) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t preamble = major == 1 ? 10 : 12;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + char(major) + '\0';
  for (size_t i = 0; i < preamble - 8; ++i) out.push_back(char(header.size() >> (8 * i)));
  out += header;
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return out;
}

// The inverse of split_in_two.
std::string two_parts(const std::string& first, const std::string& second) {
  const uint32_t n = uint32_t(first.size());
  return std::string(reinterpret_cast<const char*>(&n), 4) + first + second;
}

// The graph_tool seeds: 4 vertices with every value type, directed (0) and undirected with string
// labels (1), 0 gzip'd (2), and 256 big-endian vertices, whose indices take 2 bytes, with no "pos" (3).
std::vector<std::string> graph_tool_seeds() {
  GtWriter g(false);
  g.str("a hand-written fuzz seed").u8(1).u64(4);
  g.u64(2).u8(1).u8(2).u64(1).u8(2).u64(2).u8(0).u8(3).u64(0);  // edges 0-1 0-2 1-2 2-0 2-3
  g.u64(18);
  g.property(0, "description", 6).str("tiny");
  g.property(0, "sizes", 10).u64(2).u64(4).u64(5);
  g.property(1, "value", 2);
  for (int32_t v : {3, -1, 0, 3}) g.uint(uint32_t(v), 4);
  g.property(1, "pos", 11);
  for (double v : {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.5}) {
    if (int(v) % 2 == 0) g.u64(2);
    g.f64(v);
  }
  g.property(1, "flag", 0).u8(1).u8(0).u8(1).u8(1);
  g.property(1, "small", 1);
  for (int16_t v : {-2, 7, 300, 0}) g.uint(uint16_t(v), 2);
  g.property(1, "big", 3);
  for (int64_t v : {int64_t(1) << 40, int64_t(-5), int64_t(0), INT64_MAX}) g.u64(uint64_t(v));
  g.property(1, "score", 4).f64(0.5).f64(1.5).f64(-2.0).f64(3.25);
  g.property(1, "precise", 5).extended(1.5).extended(-3.0).extended(0.0).extended(1e10);
  g.property(1, "team", 6).str("x").str("y").str("x").str("");
  g.property(1, "bits", 7).u64(1).u8(1).u64(1).u8(0).u64(1).u8(1).u64(1).u8(0);
  g.property(1, "pairs", 8);
  for (int k = 0; k < 4; ++k) g.u64(2).uint(uint16_t(k), 2).uint(uint16_t(-k), 2);
  g.property(1, "ragged", 9).u64(1).uint(9, 4).u64(2).uint(8, 4).uint(7, 4).u64(0).u64(1).uint(6, 4);
  g.property(1, "wide", 12);
  for (int k = 0; k < 4; ++k) g.u64(1).extended(k * 0.25);
  g.property(1, "aliases", 13).u64(2).str("p").str("q").u64(0).u64(1).str("r").u64(0);
  g.property(1, "pickled", 14).str("N.").str("N.").str("").str("I1\n.");
  g.property(2, "weight", 4);
  for (double w : {1.0, 2.0, 3.0, 4.0, 5.0}) g.f64(w);
  g.property(2, "kind", 3);
  for (int64_t k : {int64_t(10), int64_t(-20), int64_t(30), int64_t(1) << 60, INT64_MAX}) g.u64(uint64_t(k));

  GtWriter u(false);
  u.str("undirected, string labels").u8(0).u64(3);
  u.u64(1).u8(1).u64(1).u8(2).u64(0);  // edges 0-1 1-2
  u.u64(3);
  u.property(1, "value", 6).str("l").str("c").str("l");
  u.property(1, "pos", 9);
  for (int k = 0; k < 3; ++k) u.u64(2).uint(uint32_t(k), 4).uint(uint32_t(2 * k), 4);
  u.property(2, "value", 4).f64(0.5).f64(std::numeric_limits<double>::infinity());

  GtWriter b(true);
  b.str("big-endian").u8(1).u64(256);
  for (int v = 0; v < 256; ++v) {
    if (v < 8) {
      b.u64(1).uint(uint64_t(v + 250) % 256, 2);
    } else {
      b.u64(0);
    }
  }
  b.u64(1);
  b.property(1, "value", 1);
  for (int v = 0; v < 256; ++v) b.uint(uint64_t(v % 3), 2);
  return {g.bytes(), u.bytes(), gzip_stored(g.bytes()), b.bytes()};
}

}  // namespace

const std::vector<Target>& targets() {
  // A function's static: the test suites that list the targets are made during static
  // initialization, in another file.
  static const std::vector<Target> all = {
      {"checkpoint", run_checkpoint}, {"safetensors", run_safetensors}, {"hf_gpt2", run_hf_gpt2},
      {"hf_bert", run_hf_bert},       {"llmc_weights", run_llmc},       {"token_shard", run_token_shard},
      {"image", run_image},           {"plan_text", run_plan_text},     {"hardware_text", run_hardware_text},
      {"graph_tool", run_graph_tool}, {"edge_list", run_edge_list},     {"ogb_npy", run_ogb_npy},
      {"planetoid", run_planetoid},   {"triples", run_triples},         {"feature_file", run_feature_file},
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
  {
    const std::vector<std::string> gt = graph_tool_seeds();
    for (size_t i = 0; i < gt.size(); ++i) write_seed(dir, "graph_tool", int(i), gt[i]);
  }
  {  // byte 0: the options (EdgeListFlags), then the file(s)
    write_seed(dir, "edge_list", 0,
               std::string(1, '\0') + "# a comment\nsrc dst\n0 1\n1\t2\n% another\n\n  3   0  \r\n");
    write_seed(dir, "edge_list", 1,
               std::string(1, char(kWeightColumn | kUndirected)) + "0,1,0.5\n2, 3 ,1.5\n15,15,-2e3\n");
    write_seed(dir, "edge_list", 2,
               std::string(1, char(kRelationColumn | kNodeTypes | kUndirected)) +
                   "0 12 writes\n1 10 writes\n0 1 cites\n11 15 coauthor\n");
    write_seed(dir, "edge_list", 3,
               std::string(1, char(kRelationColumn | kWeightColumn)) + "0 1 a 1\n1 2 b 0.25\n2 0 a nan\n");
    write_seed(dir, "edge_list", 4,
               std::string(1, char(kNodeFile)) +
                   two_parts("0 1\n1 2\n", "id,label,f0,f1\n0,1,0.5,1\n2,0,2,3\n5,,1,1\n"));
    write_seed(
        dir, "edge_list", 5,
        std::string(1, char(kNodeFile | kUndirected)) + two_parts("0 1\n1 2\n", "0 cat\n3 dog\n1 cat\n"));
  }
  {  // raw/edge.npy and raw/node-label.npy of a 16-node graph
    const std::vector<int64_t> edges = {0, 1, 1, 2, 3, 0, 15, 15};
    std::vector<double> labels(16);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = double(i % 3);
    labels[5] = std::numeric_limits<double>::quiet_NaN(), labels[6] = -1;
    write_seed(dir, "ogb_npy", 0,
               two_parts(npy_bytes(1, "<i8", "(4, 2)", edges), npy_bytes(1, "<f8", "(16,)", labels)));
    write_seed(dir, "ogb_npy", 1,
               two_parts(npy_bytes(2, "<i4", "(3, 2)", std::vector<int32_t>{0, 1, 2, 3, 4, 5}), ""));
    std::vector<float> tasks(32);
    for (size_t i = 0; i < tasks.size(); ++i) tasks[i] = float(i % 2);
    write_seed(dir, "ogb_npy", 2,
               two_parts(npy_bytes(3, "|u1", "(2, 2)", std::vector<uint8_t>{7, 8, 8, 9}),
                         npy_bytes(1, "<f4", "(16, 2)", tasks)));
  }
  {  // feature files: f32 rows (version 1), f16 (version 2), one i64 column (version 3)
    std::vector<float> rows(12);
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = float(i) - 2.5f;
    write_seed(dir, "feature_file", 0, npy_bytes(1, "<f4", "(4, 3)", rows));
    write_seed(dir, "feature_file", 1, npy_bytes(2, "<f2", "(2, 5)", std::vector<uint16_t>(10, 0x3c00)));
    write_seed(dir, "feature_file", 2, npy_bytes(3, "<i8", "(3, 1)", std::vector<int64_t>{7, -1, 1 << 20}));
  }
  {  // <name>.content and <name>.cites
    write_seed(dir, "planetoid", 0,
               two_parts("p31\t0\t1\t0\tTheory\nalpha97\t1\t1\t0\tAI\nx_9\t0\t0\t1\tTheory\n",
                         "p31\tx_9\np31\tx_9\nalpha97\tp31\np31\talpha97\nghost\tp31\nx_9\tghost\n"));
    write_seed(dir, "planetoid", 1,
               two_parts("# papers\n1 0.5 -1e-3 A\n2 1 2 B\n3 nan 0 A\n", "1 2\n2 3\n3 3\n"));
  }
  {  // train.txt, then valid.txt and test.txt, split as run_triples splits
    write_seed(
        dir, "triples", 0,
        two_parts("egypt\tintergovorgs3\tusa\nusa\tembassy\tuk\r\nuk\tembassy\tusa\n\n",
                  two_parts("usa\tintergovorgs3\tegypt\n", "uk\tembassy\tegypt\nchina\tembassy\tuk\n")));
    write_seed(
        dir, "triples", 1,
        two_parts("a b\tr_inverse\tc\nc\tr\ta b\na b\tr_inverse\tc\nc\tq\tc\n", two_parts("", "c\tr\tc\n")));
  }
  fs::remove_all(tmp);
}

}  // namespace strata::fuzz
