// BertTrainOptions: train_bert's settings (defaults < --config file < flags) and the model they describe.
#pragma once

#include <memory>
#include <string>

#include "examples/train_bert/train_bert.pb.h"
#include "strata/io/text/wordpiece.h"
#include "strata/io/weights/bert_weights.h"
#include "strata/memory/trainer_cache.h"
#include "strata/models/bert.h"

namespace strata::examples {

struct BertTrainOptions {
  // Every field train_bert reads is set (train_options.cpp holds the defaults).
  TrainBertConfig config;
  models::BertConfig model;     // the preset with config's overrides
  memory::CacheSettings cache;  // config.cache(), sizes parsed
  // --init-from's weights (the model's shape is theirs); the trainer loads and drops them.
  std::shared_ptr<io::BertWeights> init_weights;
  // WordPiece from --vocab or the --init-from folder (null: byte-level); the model's vocabulary is its.
  std::shared_ptr<io::WordPieceTokenizer> tokenizer;
  // The run in a line, printed at the start and saved in checkpoints.
  std::string describe() const;
};

// Parses argv (and the --config file it names); throws ValueError/IoError on bad input.
// Returns false when --help was printed.
bool parse_bert_train_options(int argc, char** argv, BertTrainOptions* out);

}  // namespace strata::examples
