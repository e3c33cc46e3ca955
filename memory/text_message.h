// parse_text_message: a plan's or hardware profile's protobuf text, with the parser's first error
// (line and column) kept for the caller's message. Private to memory/.
#pragma once

#include <string>

namespace google::protobuf {
class Message;
}

namespace strata::memory {

// Parses `text` into `message`; on failure returns false and sets `first_error` to the parser's
// first complaint ("line L, column C: ...").
bool parse_text_message(const std::string& text, google::protobuf::Message* message,
                        std::string* first_error);

}  // namespace strata::memory
