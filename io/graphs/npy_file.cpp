// The .npy layout (numpy/lib/format.py): "\x93NUMPY", major and minor version bytes, the header
// length (uint16 for version 1, uint32 for 2 and 3), a Python dict literal with 'descr',
// 'fortran_order' and 'shape', then the raw data.
#include "io/graphs/npy_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

#include "io/file_io.h"
#include "io/graphs/text_lines.h"
#include "strata/core/error.h"

namespace strata::io {
namespace {

constexpr uint64_t kMaxHeader = uint64_t(1) << 20;

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// The text after `key`'s ':' in the header dict, or throws naming the file and the offset.
size_t value_start(const std::string& path, std::string_view dict, uint64_t base, std::string_view key) {
  for (char quote : {'\'', '"'}) {
    std::string quoted(1, quote);  // appended, not '+': sidesteps a GCC 12 -Wrestrict false positive
    quoted += key;
    quoted += quote;
    size_t at = dict.find(quoted);
    if (at == std::string_view::npos) continue;
    at = dict.find(':', at + quoted.size());
    if (at == std::string_view::npos) break;
    ++at;
    while (at < dict.size() && dict[at] == ' ') ++at;
    return at;
  }
  throw IoError(
      detail::concat("'", path, "' at byte offset ", base, ": the .npy header has no '", key, "': ", dict));
}

NpyHeader parse_header(const std::string& path, std::string_view dict, uint64_t base) {
  NpyHeader h;
  auto bad = [&](size_t at, const std::string& what) {
    return IoError(
        detail::concat("'", path, "' at byte offset ", base + at, ": bad .npy header (", what, "): ", dict));
  };
  size_t at = value_start(path, dict, base, "descr");
  if (at >= dict.size() || (dict[at] != '\'' && dict[at] != '"')) throw bad(at, "descr is not a string");
  size_t close = dict.find(dict[at], at + 1);
  if (close == std::string_view::npos) throw bad(at, "unterminated descr");
  h.descr = std::string(dict.substr(at + 1, close - at - 1));

  at = value_start(path, dict, base, "fortran_order");
  if (dict.substr(at, 4) == "True")
    h.fortran_order = true;
  else if (dict.substr(at, 5) != "False")
    throw bad(at, "fortran_order is not True or False");

  at = value_start(path, dict, base, "shape");
  if (at >= dict.size() || dict[at] != '(') throw bad(at, "shape is not a tuple");
  close = dict.find(')', at);
  if (close == std::string_view::npos) throw bad(at, "unterminated shape");
  std::vector<std::string_view> dims;
  std::string_view inside = dict.substr(at + 1, close - at - 1);
  split_fields(inside, FieldSeparator::kCommaOrWhitespace, &dims);
  for (std::string_view d : dims) {
    if (d.empty()) continue;  // the trailing comma of "(3,)"
    std::optional<int64_t> v = to_int(d);
    if (!v || *v < 0) throw bad(at, "shape entry '" + std::string(d) + "'");
    h.shape.push_back(*v);
  }
  return h;
}

// The layout of the open `file`, every check of read_npy's done.
NpyLayout layout_of(const InputFile& file) {
  const std::string& path = file.path();
  unsigned char prefix[12] = {};
  if (file.size() < 10)
    throw IoError(detail::concat("'", path, "' at byte offset 0: too short for a .npy file"));
  file.read_at(prefix, std::min<uint64_t>(12, file.size()), 0, "the .npy preamble");
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0)
    throw IoError(detail::concat("'", path, "' at byte offset 0: bad magic, not a .npy file"));
  int major = prefix[6];
  if (major < 1 || major > 3)
    throw IoError(detail::concat("'", path, "' at byte offset 6: unsupported .npy version ", major));
  uint64_t header_len = 0, base = 10;
  if (major == 1) {
    header_len = uint64_t(prefix[8]) | uint64_t(prefix[9]) << 8;
  } else {
    if (file.size() < 12)
      throw IoError(detail::concat("'", path, "' at byte offset 8: truncated .npy preamble"));
    header_len = uint64_t(prefix[8]) | uint64_t(prefix[9]) << 8 | uint64_t(prefix[10]) << 16 |
                 uint64_t(prefix[11]) << 24;
    base = 12;
  }
  if (header_len > kMaxHeader || base + header_len > file.size())
    throw IoError(detail::concat("'", path, "' at byte offset 8: header length ", header_len,
                                 " runs past the end of the file (", file.size(), " bytes)"));
  std::string dict(header_len, '\0');
  file.read_at(dict.data(), header_len, base, "the .npy header");
  NpyHeader h = parse_header(path, dict, base);
  if (h.fortran_order)
    throw IoError(
        detail::concat("'", path, "' at byte offset ", base, ": Fortran-order arrays are not supported"));

