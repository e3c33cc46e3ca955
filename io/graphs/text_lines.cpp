#include "io/graphs/text_lines.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include "strata/core/error.h"

namespace strata::io {
namespace {

// Reads start at 64 KiB and double with the buffer up to 1 MiB: a small file never takes a large
// allocation (under AddressSanitizer, each one is an mmap and a poisoned shadow).
constexpr size_t kFirstChunk = size_t(64) << 10;
constexpr size_t kChunk = size_t(1) << 20;
// A line longer than this is not a graph file's line: reject it instead of buffering the file.
constexpr size_t kMaxLine = size_t(1) << 28;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The whole field (an optional leading '+' allowed) as a T, if it is one.
template <class T>
std::optional<T> parse_whole(std::string_view field) {
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  T v{};
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

LineReader::LineReader(std::string path) : source_(std::move(path)) {}

bool LineReader::next(std::string_view* line) {
  for (;;) {
    const char* start = buffer_.get() + begin_;
    const char* nl =
        end_ > begin_ ? static_cast<const char*>(std::memchr(start, '\n', end_ - begin_)) : nullptr;
    if (nl != nullptr || (at_end_ && begin_ < end_)) {
      size_t len = nl != nullptr ? size_t(nl - start) : end_ - begin_;
      begin_ += len + (nl != nullptr ? 1 : 0);
      if (len > 0 && start[len - 1] == '\r') --len;
      *line = std::string_view(start, len);
      ++line_;
      return true;
    }
    if (at_end_) return false;
    // Keep the partial line, then append the next chunk after it.
    if (begin_ > 0) {
      std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ > kMaxLine) {
      ++line_;
      fail("line longer than " + std::to_string(kMaxLine) + " bytes");
    }
    const size_t chunk = std::clamp(capacity_, kFirstChunk, kChunk);
    if (capacity_ < end_ + chunk) {
      capacity_ = std::max(end_ + chunk, 2 * capacity_);
      std::unique_ptr<char[]> grown = std::make_unique_for_overwrite<char[]>(capacity_);
      if (end_ > 0) std::memcpy(grown.get(), buffer_.get(), end_);
      buffer_ = std::move(grown);
    }
    size_t n = source_.read(buffer_.get() + end_, chunk);
    end_ += n;
    if (n == 0) at_end_ = true;
  }
}

std::string LineReader::where(const std::string& message) const {
  return detail::concat(source_.path(), ":", line_, ": ", message);
}

void LineReader::fail(const std::string& message) const { throw IoError(where(message)); }

int64_t LineReader::parse_int(std::string_view field, std::string_view what) const {
  std::optional<int64_t> v = to_int(field);
  if (!v) fail(detail::concat(what, " '", field, "' is not an integer"));
  return *v;
}

double LineReader::parse_double(std::string_view field, std::string_view what) const {
  std::optional<double> v = to_double(field);
  if (!v) fail(detail::concat(what, " '", field, "' is not a number"));
  return *v;
}

void split_fields(std::string_view line, FieldSeparator separator, std::vector<std::string_view>* fields) {
  fields->clear();
  if (separator == FieldSeparator::kCommaOrWhitespace && line.find(',') != std::string_view::npos) {
    for (;;) {
      size_t comma = line.find(',');
      fields->push_back(trim(line.substr(0, comma)));
      if (comma == std::string_view::npos) return;
      line.remove_prefix(comma + 1);
    }
  }
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_blank(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !is_blank(line[i])) ++i;
    if (i > start) fields->push_back(line.substr(start, i - start));
  }
}

bool is_comment_or_blank(std::string_view line) {
  line = trim(line);
  return line.empty() || line.front() == '#' || line.front() == '%';
}

std::optional<int64_t> to_int(std::string_view field) { return parse_whole<int64_t>(field); }

std::optional<double> to_double(std::string_view field) { return parse_whole<double>(field); }

bool is_header_row(std::string_view first_field) {
  if (first_field.empty()) return false;
  const unsigned char c = static_cast<unsigned char>(first_field.front());
  return std::isalpha(c) || c == '_' || c == '"' || c == '\'';
}

}  // namespace strata::io
