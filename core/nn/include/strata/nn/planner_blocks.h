// planner_blocks: a model's planner blocks (the modules marked as blocks) in forward order, and the
// block each parameter belongs to: its innermost one.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "strata/nn/module.h"

namespace strata::nn {

struct PlannerBlocks {
  std::vector<std::string> paths;                          // named_modules() paths, forward order
  std::unordered_map<const TensorImpl*, size_t> block_of;  // parameter -> index into paths
};

PlannerBlocks planner_blocks(const Module& model);

}  // namespace strata::nn
