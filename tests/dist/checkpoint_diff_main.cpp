// strata_checkpoint_diff: compares two checkpoints' tensors bit for bit (ctest's data-parallel tests).
//   strata_checkpoint_diff DIR_A DIR_B [--skip SUBSTRING]...
// Exit 0 when every tensor of the model and the optimizer is in both with the same dtype, shape and
// bytes (tensors whose name holds a --skip substring are left out, e.g. BatchNorm's running
// statistics, which data parallel keeps per rank); else exit 1 naming the first that differs.
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

// The first difference between two state dicts' kept tensors, or "".
std::string first_difference(const char* group, const strata::nn::StateDict& a,
                             const strata::nn::StateDict& b, const std::vector<std::string>& skip) {
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
    if (std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) != 0)
      return std::string(group) + " tensor " + name + " " + x.str() + " differs";
  }
  if (kept_a != kept_b) return std::string(group) + ": the second has tensors the first lacks";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DIR_A DIR_B [--skip SUBSTRING]...\n", argv[0]);
    return 2;
  }
  std::vector<std::string> skip;
  for (int i = 3; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--skip") skip.push_back(argv[i + 1]);
  try {
    const strata::io::CheckpointState a = strata::io::load_checkpoint(argv[1]),
                                      b = strata::io::load_checkpoint(argv[2]);
    std::string diff = first_difference("model", a.model, b.model, skip);
    if (diff.empty()) diff = first_difference("optimizer", a.optimizer, b.optimizer, skip);
    if (!diff.empty()) {
      std::printf("%s and %s: %s\n", argv[1], argv[2], diff.c_str());
      return 1;
    }
    std::printf("%s and %s: %zu model and %zu optimizer tensors bit-identical\n", argv[1], argv[2],
                a.model.size(), a.optimizer.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_checkpoint_diff: %s\n", e.what());
    return 1;
  }
}
