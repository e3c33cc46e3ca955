// DataCursor: where a data loader is, enough to resume it bit for bit; checkpoints record it.
#pragma once

#include <cstdint>

namespace strata::io {

struct DataCursor {
  int64_t epoch = 0;
  int64_t shard = 0;   // token shards: index into this epoch's shard order (0 for the other loaders)
  int64_t sample = 0;  // token shards: index into the shard's sample order; batch loaders: global batch index
};

}  // namespace strata::io
