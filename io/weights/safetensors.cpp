#include "strata/io/weights/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "io/file_io.h"
#include "strata/autograd/grad_mode.h"

namespace strata::io {

static_assert(std::endian::native == std::endian::little, "safetensors stores little-endian bytes");

namespace {

using ordered_json = nlohmann::ordered_json;

// The reference implementation (huggingface/safetensors) refuses headers above 100 MB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypes[] = {{DType::f64, "F64"},   {DType::f32, "F32"},     {DType::f16, "F16"},
                                 {DType::bf16, "BF16"}, {DType::i64, "I64"},     {DType::i32, "I32"},
                                 {DType::u8, "U8"},     {DType::boolean, "BOOL"}};

const char* safetensors_dtype(DType d) {
  for (const DTypeName& e : kDTypes)
    if (e.dtype == d) return e.name;
  return "?";
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

}  // namespace

Safetensors read_safetensors(const std::string& path) {
  InputFile f(path);
  auto bad = [&](auto&&... what) { return IoError(detail::concat("safetensors '", path, "': ", what...)); };
  if (f.size() < 8) throw bad("file has ", f.size(), " bytes, shorter than the 8-byte header length");
  uint64_t header_bytes = 0;
  f.read_at(&header_bytes, 8, 0, "the header length");
  if (header_bytes > f.size() - 8)
    throw bad("header length ", header_bytes, " (at offset 0) exceeds the file's ", f.size() - 8,
              " bytes after it (truncated or not safetensors)");
  if (header_bytes > kMaxHeaderBytes) throw bad("header length ", header_bytes, " is above the 100 MB limit");
  std::string text(size_t(header_bytes), '\0');
  f.read_at(text.data(), header_bytes, 8, "the JSON header");
  ordered_json header;  // ties in data offset (empty tensors) keep the header's order
  try {
    header = ordered_json::parse(text);
  } catch (const ordered_json::exception& e) {
    throw bad("JSON header at offset 8 (", header_bytes, " bytes) does not parse: ", e.what());
  }
  if (!header.is_object()) throw bad("JSON header is not an object");

  const uint64_t data_start = 8 + header_bytes;
  const uint64_t data_bytes = f.size() - data_start;
  Safetensors out;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const ordered_json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw bad("__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) throw bad("__metadata__ value of '", m.key(), "' is not a string");
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad_tensor = [&](auto&&... what) { return bad("tensor '", name, "': ", what...); };
    if (!v.is_object()) throw bad_tensor("entry is not an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw bad_tensor("missing string field 'dtype'");
    if (!v.contains("shape") || !v["shape"].is_array()) throw bad_tensor("missing array field 'shape'");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      throw bad_tensor("missing field 'data_offsets' [begin, end]");
    Entry e;
    e.name = name;
    const std::string dt = v["dtype"].get<std::string>();
    const DTypeName* found = nullptr;
    for (const DTypeName& d : kDTypes)
      if (dt == d.name) found = &d;
    if (!found)
      throw bad_tensor("unsupported dtype '", dt, "' (Strata reads F64 F32 F16 BF16 I64 I32 U8 BOOL)");
    e.dtype = found->dtype;
    uint64_t expect = element_size(e.dtype);
    bool overflow = false;
    for (const ordered_json& d : v["shape"]) {
      if (!d.is_number_unsigned())
        throw bad_tensor("shape ", v["shape"].dump(), " has a non-integer or negative entry");
      uint64_t n = d.get<uint64_t>();
      if (n > uint64_t(std::numeric_limits<int64_t>::max())) overflow = true;
      if (n != 0 && expect > std::numeric_limits<uint64_t>::max() / n) overflow = true;
      expect *= n;
      e.shape.push_back(int64_t(n));
    }
    if (overflow) throw bad_tensor("shape ", v["shape"].dump(), " overflows");
    const ordered_json& offs = v["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
      throw bad_tensor("data_offsets ", offs.dump(), " are not non-negative integers");
    e.begin = offs[0].get<uint64_t>();
    e.end = offs[1].get<uint64_t>();
    if (e.begin > e.end) throw bad_tensor("data_offsets [", e.begin, ", ", e.end, ") end before they begin");
    if (e.end > data_bytes)
      throw bad_tensor("data_offsets [", e.begin, ", ", e.end, ") (file offsets [", data_start + e.begin,
                       ", ", data_start + e.end, ")) lie past the end of the file (", data_bytes,
                       " data bytes: truncated?)");
    if (e.end - e.begin != expect)
      throw bad_tensor(found->name, shape_str(e.shape), " needs ", expect, " bytes but data_offsets [",
                       e.begin, ", ", e.end, ") hold ", e.end - e.begin);
    entries.push_back(std::move(e));
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.end == e.begin) continue;
    if (prev && prev->end > e.begin)
      throw bad("tensor '", e.name, "' data_offsets [", e.begin, ", ", e.end, ") overlap tensor '",
                prev->name, "' [", prev->begin, ", ", prev->end, ")");
    prev = &e;
  }
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype, kCPU);
    f.read_at(t.data_ptr(), e.end - e.begin, data_start + e.begin, "tensor '" + e.name + "'");
    out.tensors.insert(e.name, std::move(t));
  }
  return out;
}

void write_safetensors(const std::string& path, const nn::StateDict& tensors,
                       const std::map<std::string, std::string>& metadata) {
  NoGradGuard no_grad;
  std::vector<Tensor> host;
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) {
    ordered_json m = ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    STRATA_CHECK(name != "__metadata__", ValueError, "write_safetensors '", path,
                 "': '__metadata__' is reserved");
    STRATA_CHECK(t.defined() && !t.device().is_meta(), ValueError, "write_safetensors '", path, "': tensor '",
                 name, "' has no data");
    Tensor h = t.detach();
    if (!h.device().is_cpu()) h = h.to(kCPU);
    h = h.contiguous();
    header[name] = {{"dtype", safetensors_dtype(h.dtype())},
                    {"shape", h.shape()},
                    {"data_offsets", {offset, offset + h.nbytes()}}};
    offset += h.nbytes();
    host.push_back(std::move(h));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned, as the reference pads
  const uint64_t header_bytes = text.size();
  OutputFile out(path, /*atomic=*/true);
  out.write(&header_bytes, 8);
  out.write(text.data(), text.size());
  for (const Tensor& h : host) out.write(h.data_ptr(), h.nbytes());
  out.commit();
  fsync_directory(std::filesystem::path(path).parent_path().empty()
                      ? std::string(".")
                      : std::filesystem::path(path).parent_path().string());
}

}  // namespace strata::io
