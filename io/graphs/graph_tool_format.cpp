// graph-tool's binary .gt format, as https://graph-tool.skewed.de/static/doc/gt_format.html
// describes it: magic "⛾ gt", version 1, an endianness byte, a comment string, the directed
// flag, N, N out-neighbour lists (indices 1, 2, 4 or 8 bytes wide by N), then property maps.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "io/graphs/compressed_file.h"
#include "io/graphs/graph_assembly.h"
#include "strata/core/error.h"
#include "strata/io/graphs/graph_formats.h"

namespace strata::io {
namespace {

constexpr unsigned char kMagic[6] = {0xe2, 0x9b, 0xbe, 0x20, 0x67, 0x74};

// graph-tool's value type index (the table in the format's documentation).
enum ValueType : uint8_t {
  kBool,
  kInt16,
  kInt32,
  kInt64,
  kDouble,
  kLongDouble,
  kString,
  kVecBool,
  kVecInt16,
  kVecInt32,
  kVecInt64,
  kVecDouble,
  kVecLongDouble,
  kVecString,
  kPyObject,
  kNumValueTypes
};

const char* type_name(uint8_t t) {
  static const char* names[kNumValueTypes] = {"bool",
                                              "int16_t",
                                              "int32_t",
                                              "int64_t",
                                              "double",
                                              "long double",
                                              "string",
                                              "vector<bool>",
                                              "vector<int16_t>",
                                              "vector<int32_t>",
                                              "vector<int64_t>",
                                              "vector<double>",
                                              "vector<long double>",
                                              "vector<string>",
                                              "python::object"};
  return names[t];
}

// Element bytes of a numeric scalar type (or a numeric vector's element); 0 for the others.
size_t element_bytes(uint8_t t) {
  switch (t) {
    case kBool:
    case kVecBool: return 1;
    case kInt16:
    case kVecInt16: return 2;
    case kInt32:
    case kVecInt32: return 4;
    case kInt64:
    case kVecInt64:
    case kDouble:
    case kVecDouble: return 8;
    case kLongDouble:
    case kVecLongDouble: return 16;
    default: return 0;
  }
}

bool is_vector(uint8_t t) { return t >= kVecBool && t <= kVecLongDouble; }
bool is_real(uint8_t t) { return t == kDouble || t == kLongDouble || t == kVecDouble || t == kVecLongDouble; }

DType tensor_dtype(uint8_t t) {
  switch (t) {
    case kBool:
    case kVecBool: return DType::boolean;
    case kInt16:
    case kInt32:
    case kVecInt16:
    case kVecInt32: return DType::i32;
    case kInt64:
    case kVecInt64: return DType::i64;
    default: return DType::f64;
  }
}

// A bounds-checked cursor over the file's bytes in the file's byte order, streamed: it holds
// the bytes asked for and not yet consumed, never the whole (decompressed) file, so a gzip'd
// file's header is checked before the rest is inflated, and what it holds grows only with what
// the file really contains. A pointer from take() is valid until the next take().
class GtCursor {
 public:
  explicit GtCursor(DecompressedReader& reader) : reader_(reader) {}

  uint64_t offset() const { return pos_; }
  // At least the bytes still to come (exact when the file is not gzip'd).
  uint64_t max_remaining() const { return held() + reader_.max_remaining(); }
  // Whether `bytes` more bytes are there to take (reading as needed).
  bool has(uint64_t bytes) { return fill(bytes); }
  // The bytes left, counted up to `limit` (reading as needed).
  uint64_t left_up_to(uint64_t limit) {
    fill(limit);
    return std::min(held(), limit);
  }
  void set_big_endian(bool big) { big_endian_ = big; }

