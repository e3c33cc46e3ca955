// strata_text_to_shards: turns a text file into llm.c-format token shards (train/val) with
// the byte-level tokenizer, GPT-2 BPE or BERT's WordPiece.
//   strata_text_to_shards --input corpus.txt --out-dir data/ [--tokenizer gpt2 --vocab v.json
//                         --merges m.txt] [--val-fraction 0.1] [--shard-tokens 100000000] [--overwrite]
//   strata_text_to_shards ... --tokenizer bert --vocab vocab.txt|model_dir [--lowercase|--no-lowercase]
// With bert, a model folder as --vocab reads its vocab.txt and tokenizer_config.json's do_lower_case
// and strip_accents; a vocab.txt alone is lower-cased unless --no-lowercase says otherwise.
// A folder that already holds shards is refused (a later glob would read old and new together);
// --overwrite replaces the whole set: the new shards are written under hidden names first, and the
// old ones are removed only once every new one is complete.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "strata/core/error.h"
#include "strata/io/text/token_shards.h"
#include "strata/io/text/tokenizer.h"
#include "strata/io/text/wordpiece.h"
#include "tools/cli_parse.h"

namespace {

namespace fs = std::filesystem;

// train_NNNNNN.bin and val_NNNNNN.bin: the names this tool writes and train_gpt's globs read.
bool is_shard_name(const std::string& name) {
  for (const std::string prefix : {"train_", "val_"}) {
    if (name.size() != prefix.size() + 10 || name.rfind(prefix, 0) != 0 || !name.ends_with(".bin")) continue;
    const std::string digits = name.substr(prefix.size(), 6);
    if (std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
      return true;
  }
  return false;
}

std::vector<fs::path> shards_in(const std::string& dir) {
  std::vector<fs::path> found;
  if (!fs::is_directory(dir)) return found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (is_shard_name(entry.path().filename().string())) found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Turn a text file into llm.c-format token shards"};
  std::string input, out_dir, tokenizer = "byte", vocab, merges;
  double val_fraction = 0.1;
  int64_t shard_tokens = 100'000'000;
  app.add_option("--input", input, "text file")->required();
  app.add_option("--out-dir", out_dir, "output directory")->required();
  app.add_option("--tokenizer", tokenizer, "byte, gpt2 or bert")
      ->check(CLI::IsMember({"byte", "gpt2", "bert"}));
  app.add_option(
      "--vocab", vocab,
      "GPT-2 vocab.json (--tokenizer gpt2); BERT vocab.txt or Hugging Face model folder (--tokenizer bert)");
  bool lowercase = true;
  CLI::Option* lowercase_flag = app.add_flag(
      "--lowercase,!--no-lowercase", lowercase,
      "--tokenizer bert: lower-case and strip accents (default, or the folder's tokenizer_config.json)");
  app.add_option("--merges", merges, "GPT-2 merges.txt (with --tokenizer gpt2)");
  app.add_option("--val-fraction", val_fraction, "fraction of tokens (at the end) for validation")
      ->check(CLI::Range(0.0, 0.9));
  app.add_option("--shard-tokens", shard_tokens, "tokens per shard")->check(CLI::PositiveNumber);
  bool overwrite = false;
  app.add_flag("--overwrite", overwrite, "replace the shards --out-dir holds (the whole set)");
  STRATA_TOOL_PARSE(app, argc, argv);
  try {
    const std::vector<fs::path> old_shards = shards_in(out_dir);
    if (!old_shards.empty() && !overwrite)
      throw strata::IoError(
          "--out-dir '" + out_dir + "' already holds " + std::to_string(old_shards.size()) +
          " token shards (" + old_shards.front().filename().string() +
          (old_shards.size() > 1 ? ", ..." : "") +
          "): a glob would read them beside the new ones; --overwrite replaces the whole set");
    if (!std::filesystem::is_regular_file(input))
      throw strata::IoError("--input '" + input + "' " +
                            (std::filesystem::is_directory(input) ? "is a directory" : "does not exist") +
                            ", not a text file");
    std::ifstream f(input, std::ios::binary);
    if (!f) throw strata::IoError("cannot open input '" + input + "'");
    std::string text((std::istreambuf_iterator<char>(f)), {});
    std::unique_ptr<strata::io::Tokenizer> tok;
    if (tokenizer == "gpt2") {
      if (vocab.empty() || merges.empty()) throw strata::ValueError("--tokenizer gpt2 needs --vocab and --merges");
      tok = strata::io::Gpt2Tokenizer::from_files(vocab, merges);
    } else if (tokenizer == "bert") {
      if (vocab.empty())
        throw strata::ValueError("--tokenizer bert needs --vocab (vocab.txt or a model folder)");
      const bool folder = std::filesystem::is_directory(vocab);
      strata::io::WordPieceOptions options =
          folder ? strata::io::read_hf_wordpiece_options(vocab) : strata::io::WordPieceOptions{};
      if (lowercase_flag->count() > 0)
        options.basic = strata::io::BasicTokenizerOptions{lowercase, std::nullopt};
      tok = strata::io::WordPieceTokenizer::from_vocab_file(folder ? vocab + "/vocab.txt" : vocab, options);
    } else {
      tok = std::make_unique<strata::io::ByteTokenizer>();
    }
    std::vector<int32_t> ids = tok->encode(text);
    std::filesystem::create_directories(out_dir);
    const size_t n_val = size_t(double(ids.size()) * val_fraction);
    const size_t n_train = ids.size() - n_val;
    // Each shard is written under a hidden name (which no glob of train_*.bin reads), and renamed
    // once all of them are complete and the old set is gone.
    std::vector<std::pair<std::string, std::string>> staged;  // hidden name, final name
    auto write = [&](const char* split, size_t begin, size_t end) {
      int shard = 0;
      for (size_t at = begin; at < end || (at == begin && begin == end); at += size_t(shard_tokens)) {
        size_t stop = std::min(end, at + size_t(shard_tokens));
        char name[64];
        std::snprintf(name, sizeof(name), "%s_%06d.bin", split, shard++);
        const std::string hidden = out_dir + "/.new_" + name, final_name = out_dir + "/" + name;
        strata::io::write_token_shard(hidden,
                                      std::vector<int32_t>(ids.begin() + long(at), ids.begin() + long(stop)));
        staged.emplace_back(hidden, final_name);
        std::printf("wrote %s: %zu tokens\n", final_name.c_str(), stop - at);
        if (begin == end) break;
      }
    };
    try {
      write("train", 0, n_train);
      if (n_val > 0) write("val", n_train, ids.size());
    } catch (...) {
      for (const auto& [hidden, final_name] : staged) fs::remove(hidden);
      throw;
    }
    for (const fs::path& old_shard : old_shards) fs::remove(old_shard);
    for (const auto& [hidden, final_name] : staged) fs::rename(hidden, final_name);
    if (!old_shards.empty()) std::printf("replaced the %zu shards that were there\n", old_shards.size());
    std::printf("%s: %zu bytes -> %zu tokens (vocab %d)\n", input.c_str(), text.size(), ids.size(),
                tok->vocab_size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_text_to_shards: %s\n", e.what());
    return 1;
  }
  return 0;
}
