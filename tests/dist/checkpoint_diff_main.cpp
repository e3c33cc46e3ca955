// strata_checkpoint_diff: compares two checkpoints' tensors bit for bit (ctest's data-parallel tests).
//   strata_checkpoint_diff DIR_A DIR_B [--skip SUBSTRING]... [--tolerance REL]
// Exit 0 when every tensor of the model and the optimizer is in both with the same dtype, shape and
// bytes (tensors whose name holds a --skip substring are left out, e.g. BatchNorm's running
// statistics, which data parallel keeps per rank); else exit 1 naming the first that differs.
// With --tolerance, floating tensors may differ by up to REL times the second's largest magnitude
// (sums taken in another order), and the largest such difference is printed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "strata/io/checkpoint/checkpoint.h"

namespace {

bool skipped(const std::string& name, const std::vector<std::string>& skip) {
  for (const std::string& s : skip)
    if (name.find(s) != std::string::npos) return true;
  return false;
}

struct Options {
  std::vector<std::string> skip;
  double tolerance = -1;  // < 0: bit for bit
  double largest = 0;     // the largest relative difference allowed so far
};

// max |x - y| / max |y| over two floating tensors of one shape.
double relative_difference(const strata::Tensor& x, const strata::Tensor& y) {
  const std::vector<double> a = x.to_double_vector(), b = y.to_double_vector();
  double scale = 0, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(b[i]));
    diff = std::max(diff, std::fabs(a[i] - b[i]));
  }
  return diff == 0 ? 0 : diff / std::max(scale, 1e-30);
}

// The first difference between two state dicts' kept tensors, or "".
std::string first_difference(const char* group, const strata::nn::StateDict& a,
                             const strata::nn::StateDict& b, Options& o) {
  const std::vector<std::string>& skip = o.skip;
  size_t kept_a = 0, kept_b = 0;
  for (const auto& [name, t] : b)
    if (!skipped(name, skip)) ++kept_b;
  for (const auto& [name, ta] : a) {
    if (skipped(name, skip)) continue;
    ++kept_a;
    if (!b.contains(name)) return std::string(group) + " tensor " + name + " is only in the first";
    const strata::Tensor x = ta.contiguous().to(strata::kCPU), y = b.at(name).contiguous().to(strata::kCPU);
    if (x.dtype() != y.dtype() || x.shape() != y.shape())
      return std::string(group) + " tensor " + name + ": " + x.str() + " against " + y.str();
    if (std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0) continue;
    if (o.tolerance >= 0 && strata::is_floating(x.dtype())) {
      const double rel = relative_difference(x, y);
      o.largest = std::max(o.largest, rel);
      if (rel <= o.tolerance) continue;
      char what[160];
      std::snprintf(what, sizeof what, " differs by %.3g of its largest magnitude, over the tolerance %g",
                    rel, o.tolerance);
      return std::string(group) + " tensor " + name + " " + x.str() + what;
    }
    return std::string(group) + " tensor " + name + " " + x.str() + " differs";
  }
  if (kept_a != kept_b) return std::string(group) + ": the second has tensors the first lacks";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DIR_A DIR_B [--skip SUBSTRING]... [--tolerance REL]\n", argv[0]);
    return 2;
  }
  Options o;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--skip") {
      o.skip.push_back(argv[i + 1]);
    } else if (flag == "--tolerance") {
      o.tolerance = std::stod(argv[i + 1]);
    } else {
      std::fprintf(stderr, "strata_checkpoint_diff: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  try {
    const strata::io::CheckpointState a = strata::io::load_checkpoint(argv[1]),
                                      b = strata::io::load_checkpoint(argv[2]);
    std::string diff = first_difference("model", a.model, b.model, o);
    if (diff.empty()) diff = first_difference("optimizer", a.optimizer, b.optimizer, o);
    if (!diff.empty()) {
      std::printf("%s and %s: %s\n", argv[1], argv[2], diff.c_str());
      return 1;
    }
    if (o.tolerance < 0)
      std::printf("%s and %s: %zu model and %zu optimizer tensors bit-identical\n", argv[1], argv[2],
                  a.model.size(), a.optimizer.size());
    else
      std::printf(
          "%s and %s: %zu model and %zu optimizer tensors equal within %g (largest difference %.3g)\n",
          argv[1], argv[2], a.model.size(), a.optimizer.size(), o.tolerance, o.largest);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_checkpoint_diff: %s\n", e.what());
    return 1;
  }
}
