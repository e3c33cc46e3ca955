// The byte-level trainers' text: a --text file or the built-in corpus, cut into llm.c token shards.
#pragma once

#include <string>
#include <utility>

namespace strata::examples {

// The contents of `path`, or the built-in corpus (default_corpus.h) when `path` is empty.
// Throws IoError "<program>: cannot open --text '<path>'".
std::string read_training_text(const std::string& path, const std::string& program);

// Writes byte-level shards of `text` into <out_dir>/data and returns their globs (train, held
// out). Every 10th 8 KiB chunk is held out, so the held-out text comes from the same documents as
// the training text without overlapping it; a text shorter than ten chunks holds out its last 10%.
std::pair<std::string, std::string> shards_from_text(const std::string& text, const std::string& out_dir);

}  // namespace strata::examples
