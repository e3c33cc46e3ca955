// ImageDataset: the interface the image loader reads (CIFAR-10 files, a folder of images,
// the synthetic set): N labelled images, fetched by index from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/io/data_identity.h"
#include "strata/io/images/image.h"

namespace strata::io {

class ImageDataset {
 public:
  virtual ~ImageDataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t num_classes() const = 0;
  // Sample `index` in [0, size()): its image (decoded; any size) and its class in
  // [0, num_classes()). Thread-safe: loader workers call these concurrently.
  virtual Image image(int64_t index) const = 0;
  virtual int64_t label(int64_t index) const = 0;
  // What to name in an error about sample `index` (a file path, a file and record number).
  virtual std::string sample_name(int64_t index) const { return "sample " + std::to_string(index); }
  virtual std::vector<std::string> class_names() const;  // default "0", "1", ...
  virtual std::string describe() const = 0;              // one line for logs
  // What a checkpoint records to know the data again: by default the describe() line with a digest
  // of every sample's name and label (a folder's file names, not their bytes).
  virtual DataIdentity identity() const;
};

}  // namespace strata::io
