// gzip_stored: a gzip member whose deflate blocks are stored (not compressed), for tests and fuzz
// seeds that need gzip'd files without zlib.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace strata::testing {

// A gzip member (RFC 1952) holding `bytes` in stored deflate blocks (RFC 1951 section 3.2.4).
inline std::string gzip_stored(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;  // CRC-32 (RFC 1952 section 8)
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  crc = ~crc;
  auto le = [](uint64_t v, int width) {
    std::string out;
    for (int i = 0; i < width; ++i) out.push_back(char(v >> (8 * i)));
    return out;
  };
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
  size_t at = 0;
  do {
    const size_t len = std::min<size_t>(bytes.size() - at, 65535);
    out.push_back(at + len == bytes.size() ? 1 : 0);
    out += le(len, 2) + le(~len & 0xffff, 2) + bytes.substr(at, len);
    at += len;
  } while (at < bytes.size());
  return out + le(crc, 4) + le(bytes.size(), 4);
}

}  // namespace strata::testing
