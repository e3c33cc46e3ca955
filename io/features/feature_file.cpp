// FeatureFileWriter: the .npy layout of numpy/lib/format.py, version 1: "\x93NUMPY", 1, 0, the
// header's length (uint16, little-endian), the header dict padded with spaces and a newline so
// that the data starts on a 64-byte boundary, then the rows.
#include "strata/io/features/feature_file.h"

#include "io/file_io.h"
#include "strata/core/error.h"

namespace strata::io {
namespace {

const char* npy_descr(DType dtype) {
  switch (dtype) {
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::f16: return "<f2";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::u8: return "|u1";
    default: return nullptr;
  }
}

std::string npy_preamble(DType dtype, int64_t rows, int64_t cols) {
  std::string dict = detail::concat("{'descr': '", npy_descr(dtype), "', 'fortran_order': False, 'shape': (",
                                    rows, ", ", cols, "), }");
  const size_t unpadded = 10 + dict.size() + 1;  // preamble, dict, newline
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(dict.size() & 0xff);
  out += char(dict.size() >> 8);
  return out + dict;
}

}  // namespace

struct FeatureFileWriter::File {
  OutputFile out;
  explicit File(const std::string& path) : out(path, /*atomic=*/true) {}
};

FeatureFileWriter::FeatureFileWriter(std::string path, int64_t num_rows, int64_t num_features, DType dtype)
    : path_(std::move(path)), num_rows_(num_rows), num_features_(num_features), dtype_(dtype) {
  STRATA_CHECK(npy_descr(dtype) != nullptr, TypeError, "feature file '", path_, "': dtype ",
               dtype_name(dtype), " has no .npy form here (f32, f64, f16, i32, i64, u8)");
  STRATA_CHECK(num_rows >= 0 && num_features >= 0, ValueError, "feature file '", path_, "': bad shape [",
               num_rows, ", ", num_features, "]");
  file_ = std::make_unique<File>(path_);
  const std::string preamble = npy_preamble(dtype, num_rows, num_features);
  file_->out.write(preamble.data(), preamble.size());
}

FeatureFileWriter::~FeatureFileWriter() = default;

void FeatureFileWriter::append(const Tensor& rows) {
  STRATA_CHECK(file_ != nullptr, ValueError, "feature file '", path_, "': append after commit");
  STRATA_CHECK(rows.defined() && rows.dim() == 2 && rows.size(1) == num_features_, ShapeError,
               "feature file '", path_, "': rows must be [k, ", num_features_, "], got ",
               rows.defined() ? rows.str() : "undefined");
  STRATA_CHECK(rows.dtype() == dtype_, TypeError, "feature file '", path_, "': rows must be ",
               dtype_name(dtype_), ", got ", rows.str());
  STRATA_CHECK(rows.device().is_host_memory(), DeviceError, "feature file '", path_,
               "': rows must be in host memory, got ", rows.str());
  STRATA_CHECK(written_ + rows.size(0) <= num_rows_, ValueError, "feature file '", path_,
               "': ", written_ + rows.size(0), " rows appended, the header says ", num_rows_);
  const Tensor c = rows.contiguous();
  if (c.nbytes() > 0) file_->out.write(c.data_ptr(), c.nbytes());
  written_ += rows.size(0);
}

void FeatureFileWriter::commit() {
  STRATA_CHECK(file_ != nullptr, ValueError, "feature file '", path_, "': committed twice");
  STRATA_CHECK(written_ == num_rows_, ValueError, "feature file '", path_, "': ", written_, " of ", num_rows_,
               " rows appended");
  file_->out.commit();
  file_.reset();
}

void write_feature_file(const std::string& path, const Tensor& features) {
  STRATA_CHECK(features.defined() && features.dim() == 2, ShapeError, "feature file '", path,
               "': features must be [N, F], got ", features.defined() ? features.str() : "undefined");
  FeatureFileWriter w(path, features.size(0), features.size(1), features.dtype());
  w.append(features);
  w.commit();
}

}  // namespace strata::io