  struct Kind {
    const char* descr;
    DType dtype;
  };
  static const Kind kinds[] = {{"<i8", DType::i64},    {"<i4", DType::i32}, {"<f4", DType::f32},
                               {"<f8", DType::f64},    {"<f2", DType::f16}, {"|u1", DType::u8},
                               {"|b1", DType::boolean}};
  const Kind* kind = nullptr;
  for (const Kind& k : kinds)
    if (h.descr == k.descr) kind = &k;
  if (kind == nullptr)
    throw IoError(detail::concat("'", path, "' at byte offset ", base, ": unsupported dtype '", h.descr,
                                 "' (supported: <i8 <i4 <f4 <f8 <f2 |u1 |b1)"));
  // Like numpy (PyArray_NewFromDescr_int, numpy/_core/src/multiarray/ctors.c), refuse a shape
  // whose non-zero sizes multiply past int64, even beside a zero size: (0, 2^62, 4) holds no data
  // but its strides would overflow.
  int64_t span = 1;
  for (int64_t d : h.shape) {
    if (d > 1 && span > std::numeric_limits<int64_t>::max() / d)
      throw IoError(detail::concat("'", path, "' at byte offset ", base, ": the shape ", shape_str(h.shape),
                                   " is too large"));
    span *= std::max<int64_t>(d, 1);
  }
  uint64_t data_at = base + header_len;
  uint64_t available = file.size() - data_at;
  uint64_t numel = 1;
  for (int64_t d : h.shape) {
    if (d != 0 && numel > available / uint64_t(d)) {
      numel = available + 1;  // more elements than bytes: too large, whatever the dtype
      break;
    }
    numel *= uint64_t(d);
  }
  uint64_t need = numel > available ? available + 1 : numel * element_size(kind->dtype);
  if (need != available)
    throw IoError(detail::concat("'", path, "' at byte offset ", data_at, ": the shape ", shape_str(h.shape),
                                 " of ", h.descr, " needs ",
                                 (numel > available ? std::string("more") : std::to_string(need)),
                                 " bytes of data but the file holds ", available));
  return NpyLayout{kind->dtype, h.shape, data_at, need};
}

}  // namespace

NpyLayout read_npy_layout(const std::string& path) { return layout_of(InputFile(path)); }

Tensor read_npy(const std::string& path, uint64_t* data_offset) {
  InputFile file(path);
  const NpyLayout layout = layout_of(file);
  const uint64_t need = layout.data_bytes;
  if (data_offset != nullptr) *data_offset = layout.data_offset;
  Tensor t = Tensor::empty(layout.shape, layout.dtype);
  if (need > 0) file.read_at(t.data_ptr(), need, layout.data_offset, "the .npy data");
  if (layout.dtype == DType::boolean) {
    // numpy reads any non-zero byte of a |b1 array as True; a C++ bool may only hold 0 or 1.
    auto* bytes = static_cast<uint8_t*>(t.data_ptr());
    for (uint64_t i = 0; i < need; ++i) bytes[i] = bytes[i] != 0 ? 1 : 0;
  }
  return t;
}

}  // namespace strata::io
