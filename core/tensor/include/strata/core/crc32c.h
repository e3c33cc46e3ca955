// CRC-32C (Castagnoli, the iSCSI/ext4/LevelDB checksum): guards checkpoint tensors and the
// tensor cache's spilled extents. Uses the SSE4.2 crc32 instruction when the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

// The CRC-32C of `bytes` bytes at `data`, continuing from `crc` (the value an earlier call
// returned for the preceding bytes; 0 to start). crc32c("123456789", 9) == 0xE3069283.
uint32_t crc32c(const void* data, size_t bytes, uint32_t crc = 0);

// The CRC-32C of A followed by B, from crc32c(A), crc32c(B) and B's length (zlib's
// crc32_combine, for the Castagnoli polynomial): what lets a device checksum a buffer in
// parallel segments.
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// The CRC-32C of `total` bytes from the CRCs of its consecutive `segment`-byte pieces
// (`count` = ceil(total / segment) of them; the last holds the remainder).
uint32_t crc32c_from_segments(const uint32_t* segment_crcs, uint64_t segment, uint64_t total);

}  // namespace strata
