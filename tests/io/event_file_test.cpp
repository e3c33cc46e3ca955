// TensorBoard event files: TFRecord framing, masked CRC-32C, Event protos, read back and refused when
// corrupt.
#include "strata/io/report/event_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "strata/core/error.h"

using namespace strata;
using namespace strata::io;

namespace {

std::string temp_dir(const std::string& name) {
  auto d =
      std::filesystem::temp_directory_path() / ("strata_events_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

// TFRecord's masked CRC, against values computed independently (a bitwise CRC-32C in Python).
TEST(EventFile, MaskedCrcIsTfRecords) {
  const char length24[8] = {24, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(masked_crc32c(length24, 8), 0x224b7fa3u);
  EXPECT_EQ(masked_crc32c("hello", 5), 0x191c1fbbu);
}

// Scalars written are read back in order with their tags, steps, values and wall times; the file
// starts with the version record (its payload names "brain.Event:2") and is named as TensorBoard
// looks for it.
TEST(EventFile, ScalarsRoundTrip) {
  const std::string dir = temp_dir("round_trip");
  std::string path;
  {
    EventFileWriter w(dir, 1700000000.5);
    w.add_scalar("train/loss", 2.5f, 1, 1700000001.25);
    w.add_scalar("train/lr", 1e-3f, 1, 1700000001.25);
    w.add_scalar("train/loss", 2.25f, 2, 1700000002.0);
    w.flush();
    path = w.path();
  }
  EXPECT_EQ(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.1700000000.", 0), 0u);
  EXPECT_NE(read_all(path).find("brain.Event:2"), std::string::npos);
  const std::vector<ScalarEvent> e = read_scalar_events(path);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].tag, "train/loss");
  EXPECT_EQ(e[0].value, 2.5f);
  EXPECT_EQ(e[0].step, 1);
  EXPECT_EQ(e[0].wall_time, 1700000001.25);
  EXPECT_EQ(e[1].tag, "train/lr");
  EXPECT_EQ(e[1].value, 1e-3f);
  EXPECT_EQ(e[2].step, 2);
  EXPECT_EQ(e[2].value, 2.25f);
  std::filesystem::remove_all(dir);
}

// For the same scalars, wall times and writer name, the bytes TensorBoard's EventFileWriter wrote
// (the writer PyTorch's SummaryWriter wraps; tools/goldens/event_file_goldens.py made the fixture).
TEST(EventFile, BytesEqualWhatSummaryWriterWrites) {
  const std::string dir = temp_dir("summary_writer");
  std::string path;
  {
    EventFileWriter w(dir, 1700000000.5, "tensorboard.summary.writer.event_file_writer");
    w.add_scalar("train/loss", 2.5f, 1, 1700000001.25);
    w.add_scalar("train/lr", 0.001f, 1, 1700000001.25);
    w.add_scalar("train/loss", 2.25f, 2, 1700000002.0);
    w.add_scalar("memory/step_peak_mb", 123.456f, 2, 1700000002.0);
    w.add_scalar("cache/nvme_written_mb", 0.0f, 2, 1700000002.0);  // a zero is written too
    w.add_scalar("val/loss", 3.0e-7f, 100000, 1700009999.75);
    w.flush();
    path = w.path();
  }
  const std::string golden =
      read_all(std::string(STRATA_TEST_DATA_DIR) + "/goldens/report/summary_writer.tfevents");
  ASSERT_EQ(golden.size(), 394u);
  EXPECT_TRUE(read_all(path) == golden) << "the event file differs from TensorBoard's";
  std::filesystem::remove_all(dir);
}

// A flipped payload byte fails its record's CRC and a file cut inside a record is cut short: each an
// IoError naming the file and the record's byte offset.
TEST(EventFile, CorruptOrCutRecordsAreNamed) {
  const std::string dir = temp_dir("corrupt");
  std::string path;
  {
    EventFileWriter w(dir, 1700000000.0);
    w.add_scalar("a", 1.0f, 1, 1700000000.0);
    w.flush();
    path = w.path();
  }
  const std::string bytes = read_all(path);
  const size_t second = 12 + size_t(uint8_t(bytes[0])) + 4;  // the scalar's record
  std::string flipped = bytes;
  flipped[second + 14] ^= 0x20;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << flipped;
  try {
    read_scalar_events(path);
    ADD_FAILURE() << "a flipped byte was read";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("the record at byte " + std::to_string(second) + " fails its CRC"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 3);
  try {
    read_scalar_events(path);
    ADD_FAILURE() << "a cut file was read";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("the record at byte " + std::to_string(second)), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

// A --report path that is a file, not a folder, is refused naming it.
TEST(EventFile, AFileInPlaceOfTheFolderIsRefused) {
  const std::string dir = temp_dir("not_a_folder");
  std::ofstream(dir) << "x";
  EXPECT_THROW(EventFileWriter(dir, 1700000000.0), Error);
  std::filesystem::remove(dir);
}