  [[noreturn]] void fail_at(uint64_t offset, const std::string& what) const {
    throw IoError(detail::concat("'", reader_.path(), "' at byte offset ", offset, ": ", what));
  }
  void need(uint64_t bytes, const std::string& what) {
    if (bytes <= held()) return;  // the common case: no bound to compute (gzoffset seeks)
    if (bytes > max_remaining() || !fill(bytes))
      fail_at(pos_, detail::concat("truncated: ", what, " needs ", bytes, " bytes but the file ends after ",
                                   bytes > max_remaining() ? max_remaining() : held()));
  }
  const char* take(uint64_t bytes, const std::string& what) {
    need(bytes, what);
    const char* p = buffer_.data() + head_;
    head_ += bytes;
    pos_ += bytes;
    return p;
  }
  // An unsigned integer of `width` bytes in the file's byte order.
  uint64_t uint(size_t width, const std::string& what) { return decode(take(width, what), width); }
  uint64_t decode(const char* p, size_t width) const {
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) {
      size_t at = big_endian_ ? i : width - 1 - i;
      v = (v << 8) | uint8_t(p[at]);
    }
    return v;
  }
  // A count (uint64) that must leave room for `count * unit` more bytes.
  uint64_t count(uint64_t unit, const std::string& what) {
    uint64_t at = pos_;
    uint64_t n = uint(8, what);
    if (unit > 0 && n > held() / unit && n > max_remaining() / unit)
      fail_at(at, detail::concat(what, " ", n, " needs ", n, " x ", unit, " bytes but at most ",
                                 max_remaining(), " remain"));
    return n;
  }
  std::string string(const std::string& what) {
    uint64_t n = count(1, what + " length");
    return std::string(take(n, what), n);
  }
  // One element of an integer type (bool, int16, int32, int64 or their vectors), exactly.
  int64_t integer(uint8_t t, const char* p) const {
    switch (element_bytes(t)) {
      case 1: return uint8_t(p[0]);
      case 2: return int16_t(decode(p, 2));
      case 4: return int32_t(decode(p, 4));
      default: return int64_t(decode(p, 8));
    }
  }
  // One element of a floating type (double, long double or their vectors).
  double real(uint8_t t, const char* p) const {
    if (element_bytes(t) == 16) return extended_to_double(p);
    uint64_t bits = decode(p, 8);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }

 private:
  // graph-tool writes long double as the writer's memory holds it: on x86-64, the x87 extended
  // format (a 64-bit significand with an explicit integer bit, a 15-bit exponent biased by 16383
  // and a sign) in the first 10 of 16 little-endian bytes, the format read here.
  double extended_to_double(const char* p) const {
    unsigned char b[10];
    for (int i = 0; i < 10; ++i) b[i] = uint8_t(big_endian_ ? p[15 - i] : p[i]);
    uint64_t mantissa = 0;
    for (int i = 7; i >= 0; --i) mantissa = (mantissa << 8) | b[i];
    int exponent = ((b[9] & 0x7f) << 8) | b[8];
    bool negative = (b[9] & 0x80) != 0;
    double v;
    if (exponent == 0x7fff)
      v = (mantissa << 1) == 0 ? std::numeric_limits<double>::infinity()
                               : std::numeric_limits<double>::quiet_NaN();
    else
      v = std::ldexp(double(mantissa), (exponent == 0 ? 1 : exponent) - 16383 - 63);
    return negative ? -v : v;
  }

  uint64_t held() const { return buffer_.size() - head_; }
  // Reads until `bytes` are held; false when the file ends first. The buffer grows by at most
  // 16 MiB a read, so a count the file does not back costs no more memory than the file holds.
  bool fill(uint64_t bytes) {
    if (held() >= bytes) return true;
    if (head_ > 0) {  // drop what was consumed
      buffer_.erase(0, head_);
      head_ = 0;
    }
    while (held() < bytes) {
      const size_t used = buffer_.size();
      const size_t step = size_t(
          std::min<uint64_t>(std::max<uint64_t>(bytes - held(), uint64_t(1) << 16), uint64_t(16) << 20));
      buffer_.resize(used + step);
      const size_t n = reader_.read(buffer_.data() + used, step);
      buffer_.resize(used + n);
      if (n == 0) return false;
    }
    return true;
  }

  DecompressedReader& reader_;
  std::string buffer_;  // bytes read and not yet dropped; the next to take is at head_
  size_t head_ = 0;
  uint64_t pos_ = 0;  // the file offset of buffer_[head_]
  bool big_endian_ = false;
};

// One property map's values, read raw: integers exactly, floats as doubles (with the vector
// lengths), strings.
struct PropertyValues {
  uint8_t key = 0, type = 0;
  std::string name;
  uint64_t offset = 0;             // where the record starts
  std::vector<int64_t> ints;       // integer types: all elements, row after row
  std::vector<double> reals;       // floating types: all elements, row after row
  std::vector<uint64_t> lengths;   // numeric vectors: each value's length
  std::vector<std::string> texts;  // strings (vector<string>: the elements joined by ", ")

  void add(const GtCursor& in, const char* p) {
    if (is_real(type))
      reals.push_back(in.real(type, p));
    else
      ints.push_back(in.integer(type, p));
  }
};

void read_values(GtCursor& in, uint64_t count, PropertyValues* p) {
  const std::string what = "property '" + p->name + "'";
  size_t width = element_bytes(p->type);
  if (width > 0 && !is_vector(p->type)) {
    in.need(count * width, what);  // count <= N or E, both bounded by the file's size
    (is_real(p->type) ? p->reals.reserve(count) : p->ints.reserve(count));
    for (uint64_t i = 0; i < count; ++i) p->add(in, in.take(width, what));
    return;
  }
  if (width > 0) {
    p->lengths.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t n = in.count(width, what + " vector length");
      const char* data = in.take(n * width, what);
      p->lengths[i] = n;
      for (uint64_t k = 0; k < n; ++k) p->add(in, data + k * width);
    }
    return;
  }
  p->texts.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (p->type == kVecString) {
      uint64_t n = in.count(8, what + " vector length");
      std::string joined;
      for (uint64_t k = 0; k < n; ++k) joined += (k > 0 ? ", " : "") + in.string(what);
      p->texts[i] = std::move(joined);
    } else {
      p->texts[i] = in.string(what);
    }
  }
}

