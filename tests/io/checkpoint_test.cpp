#include "strata/io/checkpoint/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "strata/core/crc32c.h"
#include "strata/ops.h"
#include "strata/optim.h"
#include "support/error_of.h"
#include "support/loader_files.h"

using namespace strata;
using namespace strata::io;
namespace fs = std::filesystem;

namespace {

using strata::testing::TempDir;

std::string read_bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

void expect_same_dict(const nn::StateDict& a, const nn::StateDict& b) {
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& [name, t] : a) {
    const Tensor& u = b.at(name);
    EXPECT_EQ(t.dtype(), u.dtype()) << name;
    EXPECT_EQ(t.shape(), u.shape()) << name;
    EXPECT_TRUE(u.device().is_cpu()) << name;
    EXPECT_TRUE(u.is_contiguous()) << name;
    EXPECT_EQ(read_bytes(t), read_bytes(u)) << name;
  }
}

// Model tensors of every dtype, odd shapes, a scalar, an empty tensor and a transposed view.
CheckpointState sample_state() {
  manual_seed(7);
  CheckpointState s;
  s.config = "n_layer: 2\nn_embd: 48\n# any text, even \xff bytes";
  s.step = 123456789012;
  s.rng = {0xDEADBEEFCAFEull, 1234567890123ull};
  s.data = {3, 5, 77};
  s.data_identity = {"tiny corpus: 2 shards", "crc32c 0badf00d of 4096 bytes"};
  s.metadata = {{"git", "abc123"}, {"loss", "3.25"}, {"binary", std::string("\0\x01\xff", 3)}};
  s.model.insert("transformer.wte.weight", ops::randn({7, 5}));
  s.model.insert("h.0.bf16", ops::randn({3, 3, 3}).to(DType::bf16));
  s.model.insert("h.0.f16", ops::randn({2, 9}).to(DType::f16));
  s.model.insert("f64", ops::randn({4}).to(DType::f64));
  s.model.insert("ids", ops::arange(int64_t(11)));
  s.model.insert("i32", ops::arange(int64_t(6)).to(DType::i32));
  s.model.insert("bytes", ops::arange(int64_t(5000)).to(DType::u8));  // > 4096: spans blocks
  s.model.insert("mask", ops::from_vector(std::vector<double>{1, 0, 1}, {3}, DType::boolean));
  s.model.insert("scalar", ops::scalar_tensor(2.5));
  s.model.insert("empty", ops::zeros({0, 3}));
  s.model.insert("transposed", ops::randn({4, 6}).t());
  s.optimizer.insert("state.0.step", ops::scalar_tensor(3.0, DType::f64));
  s.optimizer.insert("state.0.exp_avg", ops::randn({7, 5}));
  s.optimizer.insert("state.0.exp_avg_sq", ops::rand({7, 5}));
  s.optimizer.insert("param_groups.0.lr", ops::scalar_tensor(6e-4, DType::f64));
  return s;
}

void expect_same_state(const CheckpointState& a, const CheckpointState& b) {
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.rng.seed, b.rng.seed);
  EXPECT_EQ(a.rng.offset, b.rng.offset);
  EXPECT_EQ(a.data.epoch, b.data.epoch);
  EXPECT_EQ(a.data.shard, b.data.shard);
  EXPECT_EQ(a.data.sample, b.data.sample);
  EXPECT_EQ(a.data_identity.description, b.data_identity.description);
  EXPECT_EQ(a.data_identity.digest, b.data_identity.digest);
  EXPECT_EQ(a.metadata, b.metadata);
  expect_same_dict(a.model, b.model);
  expect_same_dict(a.optimizer, b.optimizer);
}

std::string message_of(const std::function<void()>& fn) { return strata::testing::error_of<IoError>(fn); }

using strata::testing::read_file;
using strata::testing::write_file;

// Recomputes the CRC-32C index.pb ends with (its last 5 bytes: field 11's tag and the value), as
// the writer would after an edit.
std::string resealed_index(std::string bytes) {
  const size_t n = bytes.size() - 5;
  const uint32_t crc = crc32c(bytes.data(), n);
  for (int i = 0; i < 4; ++i) bytes[n + 1 + size_t(i)] = char((crc >> (8 * i)) & 0xFF);
  return bytes;
}

