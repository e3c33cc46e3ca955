// TensorBoard event files of scalars, written and read as PyTorch's SummaryWriter and TensorBoard do.
//
// A file is a sequence of TFRecords, each: the payload's length (u64, little-endian), the masked
// CRC-32C of those 8 bytes, the payload, the masked CRC-32C of the payload; a masked CRC is
// ((crc >> 15) | (crc << 17)) + 0xa282ead8. Each payload is an Event proto: the first one names the
// file version ("brain.Event:2") and the writer, each one after holds a scalar (tag, float value,
// step, wall time). For the same scalars, wall times and writer name the bytes are those of
// TensorBoard's EventFileWriter (tests/goldens/report/summary_writer.tfevents).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace strata::io {

struct ScalarEvent {
  std::string tag;
  float value = 0;
  int64_t step = 0;
  double wall_time = 0;  // seconds since the epoch
};

// TFRecord's masked CRC-32C of `n` bytes.
uint32_t masked_crc32c(const void* data, size_t n);

class EventFileWriter {
 public:
  // Creates <dir>/events.out.tfevents.<wall seconds>.<host>.<pid>.0 (the folder is made when
  // missing; an existing path that is not a folder, or a file that cannot be created, is an IoError
  // naming it) and writes its version record stamped `wall_time`, naming `writer` as its source
  // (TensorBoard's own writer, which SummaryWriter uses, names itself
  // "tensorboard.summary.writer.event_file_writer").
  EventFileWriter(const std::string& dir, double wall_time, const std::string& writer = "strata");
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void add_scalar(const std::string& tag, float value, int64_t step, double wall_time);
  // Pushes what was written to the file (IoError naming it when the write failed).
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& payload);
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Every scalar of an event file, in order, each record's CRCs checked: IoError naming the file and
// the byte offset of a record that is cut short or corrupt.
std::vector<ScalarEvent> read_scalar_events(const std::string& path);

}  // namespace strata::io
