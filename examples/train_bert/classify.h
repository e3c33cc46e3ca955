// train_bert --classify-data: sequence classification (BertForSequenceClassification) on labelled
// text, from scratch or from --init-from's pretrained encoder.
#pragma once

#include "examples/common/trainer_main.h"
#include "examples/common/trainer_setup.h"
#include "examples/train_bert/train_options.h"

namespace strata::examples {

// Trains on --classify-data (one example per line: "<label>\t<text>", labels 0..num_labels-1, the
// text's bytes or WordPiece tokens as [CLS] tokens [SEP], cut or padded to --seq-len), holding out
// every 10th line; logs loss and accuracy, reports held-out accuracy, writes a checkpoint at the end.
// Under mpirun the ranks take the batches of the global order in turn.
int train_classifier(BertTrainOptions& o, const TrainerStart& start, TrainerRun& run);

}  // namespace strata::examples
