// The loaders' fuzz targets: each hands arbitrary bytes to one loader, which must return a
// value or throw a strata::Error. Anything else (another exception, a crash, a sanitizer
// report, a huge allocation) is a defect. Run by the mutation runner in ctest
// (mutation_runner_test.cpp) and, built with clang, by libFuzzer (libfuzzer_main.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::fuzz {

struct Target {
  const char* name;  // also the seed corpus folder: tests/fuzz/corpus/<name>/
  void (*run)(const uint8_t* data, size_t size);
};

// Every target: checkpoint, safetensors, hf_gpt2, hf_bert, llmc_weights, token_shard, image,
// plan_text, hardware_text, graph_tool, edge_list, ogb_npy, planetoid, triples, feature_file.
const std::vector<Target>& targets();
// The target named `name`; throws std::invalid_argument for an unknown one.
const Target& target(const std::string& name);

// Writes each target's seeds (small valid inputs) as <dir>/<target>/seed_<n>.
void write_seeds(const std::string& dir);

}  // namespace strata::fuzz
