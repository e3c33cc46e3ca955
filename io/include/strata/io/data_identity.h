// DataIdentity: what a run trained on, as a description and a digest of its content; checkpoints
// record it, so that a resume on other data is caught.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/core/tensor.h"

namespace strata::io {

struct DataIdentity {
  std::string description;  // for people: "polblogs.gt.gz: 1490 nodes, 19090 edges, 2 classes"
  std::string digest;       // equal digests: the same data; empty: not recorded (older checkpoints)
  bool recorded() const { return !digest.empty(); }
};

// A digest built from the parts that make a dataset: CRC-32C over each part's kind, length and
// bytes, in the order added, with the total byte count. "crc32c 1a2b3c4d of 123456 bytes".
class DataDigest {
 public:
  // The tensor's dtype, shape and values (copied to the host, contiguous, when they are not); an
  // undefined tensor adds a marker of its own.
  DataDigest& add(const Tensor& t);
  DataDigest& add(std::string_view text);
  DataDigest& add(int64_t value);
  // Raw bytes, e.g. a piece of a file.
  DataDigest& add_bytes(const void* data, size_t bytes);
  std::string str() const;

 private:
  void mix(const void* data, size_t bytes);
  uint32_t crc_ = 0;
  uint64_t bytes_ = 0;
};

// Files whose content is too large to read at every start (token shards, image folders): each
// file's name (without its folder: a moved corpus is the same data), its size and the CRC-32C of
// its first and last MiB. Throws IoError naming a file it cannot read.
DataIdentity files_identity(const std::string& description, const std::vector<std::string>& paths);

}  // namespace strata::io
