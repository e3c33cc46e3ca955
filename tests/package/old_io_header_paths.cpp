// Compiled against the installed tree by embed_minimal_test.sh: an application written against the io
// headers' former paths (before they were sorted into text/, weights/, checkpoint/, images/, graphs/
// and features/) still compiles, through the forwarding headers.
#include "strata/io/bert_weights.h"
#include "strata/io/checkpoint.h"
#include "strata/io/cifar10.h"
#include "strata/io/feature_file.h"
#include "strata/io/feature_store.h"
#include "strata/io/gpt_weights.h"
#include "strata/io/graph_dataset.h"
#include "strata/io/graph_formats.h"
#include "strata/io/graph_generators.h"
#include "strata/io/graph_loader.h"
#include "strata/io/image.h"
#include "strata/io/image_dataset.h"
#include "strata/io/image_folder.h"
#include "strata/io/image_loader.h"
#include "strata/io/image_transforms.h"
#include "strata/io/knowledge_graph.h"
#include "strata/io/mlm_batches.h"
#include "strata/io/neighbor_sampler.h"
#include "strata/io/safetensors.h"
#include "strata/io/synthetic_images.h"
#include "strata/io/token_shards.h"
#include "strata/io/tokenizer.h"

namespace {
[[maybe_unused]] strata::io::CheckpointState checkpoint_state;
[[maybe_unused]] strata::io::GraphDataset graph;
[[maybe_unused]] strata::io::ImageLoaderOptions image_loader_options;
[[maybe_unused]] strata::io::GptShape gpt_shape;
[[maybe_unused]] strata::io::FeatureStoreOptions feature_store_options;
[[maybe_unused]] auto* split = &strata::io::split_nodes;
}  // namespace