const CheckpointTensorInfo& info_of(const CheckpointIndexInfo& index, const std::string& name) {
  for (const CheckpointTensorInfo& t : index.tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

}  // namespace

TEST(Checkpoint, RoundTripIsBitExactForEveryFieldAndDtype) {
  TempDir tmp;
  CheckpointState s = sample_state();
  save_checkpoint(tmp / "ckpt", s);
  EXPECT_TRUE(fs::is_regular_file(tmp / "ckpt/index.pb"));
  EXPECT_TRUE(fs::is_regular_file(tmp / "ckpt/tensors.bin"));
  expect_same_state(s, load_checkpoint(tmp / "ckpt"));

  // The index: model tensors first, then optimizer, each 4096-byte aligned, file size recorded.
  CheckpointIndexInfo index = read_checkpoint_index(tmp / "ckpt/");
  EXPECT_EQ(index.format_version, kCheckpointFormatVersion);
  EXPECT_EQ(index.step, s.step);
  ASSERT_EQ(index.tensors.size(), s.model.size() + s.optimizer.size());
  EXPECT_EQ(index.tensors.front().group, "model");
  EXPECT_EQ(index.tensors.back().group, "optimizer");
  for (const CheckpointTensorInfo& t : index.tensors) EXPECT_EQ(t.offset % kCheckpointAlignment, 0u) << t.name;
  EXPECT_EQ(info_of(index, "h.0.bf16").dtype, DType::bf16);
  EXPECT_EQ(info_of(index, "transposed").shape, (Shape{6, 4}));
  EXPECT_EQ(index.tensors_file_bytes, fs::file_size(tmp / "ckpt/tensors.bin"));
}

TEST(Checkpoint, OptimizerStateRoundTripsIntoAFreshOptimizer) {
  TempDir tmp;
  manual_seed(1);
  Tensor w = ops::randn({4, 3}).set_requires_grad(true);
  optim::AdamW opt({w}, optim::AdamWOptions(1e-2));
  w.set_grad(ops::randn({4, 3}));
  opt.step();
  opt.step();
  CheckpointState s;
  s.model.insert("w", w.detach());
  s.optimizer = opt.state_dict();
  save_checkpoint(tmp / "ckpt", s);

  CheckpointState r = load_checkpoint(tmp / "ckpt");
  Tensor w2 = ops::zeros({4, 3}).set_requires_grad(true);
  {
    NoGradGuard g;
    w2.copy_(r.model.at("w"));
  }
  optim::AdamW opt2({w2}, optim::AdamWOptions(1e-2));
  opt2.load_state_dict(r.optimizer);
  expect_same_dict(opt.state_dict(), opt2.state_dict());
  // One more identical step on both gives identical parameters.
  Tensor g = ops::randn({4, 3});
  w.set_grad(g);
  w2.set_grad(g.clone());
  opt.step();
  opt2.step();
  EXPECT_EQ(read_bytes(w), read_bytes(w2));
}

TEST(Checkpoint, TiedTensorsAreStoredOnceAndLoadAsOneTensor) {
  TempDir tmp;
  Tensor wte = ops::randn({50, 16});
  CheckpointState s;
  s.model.insert("transformer.wte.weight", wte);
  s.model.insert("transformer.h.0.w", ops::randn({16}));
  s.model.insert("lm_head.weight", wte.detach());          // the same view: stored once
  s.model.insert("first_rows", wte.narrow(0, 0, 2));       // another view of it: its own bytes
  s.optimizer.insert("state.0.exp_avg", ops::zeros({50, 16}));
  save_checkpoint(tmp / "nested/dirs/ckpt", s);  // parents are created
  CheckpointIndexInfo index = read_checkpoint_index(tmp / "nested/dirs/ckpt");
  EXPECT_EQ(info_of(index, "lm_head.weight").offset, info_of(index, "transformer.wte.weight").offset);
  EXPECT_NE(info_of(index, "first_rows").offset, info_of(index, "transformer.wte.weight").offset);
  EXPECT_LT(index.tensors_file_bytes, 5 * 4096u);
  CheckpointState r = load_checkpoint(tmp / "nested/dirs/ckpt");
  expect_same_state(s, r);
  EXPECT_EQ(r.model.at("lm_head.weight").impl(), r.model.at("transformer.wte.weight").impl());
  EXPECT_NE(r.model.at("first_rows").impl(), r.model.at("transformer.wte.weight").impl());
}

TEST(Checkpoint, OverwriteSwapsInTheNewCheckpointAndLeavesNoTemporaries) {
  TempDir tmp;
  CheckpointState a = sample_state();
  save_checkpoint(tmp / "ckpt", a);
  CheckpointState b;
  b.step = 2;
  b.metadata = {{"which", "b"}};
  b.model.insert("only", ops::ones({2, 2}));
  save_checkpoint(tmp / "ckpt", b);
  expect_same_state(b, load_checkpoint(tmp / "ckpt"));
  save_checkpoint(tmp / "ckpt", a);
  expect_same_state(a, load_checkpoint(tmp / "ckpt"));
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(tmp.path)) entries.push_back(e.path().filename().string());
  EXPECT_EQ(entries, std::vector<std::string>{"ckpt"});
}

