#include "io/weights/hf_model_dir.h"

#include <filesystem>

#include "strata/core/error.h"
#include "strata/core/output_path.h"

namespace strata::io {

void make_hf_model_dir(const std::string& dir) {
  check_output_folder(dir, "HF export");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  STRATA_CHECK(!ec && std::filesystem::is_directory(dir), IoError, "HF export: cannot create the directory '",
               dir, "'", ec ? " (" + ec.message() + ")" : "");
}

void write_hf_config(const std::string& dir, const nlohmann::ordered_json& config) {
  const std::string text = config.dump(2) + "\n";
  write_file_atomically((std::filesystem::path(dir) / "config.json").string(), text, "export");
}

}  // namespace strata::io
