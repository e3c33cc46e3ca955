// copy_mapped_rows: rows copied out of a file mapping, a SIGBUS there (the file shrank under the
// mapping) turned into the offset that faulted instead of the end of the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace strata::io {

// Copies rows ids[begin, end) of `row_bytes` each from `rows` (inside the mapping [base, base +
// length)) to `out`, one after another. Returns -1, or the mapping offset of a page the file no
// longer backs: the copy stops there (rows before it are copied). A fault outside the mapping
// is not caught.
int64_t copy_mapped_rows(const char* base, size_t length, const char* rows, std::span<const int64_t> ids,
                         int64_t begin, int64_t end, int64_t row_bytes, char* out);

}  // namespace strata::io
