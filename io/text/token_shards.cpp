#include "strata/io/text/token_shards.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>

#include "io/mapped_copy.h"
#include "strata/core/output_path.h"
#include "strata/io/keyed_rng.h"
#include "strata/ops/factory.h"

namespace strata::io {

std::shared_ptr<TokenShard> TokenShard::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO is refused, not waited on
  STRATA_CHECK(fd >= 0, IoError, "token shard '", path, "': cannot open (", std::strerror(errno), ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw IoError(detail::concat("token shard '", path, "': cannot stat (", std::strerror(errno), ")"));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(detail::concat("token shard '", path, "': not a regular file",
                                 S_ISDIR(st.st_mode) ? " (a directory)" : ""));
  }
  size_t bytes = size_t(st.st_size);
  if (bytes < size_t(kTokenShardHeaderBytes)) {
    ::close(fd);
    throw IoError(detail::concat("token shard '", path, "': ", bytes, " bytes is shorter than the ",
                                 kTokenShardHeaderBytes, "-byte header"));
  }
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  STRATA_CHECK(map != MAP_FAILED, IoError, "token shard '", path, "': mmap failed (", std::strerror(errno),
               ")");
  std::shared_ptr<TokenShard> s(new TokenShard());
  s->path_ = path;
  s->map_ = map;
  s->map_bytes_ = bytes;
  const int32_t* header = static_cast<const int32_t*>(map);
  STRATA_CHECK(header[0] == kTokenShardMagic, IoError, "token shard '", path, "': bad magic ", header[0],
               " at offset 0 (expected ", kTokenShardMagic, ", llm.c's format)");
  STRATA_CHECK(header[1] == kTokenShardVersion, IoError, "token shard '", path, "': unsupported version ",
               header[1], " at offset 4 (expected ", kTokenShardVersion, ": uint16 tokens)");
  const int64_t n = header[2];
  STRATA_CHECK(n >= 0 && kTokenShardHeaderBytes + 2 * n == int64_t(bytes), IoError, "token shard '", path,
               "': header says ", n, " tokens (", kTokenShardHeaderBytes + 2 * n, " bytes) but the file has ",
               bytes, " bytes (truncated or corrupt)");
  s->num_tokens_ = n;
  s->tokens_ = reinterpret_cast<const uint16_t*>(static_cast<const char*>(map) + kTokenShardHeaderBytes);
  return s;
}

void TokenShard::copy_tokens(int64_t first, int64_t count, uint16_t* out) const {
  STRATA_CHECK(first >= 0 && count >= 0 && first + count <= num_tokens_, IndexError, "token shard '", path_,
               "': tokens [", first, ", ", first + count, ") are outside its ", num_tokens_);
  const int64_t ids[1] = {0};
  const int64_t fault = copy_mapped_rows(static_cast<const char*>(map_), map_bytes_,
                                         reinterpret_cast<const char*>(tokens_ + first), ids, 0, 1,
                                         count * int64_t(sizeof(uint16_t)), reinterpret_cast<char*>(out));
  STRATA_CHECK(fault < 0, IoError, "token shard '", path_, "': no data at byte offset ", fault, " of the ",
               map_bytes_,
               " it had when opened: the file shrank while mapped (rewritten or truncated during the run)");
}

TokenShard::~TokenShard() {
  if (map_) ::munmap(map_, map_bytes_);
}

void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens) {
  std::vector<char> buf(size_t(kTokenShardHeaderBytes) + 2 * tokens.size());
  int32_t header[256] = {};
  header[0] = kTokenShardMagic;
  header[1] = kTokenShardVersion;
  STRATA_CHECK(tokens.size() < size_t(INT32_MAX), IoError, "token shard '", path, "': too many tokens (",
               tokens.size(), ")");
  header[2] = int32_t(tokens.size());
  std::memcpy(buf.data(), header, sizeof(header));
  uint16_t* out = reinterpret_cast<uint16_t*>(buf.data() + kTokenShardHeaderBytes);
  for (size_t i = 0; i < tokens.size(); ++i) {
    STRATA_CHECK(tokens[i] >= 0 && tokens[i] < 65536, ValueError, "token shard '", path, "': token ",
                 tokens[i], " at position ", i, " does not fit in uint16");
    out[i] = uint16_t(tokens[i]);
  }
  write_file_atomically(path, buf.data(), buf.size(), "token shards");
}

std::vector<std::string> glob_paths(const std::string& pattern) {
  glob_t g{};
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  STRATA_CHECK(!out.empty(), IoError, "no files match '", pattern, "'");
  std::sort(out.begin(), out.end());
  return out;
}

TokenLoader::TokenLoader(std::vector<std::string> paths, TokenLoaderOptions options) : opt_(options) {
  STRATA_CHECK(!paths.empty(), ValueError, "TokenLoader: no shard paths");
  STRATA_CHECK(opt_.batch > 0 && opt_.seq_len > 0, ValueError, "TokenLoader: B=", opt_.batch,
               " T=", opt_.seq_len, " must be positive");
  STRATA_CHECK(opt_.world_size > 0 && opt_.rank >= 0 && opt_.rank < opt_.world_size, ValueError,
               "TokenLoader: rank ", opt_.rank, " of world size ", opt_.world_size);
  for (const auto& p : paths) {
    shards_.push_back(TokenShard::open(p));
    STRATA_CHECK(samples_in_shard_tokens(shards_.back()->num_tokens()) >= opt_.batch * opt_.world_size,
                 IoError, "token shard '", p, "': ", shards_.back()->num_tokens(),
                 " tokens is too few for B=", opt_.batch, " T=", opt_.seq_len, " on ", opt_.world_size,
                 " ranks");
    if (opt_.token_limit > 0) check_token_limit(*shards_.back());
  }
  reset();
}