// Directories left by killed writers (`ckpt.tmp.<pid>.<tid>`, `ckpt.old.<pid>.<tid>`) go with the
// next successful save; a running writer's are left alone.
TEST(Checkpoint, ASuccessfulSaveRemovesWhatKilledWritersLeft) {
  TempDir tmp;
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);  // reaped: the pid no longer runs
  const std::string gone_tmp = "ckpt.tmp." + std::to_string(dead) + ".7";
  const std::string gone_old = "ckpt.old." + std::to_string(dead) + ".7";
  const std::string live_tmp = "ckpt.tmp." + std::to_string(::getpid()) + ".999999";
  for (const std::string& d : {gone_tmp, gone_old, live_tmp})
    fs::create_directories(fs::path(tmp / d) / "junk");
  save_checkpoint(tmp / "ckpt", sample_state());
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(tmp.path)) entries.push_back(e.path().filename().string());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"ckpt", live_tmp}));
}

TEST(Checkpoint, FailedSaveKeepsTheOldCheckpointAndCleansUp) {
  TempDir tmp;
  CheckpointState a = sample_state();
  save_checkpoint(tmp / "ckpt", a);
  CheckpointState bad = sample_state();
  bad.step = 99;
  bad.optimizer.insert("meta", Tensor::empty({3}, DType::f32, kMeta));  // has no bytes to save
  EXPECT_THROW(save_checkpoint(tmp / "ckpt", bad), ValueError);
  expect_same_state(a, load_checkpoint(tmp / "ckpt"));
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path)) ++n;
  EXPECT_EQ(n, 1u);
}

TEST(Checkpoint, RefusesToReplaceSomethingThatIsNotACheckpoint) {
  TempDir tmp;
  fs::create_directories(tmp / "notes");
  write_file(tmp / "notes/readme.txt", "keep me");
  std::string m = message_of([&] { save_checkpoint(tmp / "notes", sample_state()); });
  EXPECT_NE(m.find("readme.txt"), std::string::npos) << m;
  EXPECT_EQ(read_file(tmp / "notes/readme.txt"), "keep me");
  write_file(tmp / "file", "x");
  m = message_of([&] { save_checkpoint(tmp / "file", sample_state()); });
  EXPECT_NE(m.find("not a directory"), std::string::npos) << m;
  // An empty directory is fine.
  fs::create_directories(tmp / "empty");
  save_checkpoint(tmp / "empty", sample_state());
  EXPECT_EQ(load_checkpoint(tmp / "empty").step, sample_state().step);
}

TEST(Checkpoint, CorruptByteIsAChecksumErrorNamingTheTensorAndOffset) {
  TempDir tmp;
  save_checkpoint(tmp / "ckpt", sample_state());
  const CheckpointTensorInfo t = info_of(read_checkpoint_index(tmp / "ckpt"), "h.0.bf16");
  std::string bin = read_file(tmp / "ckpt/tensors.bin");
  bin[t.offset + 17] ^= 0x10;
  write_file(tmp / "ckpt/tensors.bin", bin);
  std::string m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
  EXPECT_NE(m.find("checksum mismatch"), std::string::npos) << m;
  EXPECT_NE(m.find("'h.0.bf16'"), std::string::npos) << m;
  EXPECT_NE(m.find("offset " + std::to_string(t.offset)), std::string::npos) << m;
  EXPECT_NE(m.find(tmp / "ckpt/tensors.bin"), std::string::npos) << m;
}

TEST(Checkpoint, TruncatedTensorsFileNamesTheFileAndTheFirstTensorCutOff) {
  TempDir tmp;
  save_checkpoint(tmp / "ckpt", sample_state());
  CheckpointIndexInfo index = read_checkpoint_index(tmp / "ckpt");
  const CheckpointTensorInfo t = info_of(index, "bytes");
  fs::resize_file(tmp / "ckpt/tensors.bin", t.offset + 100);
  std::string m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
  EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  EXPECT_NE(m.find(tmp / "ckpt/tensors.bin"), std::string::npos) << m;
  EXPECT_NE(m.find("'bytes'"), std::string::npos) << m;
  EXPECT_NE(m.find("offset " + std::to_string(t.offset)), std::string::npos) << m;
  // Extra bytes are not silently accepted either.
  fs::resize_file(tmp / "ckpt/tensors.bin", index.tensors_file_bytes + 1);
  m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
  EXPECT_NE(m.find("tensors.bin"), std::string::npos) << m;
}

