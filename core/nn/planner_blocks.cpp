#include "strata/nn/planner_blocks.h"

namespace strata::nn {

PlannerBlocks planner_blocks(const Module& model) {
  PlannerBlocks out;
  // named_modules() is preorder: an inner block comes after the block around it and takes its
  // parameters over.
  for (const auto& [path, module] : model.named_modules()) {
    if (!module->is_block()) continue;
    const size_t b = out.paths.size();
    out.paths.push_back(path);
    for (const auto& [name, p] : module->named_parameters()) out.block_of[p.impl()] = b;
  }
  return out;
}

}  // namespace strata::nn
