#include "examples/common/config_flags.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "strata/core/error.h"

namespace strata::examples {

namespace {

namespace pb = google::protobuf;

// The flag fills a std::optional<T> through CLI11's own add_option / add_flag for that type, so
// its type name in --help, its conversions and their errors, and a flag's `--resume=false` are
// CLI11's; the value is written into the message after parsing, and only when the flag was given.
template <class T>
CLI::Option* add_flag_of(CLI::App& app, bool is_flag, const std::string& names, const std::string& help,
                         std::vector<std::function<void()>>& writes, std::function<void(const T&)> write) {
  auto value = std::make_shared<std::optional<T>>();
  CLI::Option* opt = nullptr;
  if constexpr (std::is_same_v<T, bool>)
    opt = is_flag ? app.add_flag(names, *value, help) : app.add_option(names, *value, help);
  else
    opt = app.add_option(names, *value, help);
  writes.push_back([value, write] {
    if (*value) write(**value);
  });
  return opt;
}

void read_config_file(const std::string& path, pb::Message* config) {
  STRATA_CHECK(std::filesystem::is_regular_file(path), IoError, "--config '", path, "' ",
               std::filesystem::is_directory(path) ? "is a directory" : "does not exist", ", not a file");
  std::ifstream in(path);
  STRATA_CHECK(in.good(), IoError, "cannot open --config '", path, "'");
  std::string textproto((std::istreambuf_iterator<char>(in)), {});
  STRATA_CHECK(pb::TextFormat::ParseFromString(textproto, config), ValueError, "config '", path,
               "' is not a valid ", config->GetDescriptor()->name(), " in protobuf text format");
}

// CLI11 reads whole numbers with strtoull/strtoll, which take "-1" for 2^64 - 1 and saturate a
// value past the type's range: each integer flag checks its text first.
template <class T>
CLI::Validator whole_number_in_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const char* b = text.data();
        const char* e = b + text.size();
        if (std::is_unsigned_v<T> && b != e && *b == '-') return text + " is negative";
        T v{};
        const auto [end, ec] = std::from_chars(b, e, v);
        if (ec == std::errc::result_out_of_range)
          return text + " is outside [" + std::to_string(std::numeric_limits<T>::min()) + ", " +
                 std::to_string(std::numeric_limits<T>::max()) + "]";
        if (ec != std::errc() || end != e) return text + " is not a whole number";
        return "";
      },
      "", "whole number in range");
}

// The fields leading from `root` to the message `target` inside it (empty: root itself); false when
// target is not inside root.
bool path_to(const pb::Message& root, const pb::Message* target,
             std::vector<const pb::FieldDescriptor*>* path) {
  if (&root == target) return true;
  const pb::Descriptor* type = root.GetDescriptor();
  const pb::Reflection* r = root.GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* fd = type->field(i);
    if (fd->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE || fd->is_repeated() || !r->HasField(root, fd))
      continue;
    path->push_back(fd);
    if (path_to(r->GetMessage(root, fd), target, path)) return true;
    path->pop_back();
  }
  return false;
}

// A scalar field's value as a flag takes it.
std::string field_text(const pb::Message& m, const pb::FieldDescriptor* fd) {
  const pb::Reflection* r = m.GetReflection();
  switch (fd->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT64: return std::to_string(r->GetInt64(m, fd));
    case pb::FieldDescriptor::CPPTYPE_UINT64: return std::to_string(r->GetUInt64(m, fd));
    case pb::FieldDescriptor::CPPTYPE_BOOL: return r->GetBool(m, fd) ? "true" : "false";
    case pb::FieldDescriptor::CPPTYPE_STRING: return r->GetString(m, fd);
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
      char text[32];
      const auto [end, ec] = std::to_chars(text, text + sizeof text, r->GetDouble(m, fd));  // shortest exact
      return std::string(text, ec == std::errc() ? end : text);
    }
    default: return "";
  }
}

}  // namespace

ConfigFlags::ConfigFlags(CLI::App& app, std::string program, pb::Message* flags)
    : app_(app), program_(std::move(program)), flags_(flags) {
  app_.add_option("--config", config_path_,
                  "protobuf text file (" + flags->GetDescriptor()->name() + "); flags override it");
}

