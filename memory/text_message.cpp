#include "memory/text_message.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

namespace strata::memory {

namespace {

class FirstErrorCollector final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first.empty())
      first = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};

}  // namespace

bool parse_text_message(const std::string& text, google::protobuf::Message* message,
                        std::string* first_error) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  const bool ok = parser.ParseFromString(text, message);
  if (!ok && first_error) *first_error = errors.first;
  return ok;
}

}  // namespace strata::memory
