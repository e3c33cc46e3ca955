#include "strata/io/images/cifar10.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "io/file_io.h"
#include "strata/core/error.h"

namespace strata::io {

namespace {
constexpr int64_t kPlane = kCifarSide * kCifarSide;
}  // namespace

Cifar10Dataset::Cifar10Dataset(std::vector<std::string> files) : files_(std::move(files)) {
  STRATA_CHECK(!files_.empty(), ValueError, "Cifar10Dataset: no files given");
  for (const std::string& path : files_) {
    InputFile f(path);
    const uint64_t bytes = f.size();
    STRATA_CHECK(bytes > 0, IoError, "CIFAR-10 file '", path, "' is empty");
    const uint64_t whole = bytes / uint64_t(kCifarRecordBytes), rest = bytes % uint64_t(kCifarRecordBytes);
    STRATA_CHECK(rest == 0, IoError, "CIFAR-10 file '", path, "' is truncated or not CIFAR-10: ", bytes,
                 " bytes is not a whole number of ", kCifarRecordBytes, "-byte records (record ", whole,
                 " at offset ", whole * uint64_t(kCifarRecordBytes), " has only ", rest, " bytes)");
    const std::string raw = f.read_all();
    first_record_.push_back(int64_t(labels_.size()));
    labels_.reserve(labels_.size() + whole);
    pixels_.reserve(pixels_.size() + whole * uint64_t(3 * kPlane));
    for (uint64_t r = 0; r < whole; ++r) {
      const auto* rec = reinterpret_cast<const uint8_t*>(raw.data()) + r * uint64_t(kCifarRecordBytes);
      STRATA_CHECK(rec[0] < 10, IoError, "CIFAR-10 file '", path, "': record ", r, " (offset ",
                   r * uint64_t(kCifarRecordBytes), ") has label ", int(rec[0]), ", not 0-9");
      labels_.push_back(rec[0]);
      pixels_.insert(pixels_.end(), rec + 1, rec + kCifarRecordBytes);
    }
  }
}

std::vector<std::string> Cifar10Dataset::files_in(const std::string& dir, bool train) {
  std::vector<std::string> names;
  if (train)
    for (int i = 1; i <= 5; ++i) names.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
  else
    names.push_back(dir + "/test_batch.bin");
  for (const std::string& n : names)
    STRATA_CHECK(std::filesystem::is_regular_file(n), IoError, "CIFAR-10: '", n,
                 "' not found (expected the extracted cifar-10-batches-bin folder)");
  return names;
}

Image Cifar10Dataset::image(int64_t index) const {
  STRATA_CHECK(index >= 0 && index < size(), IndexError, "Cifar10Dataset: index ", index, " out of range [0, ",
               size(), ")");
  Image img(kCifarSide, kCifarSide);
  const uint8_t* planes = pixels_.data() + index * 3 * kPlane;
  for (int64_t i = 0; i < kPlane; ++i)
    for (int c = 0; c < 3; ++c) img.pixels[size_t(i * 3 + c)] = planes[c * kPlane + i];
  return img;
}

int64_t Cifar10Dataset::label(int64_t index) const {
  STRATA_CHECK(index >= 0 && index < size(), IndexError, "Cifar10Dataset: index ", index, " out of range [0, ",
               size(), ")");
  return labels_[size_t(index)];
}

std::string Cifar10Dataset::sample_name(int64_t index) const {
  const auto it = std::upper_bound(first_record_.begin(), first_record_.end(), index) - 1;
  const size_t f = size_t(it - first_record_.begin());
  return detail::concat("'", files_[f], "' record ", index - *it);
}

std::vector<std::string> Cifar10Dataset::class_names() const {
  return {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
}

std::string Cifar10Dataset::describe() const {
  std::ostringstream os;
  os << "CIFAR-10, " << size() << " images of 32x32 from " << files_.size() << " file(s) (" << files_.front()
     << (files_.size() > 1 ? ", ..." : "") << ")";
  return os.str();
}

DataIdentity Cifar10Dataset::identity() const { return files_identity(describe(), files_); }

void write_cifar10(const std::string& path, const std::vector<Image>& images, const std::vector<int64_t>& labels) {
  STRATA_CHECK(images.size() == labels.size(), ValueError, "write_cifar10: ", images.size(), " images but ",
               labels.size(), " labels");
  std::vector<uint8_t> bytes;
  bytes.reserve(images.size() * size_t(kCifarRecordBytes));
  for (size_t i = 0; i < images.size(); ++i) {
    const Image& img = images[i];
    STRATA_CHECK(img.height == kCifarSide && img.width == kCifarSide, ValueError, "write_cifar10: image ", i, " is ",
                 img.height, "x", img.width, ", CIFAR-10 records are 32x32");
    STRATA_CHECK(labels[i] >= 0 && labels[i] < 10, ValueError, "write_cifar10: label ", labels[i], " of image ", i,
                 " is not 0-9");
    bytes.push_back(uint8_t(labels[i]));
    for (int c = 0; c < 3; ++c)
      for (int64_t p = 0; p < kPlane; ++p) bytes.push_back(img.pixels[size_t(p * 3 + c)]);
  }
  OutputFile out(path, /*atomic=*/true);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

}  // namespace strata::io