TEST(Checkpoint, MissingDirectoryIndexOrTensorsFileIsAnIoError) {
  TempDir tmp;
  std::string m = message_of([&] { load_checkpoint(tmp / "nope"); });
  EXPECT_NE(m.find(tmp / "nope"), std::string::npos) << m;
  save_checkpoint(tmp / "ckpt", sample_state());
  fs::remove(tmp / "ckpt/tensors.bin");
  EXPECT_EQ(read_checkpoint_index(tmp / "ckpt").step, sample_state().step);  // the index alone is enough
  m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
  EXPECT_NE(m.find("tensors.bin"), std::string::npos) << m;
  fs::remove(tmp / "ckpt/index.pb");
  m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
  EXPECT_NE(m.find(tmp / "ckpt/index.pb"), std::string::npos) << m;
  EXPECT_THROW(read_checkpoint_index(tmp / "ckpt"), IoError);
}

TEST(Checkpoint, GarbageOrEmptyIndexIsRejected) {
  TempDir tmp;
  save_checkpoint(tmp / "ckpt", sample_state());
  write_file(tmp / "ckpt/index.pb", "this is not a checkpoint index");
  std::string m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
  EXPECT_NE(m.find(tmp / "ckpt/index.pb"), std::string::npos) << m;
  EXPECT_NE(m.find("not a valid"), std::string::npos) << m;
  write_file(tmp / "ckpt/index.pb", "");
  m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
  EXPECT_NE(m.find("no format version"), std::string::npos) << m;
}

TEST(Checkpoint, InconsistentIndexEntriesAreRejectedNamingTheTensor) {
  TempDir tmp;
  save_checkpoint(tmp / "ckpt", sample_state());
  const CheckpointIndexInfo good = read_checkpoint_index(tmp / "ckpt");
  // Loads after `edit`; the error must name the file at fault.
  auto edited = [&](const std::function<void(CheckpointIndexInfo&)>& edit, const char* file = "index.pb") {
    CheckpointIndexInfo index = good;
    edit(index);
    write_checkpoint_index(tmp / "ckpt", index);
    std::string m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
    EXPECT_NE(m.find(tmp / "ckpt/" + file), std::string::npos) << m;
    return m;
  };
  auto find = [](CheckpointIndexInfo& index, const std::string& name) -> CheckpointTensorInfo& {
    for (CheckpointTensorInfo& t : index.tensors)
      if (t.name == name) return t;
    throw std::runtime_error(name);
  };
  std::string m = edited([&](CheckpointIndexInfo& i) { find(i, "ids").nbytes += 8; });
  EXPECT_NE(m.find("'ids'"), std::string::npos) << m;
  EXPECT_NE(m.find("nbytes"), std::string::npos) << m;
  m = edited([&](CheckpointIndexInfo& i) { find(i, "ids").shape = {5, 2}; });
  EXPECT_NE(m.find("'ids'"), std::string::npos) << m;
  m = edited([&](CheckpointIndexInfo& i) { find(i, "f64").offset += 8; });
  EXPECT_NE(m.find("not a multiple of 4096"), std::string::npos) << m;
  m = edited([&](CheckpointIndexInfo& i) { find(i, "f64").offset = find(i, "ids").offset; });
  EXPECT_NE(m.find("overlaps"), std::string::npos) << m;
  m = edited([&](CheckpointIndexInfo& i) { find(i, "f64").offset = (i.tensors_file_bytes / 4096 + 1) * 4096; });
  EXPECT_NE(m.find("outside"), std::string::npos) << m;
  // An offset near 2^64: named as it is, not as a wrapped-around range.
  m = edited([&](CheckpointIndexInfo& i) { find(i, "f64").offset = ~uint64_t(4095); });
  EXPECT_NE(m.find("at offset 18446744073709547520 lie outside"), std::string::npos) << m;
  m = edited([&](CheckpointIndexInfo& i) { find(i, "ids").group = "scheduler"; });
  EXPECT_NE(m.find("unknown group 'scheduler'"), std::string::npos) << m;
  m = edited([&](CheckpointIndexInfo& i) { find(i, "f64").shape = {-4}; });
  EXPECT_NE(m.find("negative"), std::string::npos) << m;
  m = edited([&](CheckpointIndexInfo& i) { i.format_version = 99; });
  EXPECT_NE(m.find("format version 99"), std::string::npos) << m;
  m = edited([&](CheckpointIndexInfo& i) { find(i, "ids").crc32c ^= 1; }, "tensors.bin");
  EXPECT_NE(m.find("checksum mismatch"), std::string::npos) << m;

  // A dtype name no Strata knows (patched in the serialized index: field 3, "bf16" -> "bq16").
  write_checkpoint_index(tmp / "ckpt", good);
  std::string bytes = read_file(tmp / "ckpt/index.pb");
  size_t at = bytes.find(std::string("\x1a\x04" "bf16", 6));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 3] = 'q';
  write_file(tmp / "ckpt/index.pb", resealed_index(bytes));
  m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
  EXPECT_NE(m.find("unknown dtype 'bq16'"), std::string::npos) << m;
  EXPECT_NE(m.find("'h.0.bf16'"), std::string::npos) << m;

  // Restoring the good index makes the checkpoint load again.
  write_checkpoint_index(tmp / "ckpt", good);
  expect_same_state(sample_state(), load_checkpoint(tmp / "ckpt"));
}

