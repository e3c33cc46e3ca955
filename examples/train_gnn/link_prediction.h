// train_gnn --task link: a DistMult link predictor (over plain or R-GCN-encoded entity embeddings)
// trained on a knowledge graph's training triples, each scored against every entity (1-N scoring)
// or against corrupted copies, and ranked on valid and test.
#pragma once

#include <cstdint>

#include "examples/common/trainer_main.h"
#include "examples/train_gnn/train_options.h"

namespace strata::examples {

// Trains as `o` says (o.link_prediction()), printing the loss per logged step, the filtered
// ranking metrics of valid and test at each evaluation and at the end, and the test metrics at
// the best validation MRR; writes <out_dir>/checkpoint. `run`'s running_step follows the step under
// way for a failure's report. Returns the exit code.
int train_link_prediction(const GnnTrainOptions& o, TrainerRun& run);

}  // namespace strata::examples