// The tensor of a numeric property: [count] for scalars, [count, L] for vectors of one length L;
// undefined for strings and ragged vectors.
Tensor property_tensor(const PropertyValues& p, uint64_t count) {
  if (element_bytes(p.type) == 0) return Tensor();
  Shape shape{int64_t(count)};
  if (is_vector(p.type)) {
    uint64_t len = p.lengths.empty() ? 0 : p.lengths[0];
    for (uint64_t l : p.lengths)
      if (l != len) return Tensor();
    shape.push_back(int64_t(len));
  }
  DType dtype = tensor_dtype(p.type);
  Tensor t = Tensor::empty(shape, dtype);
  const std::vector<int64_t>& v = p.ints;
  switch (dtype) {
    case DType::boolean:
      std::transform(v.begin(), v.end(), t.data<bool>(), [](int64_t x) { return x != 0; });
      break;
    case DType::i32:
      std::transform(v.begin(), v.end(), t.data<int32_t>(), [](int64_t x) { return int32_t(x); });
      break;
    case DType::i64: std::copy(v.begin(), v.end(), t.data<int64_t>()); break;
    default: std::copy(p.reals.begin(), p.reals.end(), t.data<double>());
  }
  return t;
}

std::string graph_property_text(const PropertyValues& p) {
  if (!p.texts.empty()) return p.texts[0];
  std::ostringstream os;
  os.precision(17);
  for (size_t i = 0; i < p.ints.size(); ++i) os << (i > 0 ? ", " : "") << p.ints[i];
  for (size_t i = 0; i < p.reals.size(); ++i) os << (i > 0 ? ", " : "") << p.reals[i];
  return os.str();
}

void set_labels(const std::string& path, const PropertyValues& p, int64_t n, GraphDataset* data,
                GraphToolInfo* info) {
  std::vector<int64_t> labels(size_t(n), -1);
  if (p.type == kString) {
    std::vector<std::string> classes;
    labels = class_ids_of(p.texts, &classes);
    if (info != nullptr) info->class_names = classes;
  } else if (element_bytes(p.type) > 0 && !is_vector(p.type)) {
    for (int64_t i = 0; i < n; ++i) {
      double v = is_real(p.type) ? p.reals[size_t(i)] : double(p.ints[size_t(i)]);
      if (std::isnan(v) || v < 0) continue;
      STRATA_CHECK(v == std::floor(v) && v < double(kMaxGraphNodes), IoError, "'", path, "' at byte offset ",
                   p.offset, ": label property '", p.name, "' has the value ", v, " at vertex ", i,
                   ", not a class id");
      labels[size_t(i)] = int64_t(v);
    }
  } else {
    throw ValueError(detail::concat("load_graph_tool('", path, "'): label property '", p.name, "' is ",
                                    type_name(p.type), ", not an integer, double or string"));
  }
  data->labels = host_tensor(labels);
  data->num_classes = count_classes(labels, path);
}

void set_features(const std::string& path, const Tensor& t, const PropertyValues& p, GraphDataset* data) {
  STRATA_CHECK(t.defined(), ValueError, "load_graph_tool('", path, "'): feature property '", p.name, "' is ",
               type_name(p.type), (is_vector(p.type) ? " of ragged lengths" : ""), ", not numeric");
  Tensor f = t.dim() == 1 ? t.view({t.size(0), 1}) : t;
  data->features = f.to(DType::f32);
  check_finite_features(data->features, "load_graph_tool('" + path + "'): feature property '" + p.name + "'");
}

}  // namespace

