#include "examples/common/text_data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "examples/common/default_corpus.h"
#include "examples/common/trainer_common.pb.h"
#include "strata/core/error.h"
#include "strata/dist/process_group.h"
#include "strata/io/text/token_shards.h"
#include "strata/io/text/tokenizer.h"

namespace strata::examples {

std::string read_training_text(const std::string& path) {
  if (path.empty()) return read_default_corpus();
  STRATA_CHECK(std::filesystem::is_regular_file(path), IoError, "--text '", path, "' ",
               std::filesystem::is_directory(path) ? "is a directory" : "does not exist",
               ", not a text file");
  std::ifstream in(path, std::ios::binary);
  STRATA_CHECK(in.good(), IoError, "cannot open --text '", path, "'");
  std::string text(std::istreambuf_iterator<char>(in), {});
  STRATA_CHECK(!text.empty(), IoError, "--text '", path, "' is empty");  // not its derived shards
  return text;
}

void check_text_data(const TextDataConfig& data) {
  STRATA_CHECK(data.text().empty() || data.train_data().empty(), ValueError, "--text '", data.text(),
               "' and --train-data '", data.train_data(), "' are alternatives: give one");
}

std::pair<std::string, std::string> shards_from_text(const std::string& text, const std::string& out_dir,
                                                     const io::Tokenizer* tokenizer,
                                                     dist::ProcessGroup* group) {
  const std::string dir = out_dir + "/data";
  if (group && group->rank() != 0) {
    group->barrier_sync();  // rank 0 has written them
    return {dir + "/train_*.bin", dir + "/val_*.bin"};
  }
  const io::ByteTokenizer bytes;
  const io::Tokenizer& tok = tokenizer ? *tokenizer : bytes;
  std::vector<int32_t> ids = tok.encode(text), train_ids, val_ids;
  constexpr size_t kChunk = 8192;
  for (size_t at = 0, k = 0; at < ids.size(); at += kChunk, ++k) {
    auto& dst = (k % 10 == 9) ? val_ids : train_ids;
    dst.insert(dst.end(), ids.begin() + long(at), ids.begin() + long(std::min(ids.size(), at + kChunk)));
  }
  if (val_ids.empty()) {  // short texts: hold out the last 10%
    const size_t split = ids.size() - ids.size() / 10;
    val_ids.assign(ids.begin() + long(split), ids.end());
    train_ids.resize(split);
  }
  std::filesystem::create_directories(dir);
  io::write_token_shard(dir + "/train_000000.bin", train_ids);
  io::write_token_shard(dir + "/val_000000.bin", val_ids);
  if (group) group->barrier_sync();
  return {dir + "/train_*.bin", dir + "/val_*.bin"};
}

io::DataIdentity token_shards_identity(const std::string& glob, const std::vector<std::string>& paths,
                                       int64_t tokens) {
  return io::files_identity(
      detail::concat(paths.size(), " token shard(s) of ", tokens, " tokens (", glob, ")"), paths);
}

}  // namespace strata::examples