void TokenLoader::check_token_limit(const TokenShard& shard) const {
  const int64_t n = shard.num_tokens(), chunk = int64_t(1) << 20;
  std::vector<uint16_t> t(size_t(std::min(n, chunk)));
  for (int64_t at = 0; at < n; at += chunk) {
    const int64_t count = std::min(chunk, n - at);
    shard.copy_tokens(at, count, t.data());
    for (int64_t j = 0; j < count; ++j) {
      if (int64_t(t[size_t(j)]) < opt_.token_limit) continue;
      const int64_t i = at + j;
      throw IoError(detail::concat("token shard '", shard.path(), "': token ", t[size_t(j)], " at position ",
                                   i, " (byte offset ", kTokenShardHeaderBytes + 2 * i, ") is not below ",
                                   opt_.token_limit,
                                   ", the model's vocabulary (or its first special token)"));
    }
  }
}

int64_t TokenLoader::samples_in_shard_tokens(int64_t n) const { return n > 0 ? (n - 1) / opt_.seq_len : 0; }

int64_t TokenLoader::num_tokens() const {
  int64_t n = 0;
  for (const auto& s : shards_) n += s->num_tokens();
  return n;
}

void TokenLoader::set_cursor(const DataCursor& c) {
  STRATA_CHECK(c.epoch >= 0 && c.shard >= 0 && c.shard < int64_t(shards_.size()) && c.sample >= 0, ValueError,
               "TokenLoader: invalid cursor (epoch ", c.epoch, ", shard ", c.shard, ", sample ", c.sample,
               ")");
  const DataCursor before = cursor_;
  cursor_ = c;
  order_epoch_ = order_shard_ = -1;
  start_epoch_shard();
  // A cursor the loader made never points past its shard's samples: one that does comes from
  // other data, or from a corrupt checkpoint. The loader keeps its position then.
  const int64_t samples = int64_t(sample_order_.size());
  if (c.sample <= samples) return;
  const std::string path = shards_[size_t(shard_order_[size_t(c.shard)])]->path();
  set_cursor(before);
  throw ValueError(detail::concat("TokenLoader: cursor sample ", c.sample, " is past the end of shard ",
                                  c.shard, " of epoch ", c.epoch, " ('", path, "', ", samples,
                                  " samples of T=", opt_.seq_len,
                                  "): the position does not belong to this data"));
}

// Orders depend only on (seed, epoch, shard), so a restored cursor resumes the same sequence: the
// shards' order from the epoch's stream, a shard's samples from the stream indexed by its position.
void TokenLoader::start_epoch_shard() {
  if (order_epoch_ != cursor_.epoch) {
    shard_order_.resize(shards_.size());
    std::iota(shard_order_.begin(), shard_order_.end(), 0);
    if (opt_.shuffle) shuffle_keyed(&shard_order_, opt_.seed, uint64_t(cursor_.epoch));
    order_epoch_ = cursor_.epoch;
    order_shard_ = -1;
  }
  if (order_shard_ != cursor_.shard) {
    const int64_t n =
        samples_in_shard_tokens(shards_[size_t(shard_order_[size_t(cursor_.shard)])]->num_tokens());
    sample_order_.resize(size_t(n));
    std::iota(sample_order_.begin(), sample_order_.end(), 0);
    if (opt_.shuffle)
      shuffle_keyed(&sample_order_, opt_.seed, uint64_t(cursor_.epoch), uint64_t(cursor_.shard));
    order_shard_ = cursor_.shard;
  }
}

Tensor read_token_shard(const std::string& path) {
  const std::shared_ptr<TokenShard> shard = TokenShard::open(path);
  std::vector<uint16_t> tokens(size_t(shard->num_tokens()));
  shard->copy_tokens(0, shard->num_tokens(), tokens.data());
  return ops::from_vector(std::vector<int64_t>(tokens.begin(), tokens.end()), {shard->num_tokens()});
}

void TokenLoader::next(Tensor* inputs, Tensor* targets) {
  const int64_t B = opt_.batch, T = opt_.seq_len, W = opt_.world_size;
  // Move on when this shard has no full round of W batches left.
  if (cursor_.sample + W * B > int64_t(sample_order_.size())) {
    cursor_.sample = 0;
    if (++cursor_.shard == int64_t(shards_.size())) {
      cursor_.shard = 0;
      ++cursor_.epoch;
    }
    start_epoch_shard();
  }
  const TokenShard& shard = *shards_[size_t(shard_order_[size_t(cursor_.shard)])];
  std::vector<int64_t> x(size_t(B * T)), y(size_t(B * T));
  std::vector<uint16_t> w(size_t(T + 1));
  const int64_t first = cursor_.sample + int64_t(opt_.rank) * B;
  for (int64_t b = 0; b < B; ++b) {
    shard.copy_tokens(sample_order_[size_t(first + b)] * T, T + 1, w.data());
    for (int64_t t = 0; t < T; ++t) {
      x[size_t(b * T + t)] = w[t];
      y[size_t(b * T + t)] = w[t + 1];
    }
  }
  cursor_.sample += W * B;
  *inputs = ops::from_vector(x, {B, T});
  *targets = ops::from_vector(y, {B, T});
}

}  // namespace strata::io
