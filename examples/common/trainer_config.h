// How a trainer reads its settings: the command line through CLI11, and a --config file in
// protobuf text format (the trainer's config message), which the flags override.
#pragma once

#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace strata::examples {

// Parses argv with `app`. Returns false when --help was printed; a parse error throws ValueError
// "<program>: <error> (see --help)".
bool parse_command_line(CLI::App& app, int argc, char** argv, const std::string& program);

// Reads the protobuf text file `path` into `config`. Throws IoError when it cannot be opened and
// ValueError "<program>: config '<path>' is not a valid <message> in protobuf text format".
void read_config_file(const std::string& path, const std::string& program, google::protobuf::Message* config);

}  // namespace strata::examples
