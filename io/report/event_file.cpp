#include "strata/io/report/event_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/report/tensorboard_event.pb.h"
#include "strata/core/crc32c.h"
#include "strata/core/error.h"
#include "strata/core/output_path.h"

namespace strata::io {

namespace {

void put_u32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | uint8_t(bytes[at + size_t(i)]);
  return v;
}

}  // namespace

uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t crc = crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

EventFileWriter::EventFileWriter(const std::string& dir, double wall_time, const std::string& writer) {
  check_output_folder(dir, "event file folder");
  std::filesystem::create_directories(dir);
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  path_ = (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(int64_t(wall_time)) + "." +
                                         host + "." + std::to_string(::getpid()) + ".0"))
              .string();
  file_ = std::fopen(path_.c_str(), "wb");
  STRATA_CHECK(file_ != nullptr, IoError, "event file '", path_, "': cannot create it (",
               std::strerror(errno), ")");
  proto::Event version;
  version.set_wall_time(wall_time);
  version.set_file_version("brain.Event:2");
  version.mutable_source_metadata()->set_writer(writer);
  try {
    write_record(version.SerializeAsString());
    flush();
  } catch (...) {  // the destructor does not run for a constructor that throws
    std::fclose(file_);
    file_ = nullptr;
    throw;
  }
}

EventFileWriter::~EventFileWriter() {
  if (file_) std::fclose(file_);
}

void EventFileWriter::add_scalar(const std::string& tag, float value, int64_t step, double wall_time) {
  proto::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  proto::SummaryValue* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  write_record(e.SerializeAsString());
}

void EventFileWriter::write_record(const std::string& payload) {
  std::string record;
  const uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i) record.push_back(char((n >> (8 * i)) & 0xff));
  put_u32(&record, masked_crc32c(record.data(), 8));
  record += payload;
  put_u32(&record, masked_crc32c(payload.data(), payload.size()));
  STRATA_CHECK(std::fwrite(record.data(), 1, record.size(), file_) == record.size(), IoError, "event file '",
               path_, "': write failed (", std::strerror(errno), ")");
}

void EventFileWriter::flush() {
  STRATA_CHECK(std::fflush(file_) == 0, IoError, "event file '", path_, "': write failed (",
               std::strerror(errno), ")");
}

std::vector<ScalarEvent> read_scalar_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  STRATA_CHECK(in.good(), IoError, "event file '", path, "': cannot open it");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<ScalarEvent> out;
  for (size_t at = 0; at < bytes.size();) {
    STRATA_CHECK(bytes.size() - at >= 12, IoError, "event file '", path, "': record at byte ", at,
                 " is cut short (", bytes.size() - at, " bytes left of its 12-byte header)");
    const uint64_t n = get_le(bytes, at, 8);
    STRATA_CHECK(uint32_t(get_le(bytes, at + 8, 4)) == masked_crc32c(bytes.data() + at, 8), IoError,
                 "event file '", path, "': the length of the record at byte ", at, " fails its CRC");
    STRATA_CHECK(n <= bytes.size() - at - 12 && bytes.size() - at - 12 - n >= 4, IoError, "event file '",
                 path, "': the record at byte ", at, " says ", n, " bytes, and the file ends first");
    const char* payload = bytes.data() + at + 12;
    STRATA_CHECK(uint32_t(get_le(bytes, at + 12 + n, 4)) == masked_crc32c(payload, n), IoError,
                 "event file '", path, "': the record at byte ", at, " fails its CRC");
    proto::Event e;
    STRATA_CHECK(e.ParseFromArray(payload, int(n)), IoError, "event file '", path, "': the record at byte ",
                 at, " is not an Event");
    for (const proto::SummaryValue& v : e.summary().value())
      out.push_back({v.tag(), v.simple_value(), e.step(), e.wall_time()});
    at += 12 + n + 4;
  }
  return out;
}

}  // namespace strata::io
