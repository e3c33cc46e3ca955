#include "examples/common/trainer_config.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>
#include <iterator>

#include "strata/core/error.h"

namespace strata::examples {

bool parse_command_line(CLI::App& app, int argc, char** argv, const std::string& program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    app.exit(e);
    return false;
  } catch (const CLI::ParseError& e) {
    throw ValueError(program + ": " + e.what() + " (see --help)");
  }
  return true;
}

void read_config_file(const std::string& path, const std::string& program, google::protobuf::Message* config) {
  std::ifstream in(path);
  STRATA_CHECK(in.good(), IoError, program, ": cannot open config '", path, "'");
  std::string textproto((std::istreambuf_iterator<char>(in)), {});
  STRATA_CHECK(google::protobuf::TextFormat::ParseFromString(textproto, config), ValueError, program, ": config '",
               path, "' is not a valid ", config->GetDescriptor()->name(), " in protobuf text format");
}

}  // namespace strata::examples
