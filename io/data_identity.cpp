#include "strata/io/data_identity.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "io/file_io.h"
#include "strata/core/crc32c.h"
#include "strata/core/error.h"

namespace strata::io {

void DataDigest::mix(const void* data, size_t bytes) {
  crc_ = crc32c(data, bytes, crc_);
  bytes_ += bytes;
}

DataDigest& DataDigest::add(int64_t value) {
  mix(&value, sizeof(value));
  return *this;
}

DataDigest& DataDigest::add(std::string_view text) {
  add(int64_t(text.size()));
  mix(text.data(), text.size());
  return *this;
}

DataDigest& DataDigest::add_bytes(const void* data, size_t bytes) {
  add(int64_t(bytes));
  mix(data, bytes);
  return *this;
}

DataDigest& DataDigest::add(const Tensor& t) {
  if (!t.defined()) return add(std::string_view("undefined tensor"));
  add(std::string_view(dtype_name(t.dtype())));
  add(int64_t(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) add(t.size(d));
  const Tensor c = t.device().is_host_memory() ? t.contiguous() : t.to(kCPU).contiguous();
  return add_bytes(c.data_ptr(), c.nbytes());
}

std::string DataDigest::str() const {
  char crc[16];
  std::snprintf(crc, sizeof(crc), "%08x", crc_);
  return detail::concat("crc32c ", crc, " of ", bytes_, " bytes");
}

DataIdentity files_identity(const std::string& description, const std::vector<std::string>& paths) {
  constexpr uint64_t kEnd = uint64_t(1) << 20;  // bytes read at each end of a file
  DataDigest digest;
  std::vector<char> buffer;
  for (const std::string& path : paths) {
    const InputFile f(path);
    digest.add(std::string_view(std::filesystem::path(path).filename().string())).add(int64_t(f.size()));
    const uint64_t head = std::min(f.size(), kEnd);
    const uint64_t tail_at = std::max(head, f.size() > kEnd ? f.size() - kEnd : uint64_t(0));
    buffer.resize(size_t(head));
    f.read_at(buffer.data(), head, 0, "its first bytes");
    digest.add_bytes(buffer.data(), buffer.size());
    buffer.resize(size_t(f.size() - tail_at));
    f.read_at(buffer.data(), buffer.size(), tail_at, "its last bytes");
    digest.add_bytes(buffer.data(), buffer.size());
  }
  return {description, digest.str()};
}

}  // namespace strata::io
