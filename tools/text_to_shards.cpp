// strata_text_to_shards: turns a text file into llm.c-format token shards (train/val) with
// the byte-level tokenizer or GPT-2 BPE.
//   strata_text_to_shards --input corpus.txt --out-dir data/ [--tokenizer gpt2 --vocab v.json
//                         --merges m.txt] [--val-fraction 0.1] [--shard-tokens 100000000]
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "strata/core/error.h"
#include "strata/io/token_shards.h"
#include "strata/io/tokenizer.h"

int main(int argc, char** argv) {
  CLI::App app{"Turn a text file into llm.c-format token shards"};
  std::string input, out_dir, tokenizer = "byte", vocab, merges;
  double val_fraction = 0.1;
  int64_t shard_tokens = 100'000'000;
  app.add_option("--input", input, "text file")->required();
  app.add_option("--out-dir", out_dir, "output directory")->required();
  app.add_option("--tokenizer", tokenizer, "byte or gpt2")->check(CLI::IsMember({"byte", "gpt2"}));
  app.add_option("--vocab", vocab, "GPT-2 vocab.json (with --tokenizer gpt2)");
  app.add_option("--merges", merges, "GPT-2 merges.txt (with --tokenizer gpt2)");
  app.add_option("--val-fraction", val_fraction, "fraction of tokens (at the end) for validation")
      ->check(CLI::Range(0.0, 0.9));
  app.add_option("--shard-tokens", shard_tokens, "tokens per shard")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
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
    } else {
      tok = std::make_unique<strata::io::ByteTokenizer>();
    }
    std::vector<int32_t> ids = tok->encode(text);
    std::filesystem::create_directories(out_dir);
    const size_t n_val = size_t(double(ids.size()) * val_fraction);
    const size_t n_train = ids.size() - n_val;
    auto write = [&](const char* split, size_t begin, size_t end) {
      int shard = 0;
      for (size_t at = begin; at < end || (at == begin && begin == end); at += size_t(shard_tokens)) {
        size_t stop = std::min(end, at + size_t(shard_tokens));
        char name[64];
        std::snprintf(name, sizeof(name), "/%s_%06d.bin", split, shard++);
        strata::io::write_token_shard(out_dir + name,
                                      std::vector<int32_t>(ids.begin() + long(at), ids.begin() + long(stop)));
        std::printf("wrote %s%s: %zu tokens\n", out_dir.c_str(), name, stop - at);
        if (begin == end) break;
      }
    };
    write("train", 0, n_train);
    if (n_val > 0) write("val", n_train, ids.size());
    std::printf("%s: %zu bytes -> %zu tokens (vocab %d)\n", input.c_str(), text.size(), ids.size(), tok->vocab_size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_text_to_shards: %s\n", e.what());
    return 1;
  }
  return 0;
}
