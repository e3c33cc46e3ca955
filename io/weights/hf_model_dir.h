// A Hugging Face model directory as the exporters write it: created first, config.json beside the
// weights written atomically.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace strata::io {

// Creates `dir` (and its parents); IoError naming it when that fails.
void make_hf_model_dir(const std::string& dir);
// Writes `config` to <dir>/config.json (indented, atomically).
void write_hf_config(const std::string& dir, const nlohmann::ordered_json& config);

}  // namespace strata::io
