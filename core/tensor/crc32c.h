// CRC-32C (Castagnoli, the iSCSI/ext4/LevelDB checksum): guards checkpoint tensors and the
// tensor cache's spilled extents. Uses the SSE4.2 crc32 instruction when the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

// The CRC-32C of `bytes` bytes at `data`, continuing from `crc` (the value an earlier call
// returned for the preceding bytes; 0 to start). crc32c("123456789", 9) == 0xE3069283.
uint32_t crc32c(const void* data, size_t bytes, uint32_t crc = 0);

}  // namespace strata