// index.pb carries a CRC-32C of itself: no single flipped byte loads (a flip in the step, RNG
// state or data position would resume training at the wrong place).
TEST(Checkpoint, EveryFlippedByteOfTheIndexIsRefused) {
  TempDir tmp;
  save_checkpoint(tmp / "ckpt", sample_state());
  const std::string good = read_file(tmp / "ckpt/index.pb");
  size_t refused = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (unsigned char flip : {0x01, 0xFF}) {
      std::string bad = good;
      bad[i] = char(uint8_t(bad[i]) ^ flip);
      write_file(tmp / "ckpt/index.pb", bad);
      try {
        load_checkpoint(tmp / "ckpt");
        ADD_FAILURE() << "byte " << i << " of " << good.size() << " xor " << int(flip) << " was accepted";
      } catch (const IoError&) {
        ++refused;
      }
    }
  }
  EXPECT_EQ(refused, 2 * good.size());
  write_file(tmp / "ckpt/index.pb", good);
  expect_same_state(sample_state(), load_checkpoint(tmp / "ckpt"));
}

// A version-1 index (written before the checksum) still loads; a version-3 one without its
// checksum does not.
TEST(Checkpoint, AVersion1IndexWithoutAChecksumStillLoads) {
  TempDir tmp;
  save_checkpoint(tmp / "ckpt", sample_state());
  const std::string v3 = read_file(tmp / "ckpt/index.pb");
  ASSERT_EQ(v3.substr(0, 2), std::string("\x08\x03", 2)) << "field 1, format_version 3, comes first";
  std::string stripped = v3.substr(0, v3.size() - 5);
  write_file(tmp / "ckpt/index.pb", stripped);
  const std::string m = message_of([&] { load_checkpoint(tmp / "ckpt"); });
  EXPECT_NE(m.find("no checksum"), std::string::npos) << m;
  stripped[1] = 1;
  write_file(tmp / "ckpt/index.pb", stripped);
  expect_same_state(sample_state(), load_checkpoint(tmp / "ckpt"));
}

// The data identity round-trips, and a version-2 index (written before it was recorded: no field
// 12) loads with it unrecorded, so that a trainer can tell an old checkpoint from one of other data.
TEST(Checkpoint, RecordsItsDataIdentityAndAVersion2IndexLoadsWithoutOne) {
  TempDir tmp;
  save_checkpoint(tmp / "ckpt", sample_state());
  const CheckpointIndexInfo v3 = read_checkpoint_index(tmp / "ckpt");
  EXPECT_EQ(v3.data_identity.description, "tiny corpus: 2 shards");
  EXPECT_EQ(v3.data_identity.digest, "crc32c 0badf00d of 4096 bytes");
  EXPECT_TRUE(v3.data_identity.recorded());

  CheckpointIndexInfo v2 = v3;
  v2.format_version = 2;
  v2.data_identity = {};
  write_checkpoint_index(tmp / "ckpt", v2);
  EXPECT_EQ(read_file(tmp / "ckpt/index.pb").find("tiny corpus"), std::string::npos);
  const CheckpointState loaded = load_checkpoint(tmp / "ckpt");
  EXPECT_FALSE(loaded.data_identity.recorded());
  EXPECT_TRUE(loaded.data_identity.description.empty());
  CheckpointState expected = sample_state();
  expected.data_identity = {};
  expect_same_state(expected, loaded);
}
