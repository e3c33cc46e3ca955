// FixtureFile: reads the safetensors files the tools/goldens scripts write (F32/F64/I64); golden()
// reads one under tests/goldens once per process.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "strata/ops.h"

namespace strata::testing {

class FixtureFile {
 public:
  explicit FixtureFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw IoError("fixture '" + path + "' not found (run the tools/goldens script)");
    uint64_t n = 0;
    f.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, '\0');
    f.read(header.data(), std::streamsize(n));
    header_ = nlohmann::json::parse(header);
    data_.assign(std::istreambuf_iterator<char>(f), {});
  }
  bool has(const std::string& name) const { return header_.contains(name); }
  std::vector<std::string> names(const std::string& prefix) const {
    std::vector<std::string> out;
    for (auto it = header_.begin(); it != header_.end(); ++it)
      if (it.key().rfind(prefix, 0) == 0) out.push_back(it.key().substr(prefix.size()));
    return out;
  }
  std::string metadata(const std::string& key) const { return header_["__metadata__"][key].get<std::string>(); }
  // The tensor converted to `dtype` on the CPU.
  Tensor tensor(const std::string& name, DType dtype = DType::f64) const {
    const auto& e = header_.at(name);
    Shape shape = e["shape"].get<Shape>();
    const size_t b = e["data_offsets"][0].get<size_t>(), end = e["data_offsets"][1].get<size_t>();
    const std::string dt = e["dtype"].get<std::string>();
    std::vector<double> v;
    if (dt == "I64") {
      std::vector<int64_t> iv((end - b) / 8);
      std::memcpy(iv.data(), data_.data() + b, end - b);
      return ops::from_vector(iv, shape, dtype);
    }
    if (dt == "F32") {
      std::vector<float> fv((end - b) / 4);
      std::memcpy(fv.data(), data_.data() + b, end - b);
      v.assign(fv.begin(), fv.end());
    } else {
      v.resize((end - b) / 8);
      std::memcpy(v.data(), data_.data() + b, end - b);
    }
    return ops::from_vector(v, shape, dtype);
  }

 private:
  nlohmann::json header_;
  std::vector<char> data_;
};

// tests/goldens/<relative>, read on first use and kept (the test cases of a suite share it).
inline const FixtureFile& golden(const std::string& relative) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<FixtureFile>> files;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<FixtureFile>& f = files[relative];
  if (!f) f = std::make_unique<FixtureFile>(std::string(STRATA_TEST_DATA_DIR) + "/goldens/" + relative);
  return *f;
}

}  // namespace strata::testing
