// Token shards in llm.c's .bin format (256 x int32 header, then uint16 tokens) and the
// TokenLoader that cuts them into [B, T] batches: sequential or shuffled, per-rank sharded,
// with a cursor a checkpoint can save and restore.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/core/tensor.h"
#include "strata/io/data_cursor.h"

namespace strata::io {

inline constexpr int32_t kTokenShardMagic = 20240520;
inline constexpr int32_t kTokenShardVersion = 1;  // uint16 tokens
inline constexpr int64_t kTokenShardHeaderBytes = 256 * 4;

// A read-only memory-mapped shard; throws IoError naming the file on any malformed header.
class TokenShard {
 public:
  static std::shared_ptr<TokenShard> open(const std::string& path);
  ~TokenShard();
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;
  const std::string& path() const { return path_; }
  int64_t num_tokens() const { return num_tokens_; }
  // The mapping itself: a read faults (SIGBUS) where the file shrank after it was opened;
  // copy_tokens reads through a guard instead.
  const uint16_t* tokens() const { return tokens_; }
  // Copies tokens [first, first + count) to `out`. IoError naming the file and the byte offset
  // when the file no longer holds them (it shrank while mapped: rewritten or truncated under the run).
  void copy_tokens(int64_t first, int64_t count, uint16_t* out) const;

 private:
  TokenShard() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const uint16_t* tokens_ = nullptr;
  int64_t num_tokens_ = 0;
};

// A whole shard's tokens as an i64 tensor [N] on the CPU (torch.from_numpy(np.fromfile(...)) for a
// shard). IoError naming the file for a malformed header or a file shorter than it says.
Tensor read_token_shard(const std::string& path);

// Writes a shard atomically (temporary file, fsync, rename). Tokens must be < 65536.
void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens);

// Expands a glob pattern ("data/train_*.bin") into sorted paths; throws IoError if none.
std::vector<std::string> glob_paths(const std::string& pattern);

struct TokenLoaderOptions {
  int64_t batch = 4;     // B
  int64_t seq_len = 64;  // T
  int rank = 0;          // this process
  int world_size = 1;    // processes sharing the data
  bool shuffle = false;  // permute shards and samples each epoch
  uint64_t seed = 0;     // shuffle seed
  // Every token must be below this (the model's vocabulary; 0: unchecked). Checked when the
  // shards are opened, so data a model cannot take fails at once, naming file and offset.
  int64_t token_limit = 0;
};

// Each shard is cut into windows of T+1 tokens starting every T tokens; a batch is B windows.
// Rank r of W takes batches r, r+W, r+2W, ... of the (possibly shuffled) window order, so
// sequential mode reads B*T+1 contiguous tokens per batch as llm.c does.
class TokenLoader {
 public:
  TokenLoader(std::vector<std::string> paths, TokenLoaderOptions options);
  // inputs and targets (inputs shifted by one), both i64 [B, T] on the CPU.
  void next(Tensor* inputs, Tensor* targets);
  DataCursor cursor() const { return cursor_; }
  void set_cursor(const DataCursor& c);
  void reset() { set_cursor(DataCursor{}); }
  int64_t num_tokens() const;
  const TokenLoaderOptions& options() const { return opt_; }

 private:
  void start_epoch_shard();
  int64_t samples_in_shard_tokens(int64_t num_tokens) const;
  void check_token_limit(const TokenShard& shard) const;
  std::vector<std::shared_ptr<TokenShard>> shards_;
  TokenLoaderOptions opt_;
  DataCursor cursor_;
  std::vector<int64_t> shard_order_;   // for cursor_.epoch
  std::vector<int64_t> sample_order_;  // for the current shard
  int64_t order_epoch_ = -1, order_shard_ = -1;
};

}  // namespace strata::io
