// CIFAR-10 in its binary distribution format (cifar-10-batches-bin: data_batch_1..5.bin,
// test_batch.bin): records of 1 label byte then 3072 pixel bytes (1024 red, 1024 green,
// 1024 blue; rows of 32), read whole into memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/io/images/image_dataset.h"

namespace strata::io {

inline constexpr int64_t kCifarSide = 32;
inline constexpr int64_t kCifarRecordBytes = 1 + 3 * kCifarSide * kCifarSide;  // 3073

class Cifar10Dataset final : public ImageDataset {
 public:
  // Reads every record of `files` in order. IoError naming the file and the record/offset for a
  // missing file, a size that is not a whole number of records (a truncated download), or a
  // label byte above 9.
  explicit Cifar10Dataset(std::vector<std::string> files);
  // data_batch_1..5.bin (train) or test_batch.bin in `dir` (the extracted cifar-10-batches-bin).
  static std::vector<std::string> files_in(const std::string& dir, bool train);

  int64_t size() const override { return int64_t(labels_.size()); }
  int64_t num_classes() const override { return 10; }
  Image image(int64_t index) const override;
  int64_t label(int64_t index) const override;
  std::string sample_name(int64_t index) const override;
  std::vector<std::string> class_names() const override;
  std::string describe() const override;
  DataIdentity identity() const override;  // its files (io::files_identity)

 private:
  std::vector<std::string> files_;
  std::vector<int64_t> first_record_;  // per file, the index of its first record
  std::vector<uint8_t> labels_;
  std::vector<uint8_t> pixels_;  // CHW planes per record, 3072 bytes each
};

// Writes images (32x32) and labels (0-9) as one CIFAR-10 binary file (tests, conversions).
void write_cifar10(const std::string& path, const std::vector<Image>& images,
                   const std::vector<int64_t>& labels);

}  // namespace strata::io
