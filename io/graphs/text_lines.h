// LineReader and field parsing: what the text graph formats (edge lists, CSV, OGB's raw files,
// Planetoid's .content and .cites) share; every error names "file:line".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/graphs/compressed_file.h"

namespace strata::io {

// The lines of a text file (gunzipped when gzip'd), streamed with their 1-based numbers.
class LineReader {
 public:
  explicit LineReader(std::string path);

  // The next line without its "\n" or "\r\n"; false at the end of the file. The view stays
  // valid until the next call.
  bool next(std::string_view* line);
  // The number of the line next() returned last.
  int64_t line_number() const { return line_; }
  const std::string& path() const { return source_.path(); }
  // "<file>:<line>: <message>" (the line number of the last line returned).
  std::string where(const std::string& message) const;
  [[noreturn]] void fail(const std::string& message) const;

  // A whole field as an integer or a float ("nan" included); fail() naming `what` otherwise.
  int64_t parse_int(std::string_view field, std::string_view what) const;
  double parse_double(std::string_view field, std::string_view what) const;

 private:
  DecompressedReader source_;
  // Bytes [begin_, end_) not yet returned; uninitialized beyond end_, so a small file touches only
  // the pages it fills, not a zeroed chunk.
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0, begin_ = 0, end_ = 0;
  bool at_end_ = false;
  int64_t line_ = 0;
};

enum class FieldSeparator {
  kCommaOrWhitespace,  // commas when the line has one (fields trimmed), else runs of blanks
  kWhitespace,         // runs of spaces and tabs
};

// Splits `line` into `fields` (cleared first).
void split_fields(std::string_view line, FieldSeparator separator, std::vector<std::string_view>* fields);
// True for a line that is empty, blank, or whose first non-blank character is '#' or '%'.
bool is_comment_or_blank(std::string_view line);
// The whole field as an integer (an optional leading '-' or '+'), if it is one.
std::optional<int64_t> to_int(std::string_view field);
std::optional<double> to_double(std::string_view field);

// Whether a file's first row is a header ("src,dst", "id label f0"): its first field starts with a
// letter, an underscore or a quote. A row that starts like a number ("0.5 1", "0x1 0x2") is data,
// and an error when it does not parse, instead of being dropped without a word.
bool is_header_row(std::string_view first_field);

}  // namespace strata::io