CLI::Option* ConfigFlags::option(pb::Message* msg, const std::string& field, const std::string& names,
                                 const std::string& help) {
  return bind(false, msg, field, names, help);
}

CLI::Option* ConfigFlags::flag(pb::Message* msg, const std::string& field, const std::string& names,
                               const std::string& help) {
  return bind(true, msg, field, names, help);
}

CLI::Option* ConfigFlags::bind(bool is_flag, pb::Message* msg, const std::string& field, std::string names,
                               const std::string& help) {
  const pb::Descriptor* type = msg->GetDescriptor();
  const pb::FieldDescriptor* fd = type->FindFieldByName(field);
  // Presence is what lets a flag that was not given leave the config file's value alone.
  STRATA_CHECK(fd && !fd->is_repeated() && fd->has_presence() &&
                   fd->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE,
               ValueError, program_, ": ", type->name(), " has no optional scalar field '", field, "'");
  STRATA_CHECK(!is_flag || fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_BOOL, ValueError, program_, ": ",
               type->name(), ".", field, " is not a bool, so it cannot be a flag without a value");
  if (names.empty()) {
    names = "--" + field;
    std::replace(names.begin(), names.end(), '_', '-');
    if (is_flag) names += "{true}";
  }
  const pb::Reflection* r = msg->GetReflection();
  CLI::Option* opt = nullptr;
  switch (fd->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT64:
      opt = add_flag_of<int64_t>(app_, is_flag, names, help, writes_, [=](const int64_t& v) {
              r->SetInt64(msg, fd, v);
            })->check(whole_number_in_range<int64_t>());
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      opt = add_flag_of<uint64_t>(app_, is_flag, names, help, writes_, [=](const uint64_t& v) {
              r->SetUInt64(msg, fd, v);
            })->check(whole_number_in_range<uint64_t>());
      break;
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      opt = add_flag_of<double>(app_, is_flag, names, help, writes_,
                                [=](const double& v) { r->SetDouble(msg, fd, v); });
      break;
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      opt = add_flag_of<bool>(app_, is_flag, names, help, writes_,
                              [=](const bool& v) { r->SetBool(msg, fd, v); });
      break;
    case pb::FieldDescriptor::CPPTYPE_STRING:
      opt = add_flag_of<std::string>(app_, is_flag, names, help, writes_,
                                     [=](const std::string& v) { r->SetString(msg, fd, v); });
      break;
    default: throw ValueError(program_ + ": " + type->name() + "." + field + " has a type no flag takes");
  }
  bound_.push_back({msg, field, opt});
  return opt;
}

void ConfigFlags::show_defaults(const pb::Message& defaults) {
  STRATA_CHECK(defaults.GetDescriptor() == flags_->GetDescriptor(), ValueError, program_,
               ": the defaults are a ", defaults.GetDescriptor()->name(), ", the flags a ",
               flags_->GetDescriptor()->name());
  for (const Bound& b : bound_) {
    std::vector<const pb::FieldDescriptor*> path;
    if (!path_to(*flags_, b.msg, &path)) continue;
    const pb::Message* m = &defaults;
    for (const pb::FieldDescriptor* fd : path) m = &m->GetReflection()->GetMessage(*m, fd);
    const pb::FieldDescriptor* fd = m->GetDescriptor()->FindFieldByName(b.field);
    if (m->GetReflection()->HasField(*m, fd)) b.option->default_str(field_text(*m, fd));
  }
}

bool ConfigFlags::parse(int argc, char** argv, pb::Message* config, const pb::Message* defaults) {
  STRATA_CHECK(config->GetDescriptor() == flags_->GetDescriptor(), ValueError, program_, ": the config is a ",
               config->GetDescriptor()->name(), ", the flags a ", flags_->GetDescriptor()->name());
  if (defaults) show_defaults(*defaults);
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    app_.exit(e);
    return false;
  } catch (const CLI::ParseError& e) {
    throw ValueError(std::string(e.what()) + " (see --help)");  // main() names the program
  }
  for (const std::function<void()>& write : writes_) write();
  config->Clear();
  if (!config_path_.empty()) read_config_file(config_path_, config);
  // Scalars with presence replace the file's only where a flag set them; messages merge field by field.
  config->MergeFrom(*flags_);
  return true;
}

}  // namespace strata::examples
