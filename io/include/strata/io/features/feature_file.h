// FeatureFileWriter: node features written as a NumPy .npy file (version 1, C order, [N, F]),
// the file MappedFeatureStore maps; slice by slice, so a table larger than memory can be written.
//
//   io::FeatureFileWriter w("feat.npy", N, F, DType::f32);
//   for (...) w.append(slice);  // [k, F] rows, in order
//   w.commit();                  // fsync and rename into place
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "strata/core/dtype.h"
#include "strata/core/tensor.h"

namespace strata::io {

class FeatureFileWriter {
 public:
  // dtype: f32, f64, f16, i32, i64 or u8 (what .npy and MappedFeatureStore share; TypeError
  // otherwise). The rows go to a temporary file beside `path` until commit().
  FeatureFileWriter(std::string path, int64_t num_rows, int64_t num_features, DType dtype);
  ~FeatureFileWriter();  // without commit(): removes what it wrote
  FeatureFileWriter(const FeatureFileWriter&) = delete;
  FeatureFileWriter& operator=(const FeatureFileWriter&) = delete;

  // The next rows: [k, F] of the writer's dtype in host memory (ShapeError, TypeError, and
  // ValueError past num_rows).
  void append(const Tensor& rows);
  int64_t rows_written() const { return written_; }
  // ValueError unless all num_rows rows were appended; IoError when the file cannot be finished.
  void commit();

 private:
  struct File;
  std::string path_;
  int64_t num_rows_, num_features_, written_ = 0;
  DType dtype_;
  std::unique_ptr<File> file_;
};

// `features` ([N, F] in host memory) written to `path` in one go.
void write_feature_file(const std::string& path, const Tensor& features);

}  // namespace strata::io
