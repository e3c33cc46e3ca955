// ConfigFlags: command-line flags bound to the fields of a trainer's config message, written over a --config
// file; --help shows each flag's default from the trainer's defaults message, the one place they are
// written.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace strata::examples {

class ConfigFlags {
 public:
  // Adds --config FILE to `app`. `flags` is an empty message of the trainer's config type, which
  // the flags given are written into; `program` starts the error messages.
  ConfigFlags(CLI::App& app, std::string program, google::protobuf::Message* flags);

  // A flag taking a value, written into `field` (a field name) of `msg`: `flags` or a message
  // inside it. `names` in CLI11's syntax ("-b,--batch-size"); empty: --<field, '_' as '-'>.
  CLI::Option* option(google::protobuf::Message* msg, const std::string& field, const std::string& names = "",
                      const std::string& help = "");
  // A flag without a value that sets the bool `field` to true; `names` empty: --<field>{true}.
  CLI::Option* flag(google::protobuf::Message* msg, const std::string& field, const std::string& names = "",
                    const std::string& help = "");

  // Parses argv. Returns false when --help was printed; a parse error throws ValueError
  // "<program>: <error> (see --help)". Then `config` (of the flags' type) is the --config file's
  // message with `flags` merged over it: only the fields a flag set replace the file's.
  // `defaults` (of the flags' type, or null): what --help shows as each flag's default ("=value"),
  // for the fields it sets.
  bool parse(int argc, char** argv, google::protobuf::Message* config,
             const google::protobuf::Message* defaults = nullptr);

 private:
  CLI::Option* bind(bool is_flag, google::protobuf::Message* msg, const std::string& field, std::string names,
                    const std::string& help);
  // Gives each bound option the value of its field in `defaults` as its --help default.
  void show_defaults(const google::protobuf::Message& defaults);

  struct Bound {
    google::protobuf::Message* msg;  // flags_ or a message inside it
    std::string field;
    CLI::Option* option;
  };
  std::vector<Bound> bound_;

  CLI::App& app_;
  std::string program_, config_path_;
  google::protobuf::Message* flags_;
  // After parsing, each flag given writes its value into its field.
  std::vector<std::function<void()>> writes_;
};

}  // namespace strata::examples