GraphDataset load_graph_tool(const std::string& path, const GraphToolOptions& options, GraphToolInfo* info) {
  DecompressedReader reader(path);
  GtCursor in(reader);
  // The magic first: a gzip'd file that is not a .gt file is refused after its first bytes.
  if (!in.has(8) || std::memcmp(in.take(6, "magic"), kMagic, 6) != 0)
    in.fail_at(0, "bad magic: not a graph-tool .gt file (expected e2 9b be 20 67 74)");
  uint8_t version = uint8_t(*in.take(1, "version"));
  if (version != 1) in.fail_at(6, detail::concat("unsupported .gt version ", int(version), " (expected 1)"));
  uint8_t big = uint8_t(*in.take(1, "endianness"));
  if (big > 1) in.fail_at(7, detail::concat("bad endianness byte ", int(big)));
  in.set_big_endian(big == 1);
  GraphToolInfo local;
  GraphToolInfo& meta = info != nullptr ? *info : local;
  meta = GraphToolInfo{};
  meta.comment = in.string("comment");

  uint64_t at = in.offset();
  uint8_t directed = uint8_t(*in.take(1, "directed flag"));
  if (directed > 1) in.fail_at(at, detail::concat("bad directed flag ", int(directed)));
  meta.directed = directed == 1;
  at = in.offset();
  uint64_t n = in.count(8, "vertex count");  // each vertex has an 8-byte list length
  if (n > uint64_t(kMaxGraphNodes)) in.fail_at(at, detail::concat("vertex count ", n, " is above 2^30"));
  size_t width = n <= 0xff ? 1 : n <= 0xffff ? 2 : n <= 0xffffffffull ? 4 : 8;

  std::vector<int64_t> src, dst;
  for (uint64_t v = 0; v < n; ++v) {
    uint64_t k = in.count(width, "out-neighbour list length");
    const char* list = in.take(k * width, "out-neighbour list");
    for (uint64_t j = 0; j < k; ++j) {
      uint64_t u = in.decode(list + j * width, width);
      if (u >= n)
        in.fail_at(in.offset() - (k - j) * width, detail::concat("vertex index ", u, " out of range (N = ", n,
                                                                 ") in vertex ", v, "'s list"));
      src.push_back(int64_t(v));
      dst.push_back(int64_t(u));
    }
  }
  uint64_t e = src.size();
  meta.file_edges = int64_t(e);
  // Before the properties (N values each) and the graph are sized by N.
  check_node_count(int64_t(n), 2 * int64_t(e), options.max_nodes,
                   detail::concat("load_graph_tool('", path, "'): the vertex count ", n));

  GraphDataset data;
  uint64_t num_props = in.count(1 + 8 + 1, "property count");  // key byte, name length, type byte
  std::vector<PropertyValues> vertex_props;
  for (uint64_t i = 0; i < num_props; ++i) {
    PropertyValues p;
    p.offset = in.offset();
    p.key = uint8_t(*in.take(1, "property key type"));
    if (p.key > 2) in.fail_at(p.offset, detail::concat("bad property key type ", int(p.key)));
    p.name = in.string("property name");
    uint64_t type_at = in.offset();
    p.type = uint8_t(*in.take(1, "property value type"));
    if (p.type >= kNumValueTypes)
      in.fail_at(type_at, detail::concat("bad value type ", int(p.type), " of property '", p.name, "'"));
    static const char* keys[3] = {"graph", "vertex", "edge"};
    meta.properties.push_back({keys[p.key], p.name, type_name(p.type)});
    uint64_t count = p.key == 0 ? 1 : p.key == 1 ? n : e;
    read_values(in, count, &p);
    if (p.key == 0) {
      meta.graph_properties[p.name] = graph_property_text(p);
    } else if (p.key == 1) {
      Tensor t = property_tensor(p, count);
      if (t.defined()) data.node_properties[p.name] = t;
      if (p.name == options.label_property) set_labels(path, p, int64_t(n), &data, &meta);
      if (p.name == options.feature_property) set_features(path, t, p, &data);
      p.ints.clear();
      p.reals.clear();
      p.texts.clear();
      vertex_props.push_back(std::move(p));
    } else {
      Tensor t = property_tensor(p, count);
      if (t.defined()) data.edge_properties[p.name] = meta.directed ? t : repeat_rows_twice(t);
    }
  }
  if (const uint64_t extra = in.left_up_to(uint64_t(1) << 20); extra > 0)
    in.fail_at(in.offset(), detail::concat(extra == uint64_t(1) << 20 ? "at least " : "", extra,
                                           " unexpected bytes after the last property"));
  auto named = [&](const std::string& name) {
    for (const PropertyValues& p : vertex_props)
      if (p.name == name) return true;
    return false;
  };
  STRATA_CHECK(options.label_property.empty() || named(options.label_property), ValueError,
               "load_graph_tool('", path, "'): no vertex property '", options.label_property, "'");
  STRATA_CHECK(options.feature_property.empty() || named(options.feature_property), ValueError,
               "load_graph_tool('", path, "'): no vertex property '", options.feature_property, "'");

  if (!meta.directed) append_reverse_edges(&src, &dst);
  data.graph = Graph::from_edges(int64_t(n), host_tensor(src), host_tensor(dst));
  std::string base = path.substr(path.find_last_of('/') + 1);
  for (const char* ext : {".gz", ".gt"})
    if (base.size() > std::strlen(ext) && base.ends_with(ext)) base.resize(base.size() - std::strlen(ext));
  data.name = base;
  return data;
}

}  // namespace strata::io
