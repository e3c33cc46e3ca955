// Output paths: a write never goes through or renames over a FIFO, a device node or a folder, its
// temporary file sits hidden in the target's folder and is gone afterwards, a symbolic link to a
// file is replaced and the file it pointed to kept; every writer that takes a path (plans,
// hardware profiles, traces, safetensors, io's OutputFile) refuses the same way.
#include "strata/core/output_path.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "io/file_io.h"
#include "strata/core/factory.h"
#include "strata/io/weights/safetensors.h"
#include "strata/memory/plan.h"
#include "strata/memory/planner/hardware.h"
#include "support/loader_files.h"

namespace strata {
namespace {

using testing::io_error;
using testing::TempDir;
namespace fs = std::filesystem;

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> n;
  for (const auto& e : fs::directory_iterator(dir)) n.insert(e.path().filename().string());
  return n;
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool is_fifo(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

TEST(OutputPath, WritesAndLeavesNothingBeside) {
  TempDir d;
  write_file_atomically(d.file("out.txt"), std::string("first"), "test");
  write_file_atomically(d.file("out.txt"), std::string("second"), "test");
  EXPECT_EQ(read(d.file("out.txt")), "second");
  EXPECT_EQ(names_in(d.path), std::set<std::string>{"out.txt"});
}

TEST(OutputPath, TemporaryNamesAreHiddenInTheTargetsFolder) {
  EXPECT_EQ(temporary_beside("a/b/c.txt").rfind("a/b/.c.txt.tmp.", 0), 0u) << temporary_beside("a/b/c.txt");
  EXPECT_EQ(temporary_beside("c.txt").rfind(".c.txt.tmp.", 0), 0u) << temporary_beside("c.txt");
  EXPECT_NE(temporary_beside("c.txt"), temporary_beside("c.txt")) << "two writers share a temporary name";
}

TEST(OutputPath, RefusesAFifoAndLeavesIt) {
  TempDir d;
  const std::string fifo = d.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string msg = io_error([&] { write_file_atomically(fifo, std::string("x"), "save_plan"); });
  EXPECT_NE(msg.find("save_plan: refusing to write '" + fifo + "': it is a FIFO, not a regular file"),
            std::string::npos)
      << msg;
  EXPECT_TRUE(is_fifo(fifo));
  EXPECT_EQ(names_in(d.path), std::set<std::string>{"pipe"});
  // io's OutputFile (safetensors, checkpoints, images, features) and non-atomic writes too: an
  // open for writing would block on the FIFO, or write through a device.
  for (bool atomic : {true, false}) {
    const std::string m = io_error([&] { io::OutputFile f(fifo, atomic); });
    EXPECT_NE(m.find("it is a FIFO"), std::string::npos) << m;
  }
  EXPECT_TRUE(is_fifo(fifo));
}

TEST(OutputPath, RefusesADeviceNodeAndAFolder) {
  const std::string dev = io_error([] { write_file_atomically("/dev/null", std::string("x"), "export"); });
  EXPECT_NE(dev.find("export: refusing to write '/dev/null': it is a character device"), std::string::npos)
      << dev;
  TempDir d;
  const std::string sub = d.file("plans");
  fs::create_directories(sub);
  memory::Plan plan;
  const std::string msg = io_error([&] { memory::save_plan(plan, sub); });
  EXPECT_NE(msg.find("save_plan: refusing to write '" + sub + "': it is a folder"), std::string::npos) << msg;
  // Nothing was made beside it (the old writer left '<folder>.tmp' in the parent).
  EXPECT_EQ(names_in(d.path), std::set<std::string>{"plans"});
  EXPECT_TRUE(names_in(sub).empty());
  const std::string hw = io_error([&] { memory::planner::save_hardware_profile({}, sub); });
  EXPECT_NE(hw.find("it is a folder"), std::string::npos) << hw;
}

TEST(OutputPath, ASymbolicLinkIsReplacedAndItsTargetKept) {
  TempDir d;
  write_file_atomically(d.file("kept.txt"), std::string("old"), "test");
  ASSERT_EQ(::symlink("kept.txt", d.file("link.txt").c_str()), 0);
  write_file_atomically(d.file("link.txt"), std::string("new"), "test");
  EXPECT_EQ(read(d.file("kept.txt")), "old");
  EXPECT_EQ(read(d.file("link.txt")), "new");
  EXPECT_FALSE(fs::is_symlink(d.file("link.txt")));
  // A link to a FIFO is refused like the FIFO.
  ASSERT_EQ(::mkfifo(d.file("pipe").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("pipe", d.file("to_pipe").c_str()), 0);
  const std::string msg =
      io_error([&] { write_file_atomically(d.file("to_pipe"), std::string("x"), "test"); });
  EXPECT_NE(msg.find("it is a FIFO"), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_symlink(d.file("to_pipe")));
}

TEST(OutputPath, FoldersMustBeFolders) {
  TempDir d;
  EXPECT_NO_THROW(check_output_folder(d.path, "export"));
  EXPECT_NO_THROW(check_output_folder(d.file("new"), "export"));
  write_file_atomically(d.file("file"), std::string("x"), "test");
  const std::string msg = io_error([&] { check_output_folder(d.file("file"), "HF export"); });
  EXPECT_NE(
      msg.find("HF export: refusing to write the folder '" + d.file("file") + "': it is a regular file"),
      std::string::npos)
      << msg;
}

TEST(OutputPath, SafetensorsRefuseAFifo) {
  TempDir d;
  const std::string fifo = d.file("data.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  nn::StateDict t;
  t.insert("x", zeros({2, 2}));
  const std::string msg = io_error([&] { io::write_safetensors(fifo, t); });
  EXPECT_NE(msg.find("it is a FIFO"), std::string::npos) << msg;
  EXPECT_TRUE(is_fifo(fifo));
}

}  // namespace
}  // namespace strata
