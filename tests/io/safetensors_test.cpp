#include "strata/io/weights/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "strata/ops.h"

using namespace strata;
using namespace strata::io;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
  auto d = fs::temp_directory_path() / ("strata_safetensors_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

std::string bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

// A file with header text `json` (length prefix `declared`, if given) and `data` bytes.
std::string write_raw(const std::string& name, const std::string& json, const std::string& data,
                      int64_t declared = -1) {
  std::string path = temp_path(name);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  uint64_t n = declared >= 0 ? uint64_t(declared) : json.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(json.data(), std::streamsize(json.size()));
  f.write(data.data(), std::streamsize(data.size()));
  return path;
}

std::string error_of(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an IoError for " << path;
  return "";
}

}  // namespace

TEST(Safetensors, WriteThenReadRoundTripsDtypesOrderAndMetadata) {
  manual_seed(3);
  nn::StateDict d;
  d.insert("z.first", ops::randn({3, 5}));
  d.insert("a.bf16", ops::randn({7}).to(DType::bf16));  // odd byte count: later tensors unaligned
  d.insert("f16", ops::randn({2, 3}).to(DType::f16));
  d.insert("f64", ops::randn({4}).to(DType::f64));
  d.insert("i64", ops::arange(int64_t(9)));
  d.insert("i32", ops::arange(int64_t(5)).to(DType::i32));
  d.insert("u8", ops::arange(int64_t(3)).to(DType::u8));
  d.insert("bool", ops::from_vector(std::vector<double>{0, 1, 1}, {3}, DType::boolean));
  d.insert("scalar", ops::scalar_tensor(1.5));
  d.insert("empty", ops::zeros({0, 4}));
  d.insert("view", ops::randn({3, 4}).t());
  const std::string path = temp_path("round.safetensors");
  write_safetensors(path, d, {{"format", "pt"}, {"note", "hi"}});

  std::ifstream f(path, std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);  // data starts 8-byte aligned

  Safetensors r = read_safetensors(path);
  EXPECT_EQ(r.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"note", "hi"}}));
  ASSERT_EQ(r.tensors.keys(), d.keys());
  for (const auto& [name, t] : d) {
    const Tensor& u = r.tensors.at(name);
    EXPECT_EQ(u.dtype(), t.dtype()) << name;
    EXPECT_EQ(u.shape(), t.shape()) << name;
    EXPECT_EQ(bytes_of(u), bytes_of(t)) << name;
  }
}

TEST(Safetensors, MalformedFilesGetErrorsNamingFileTensorAndOffsets) {
  const std::string f32x2(8, '\0');
  // Just the 8-byte length 0: an empty header is not JSON.
  std::string m = error_of(write_raw("empty.st", "", ""));
  EXPECT_NE(m.find("does not parse"), std::string::npos) << m;
  {
    std::string p = temp_path("tiny.st");
    std::ofstream(p, std::ios::binary) << "abc";
    m = error_of(p);
    EXPECT_NE(m.find("shorter than the 8-byte header length"), std::string::npos) << m;
    EXPECT_NE(m.find(p), std::string::npos) << m;
  }
  std::string p = write_raw("long.st", "{}", "", 1000);
  m = error_of(p);
  EXPECT_NE(m.find("header length 1000"), std::string::npos) << m;
  EXPECT_NE(m.find(p), std::string::npos) << m;

  m = error_of(write_raw("json.st", "{\"a\": ", ""));
  EXPECT_NE(m.find("does not parse"), std::string::npos) << m;
  m = error_of(write_raw("array.st", "[1, 2]", ""));
  EXPECT_NE(m.find("not an object"), std::string::npos) << m;
  m = error_of(write_raw("nodtype.st", R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", f32x2));
  EXPECT_NE(m.find("tensor 'w'"), std::string::npos) << m;
  EXPECT_NE(m.find("'dtype'"), std::string::npos) << m;
  m = error_of(write_raw("i8.st", R"({"w": {"dtype": "I8", "shape": [2], "data_offsets": [0, 2]}})", f32x2));
  EXPECT_NE(m.find("unsupported dtype 'I8'"), std::string::npos) << m;
  m = error_of(write_raw("neg.st", R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", f32x2));
  EXPECT_NE(m.find("negative"), std::string::npos) << m;
  m = error_of(write_raw("size.st", R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", f32x2));
  EXPECT_NE(m.find("F32[3] needs 12 bytes"), std::string::npos) << m;
  m = error_of(write_raw("past.st", R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", f32x2));
  EXPECT_NE(m.find("past the end"), std::string::npos) << m;
  EXPECT_NE(m.find("tensor 'w'"), std::string::npos) << m;
  m = error_of(write_raw("back.st", R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}})", f32x2));
  EXPECT_NE(m.find("end before they begin"), std::string::npos) << m;
  m = error_of(write_raw("overlap.st",
                         R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                         R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                         f32x2));
  EXPECT_NE(m.find("overlap"), std::string::npos) << m;
  m = error_of(write_raw("meta.st", R"({"__metadata__": {"k": 1}})", ""));
  EXPECT_NE(m.find("__metadata__"), std::string::npos) << m;
  EXPECT_THROW(read_safetensors(temp_path("missing.st")), IoError);
}

TEST(Safetensors, ReadsTheHuggingFaceLayoutFixture) {
  Safetensors r = read_safetensors(std::string(STRATA_TEST_DATA_DIR) + "/goldens/weights/gpt2_tiny.safetensors");
  EXPECT_EQ(r.metadata.at("format"), "pt");
  const Tensor& mask = r.tensors.at("transformer.h.1.attn.bias");
  EXPECT_EQ(mask.dtype(), DType::boolean);
  ASSERT_EQ(mask.shape(), (Shape{1, 1, 12, 12}));
  const bool* m = mask.data<bool>();
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 12; ++j) EXPECT_EQ(m[i * 12 + j], j <= i) << i << "," << j;
  EXPECT_EQ(r.tensors.at("transformer.h.0.attn.masked_bias").dim(), 0);
  EXPECT_EQ(r.tensors.at("transformer.h.0.attn.c_attn.weight").shape(), (Shape{20, 60}));  // Conv1D [in, out]
}
