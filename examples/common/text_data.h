// The byte-level trainers' text: a --text file or the built-in corpus, cut into llm.c token shards.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "strata/io/data_identity.h"

namespace strata::dist {
class ProcessGroup;
}  // namespace strata::dist

namespace strata::io {
class Tokenizer;
}  // namespace strata::io

namespace strata::examples {

class TextDataConfig;

// The contents of `path`, or the built-in corpus (default_corpus.h) when `path` is empty.
// Throws IoError naming the path when it is missing, a directory or unreadable.
std::string read_training_text(const std::string& path);

// --text and --train-data are alternatives (the text was silently ignored): ValueError when both
// are given.
void check_text_data(const TextDataConfig& data);

// Writes shards of `text` tokenized by `tokenizer` (null: byte by byte) into <out_dir>/data and
// returns their globs (train, held out). Every 10th chunk of 8192 tokens is held out, so the
// held-out text comes from the same documents as the training text without overlapping it; a text
// shorter than ten chunks holds out its last 10%. Under mpirun (`group`), rank 0 writes them and
// every rank returns once they are written.
std::pair<std::string, std::string> shards_from_text(const std::string& text, const std::string& out_dir,
                                                     const io::Tokenizer* tokenizer = nullptr,
                                                     dist::ProcessGroup* group = nullptr);

// What a checkpoint records of the training shards `paths` (matched by `glob`, `tokens` tokens in
// all): "N token shard(s) of T tokens (glob)" and io::files_identity's digest of the files.
io::DataIdentity token_shards_identity(const std::string& glob, const std::vector<std::string>& paths,
                                       int64_t tokens);

}  // namespace strata::examples
