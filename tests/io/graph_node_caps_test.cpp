// Node counts a graph file implies (its largest id, a count it states) are checked against what
// the file describes before anything is sized by them, and gzip'd .gt files are streamed with
// their magic checked first: a few bytes never become gigabytes.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/graphs/compressed_file.h"
#include "io/graphs/text_lines.h"
#include "strata/io/graphs/graph_formats.h"
#include "tests/support/loader_files.h"

namespace strata::io {
namespace {

using strata::testing::io_error;
using strata::testing::TempDir;
using strata::testing::write_file;

// `bytes` gzip'd by zlib at its best compression (a run of zeros shrinks about 1000-fold).
void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb9");
  ASSERT_NE(gz, nullptr) << path;
  ASSERT_EQ(gzwrite(gz, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

// A .gt file of `n` vertices with no edges and no properties (8 zero bytes per vertex).
std::string empty_gt(uint64_t n) {
  std::string b("\xe2\x9b\xbe\x20\x67\x74\x01\x00", 8);
  auto u64 = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(char((v >> (8 * i)) & 0xff));
  };
  u64(0);          // comment length
  b.push_back(1);  // directed
  u64(n);
  b.append(size_t(8 * n), '\0');  // n empty out-neighbour lists
  u64(0);                         // no properties
  return b;
}

bool has(const std::string& msg, const std::string& words) { return msg.find(words) != std::string::npos; }

TEST(GraphNodeCaps, AnEdgeListIdFarPastItsEdgesIsRefusedUnlessMaxNodesAllowsIt) {
  TempDir dir;
  write_file(dir.file("far.txt"), "0 1073741823\n");  // 13 bytes asked for 2^30 nodes (8 GiB)
  std::string msg = io_error([&] { load_edge_list(dir.file("far.txt")); });
  EXPECT_TRUE(has(msg, "far.txt")) << msg;
  EXPECT_TRUE(has(msg, "the largest node id, 1073741823, implies 1073741824 nodes")) << msg;
  EXPECT_TRUE(has(msg, "name at most 2")) << msg;
  EXPECT_TRUE(has(msg, "--max-nodes")) << msg;

  write_file(dir.file("mid.txt"), "0 3000000\n1 2\n");
  msg = io_error([&] { load_edge_list(dir.file("mid.txt")); });
  EXPECT_TRUE(has(msg, "implies 3000001 nodes")) << msg;
  EdgeListOptions allowed;
  allowed.max_nodes = 3000001;
  EXPECT_EQ(load_edge_list(dir.file("mid.txt"), allowed).graph.num_nodes(), 3000001);
  allowed.max_nodes = 3000000;
  msg = io_error([&] { load_edge_list(dir.file("mid.txt"), allowed); });
  EXPECT_TRUE(has(msg, "above --max-nodes 3000000")) << msg;
  // A count the caller states is the caller's; ids below 2^20 pass as they always did.
  EXPECT_EQ(load_edge_list(dir.file("mid.txt"), {.num_nodes = 3000001}).graph.num_nodes(), 3000001);
  write_file(dir.file("small.txt"), "0 1000000\n");
  EXPECT_EQ(load_edge_list(dir.file("small.txt")).graph.num_nodes(), 1000001);
}

TEST(GraphNodeCaps, ANodeFileIdCountsAsWhatTheFileDescribes) {
  TempDir dir;
  write_file(dir.file("e.txt"), "0 1\n");
  write_file(dir.file("nodes.csv"), "0,1\n1,0\n1073741823,1\n");
  EdgeListOptions o;
  o.node_file = dir.file("nodes.csv");
  const std::string msg = io_error([&] { load_edge_list(dir.file("e.txt"), o); });
  EXPECT_TRUE(has(msg, "implies 1073741824 nodes, but the file's rows name at most 5")) << msg;
}

TEST(GraphNodeCaps, AnOgbNodeCountFarPastItsEdgesIsRefused) {
  TempDir dir;
  write_file(dir.file("d/raw/edge.csv"), "0,1\n1,2\n");
  write_file(dir.file("d/raw/num-node-list.csv"), "1073741824\n");
  std::string msg = io_error([&] { load_ogb_raw(dir.file("d")); });
  EXPECT_TRUE(has(msg, "num-node-list.csv: the node count 1073741824 implies 1073741824 nodes")) << msg;
  write_file(dir.file("d/raw/num-node-list.csv"), "2000000\n");
  msg = io_error([&] { load_ogb_raw(dir.file("d")); });
  EXPECT_TRUE(has(msg, "--max-nodes")) << msg;
  EXPECT_EQ(load_ogb_raw(dir.file("d"), {.max_nodes = 2000000}).graph.num_nodes(), 2000000);
}

TEST(GraphNodeCaps, AGzipGraphToolFileOfEmptyVerticesIsRefusedBeforeItsVerticesAreAllocated) {
  TempDir dir;
  const uint64_t n = uint64_t(1) << 21;  // 16 MiB of zero lists in about 16 KiB
  write_gzip(dir.file("empty.gt.gz"), empty_gt(n));
  const std::string msg = io_error([&] { load_graph_tool(dir.file("empty.gt.gz")); });
  EXPECT_TRUE(has(msg, "empty.gt.gz")) << msg;
  EXPECT_TRUE(has(msg, "the vertex count 2097152 implies 2097152 nodes")) << msg;
  EXPECT_EQ(load_graph_tool(dir.file("empty.gt.gz"), {.max_nodes = int64_t(n)}).graph.num_nodes(),
            int64_t(n));
}

TEST(GraphNodeCaps, AGzipFileThatIsNotAGraphIsRefusedAtItsMagic) {
  TempDir dir;
  write_gzip(dir.file("zeros.gt.gz"), std::string(size_t(64) << 20, '\0'));  // 64 MiB of zeros, ~64 KiB
  const std::string msg = io_error([&] { load_graph_tool(dir.file("zeros.gt.gz")); });
  EXPECT_TRUE(has(msg, "at byte offset 0: bad magic")) << msg;
  // The reader's bound on what is left holds what really is left, and is exact for plain files.
  DecompressedReader gz(dir.file("zeros.gt.gz"));
  char head[8];
  ASSERT_EQ(gz.read(head, sizeof head), sizeof head);
  EXPECT_GE(gz.max_remaining(), (uint64_t(64) << 20) - 8);
  EXPECT_LT(gz.max_remaining(), uint64_t(1) << 30);  // not unbounded: a count of 2^40 is refused
  write_file(dir.file("plain.bin"), std::string(1000, 'x'));
  DecompressedReader plain(dir.file("plain.bin"));
  ASSERT_EQ(plain.read(head, sizeof head), sizeof head);
  EXPECT_EQ(plain.max_remaining(), 992u);
}

TEST(GraphNodeCaps, AGzipGraphToolVertexCountBeyondWhatItCouldInflateToIsRefused) {
  TempDir dir;
  std::string b = empty_gt(0);
  b.resize(b.size() - 16);                                        // header up to the vertex count
  for (int i = 0; i < 8; ++i) b.push_back(char(i == 5 ? 1 : 0));  // 2^40 vertices
  write_gzip(dir.file("huge.gt.gz"), b);
  const std::string msg = io_error([&] { load_graph_tool(dir.file("huge.gt.gz")); });
  EXPECT_TRUE(has(msg, "vertex count 1099511627776 needs")) << msg;
}

// LineReader reads in pieces that start at 64 KiB and grow to 1 MiB: lines that cross the pieces'
// edges (one of 300 KB among them, "\r\n" endings, a last line without its newline) come back
// whole and numbered, plain or gzip'd.
TEST(LineReader, LinesAcrossItsReadsComeBackWholeAndNumbered) {
  TempDir tmp;
  std::vector<std::string> lines;
  std::string text;
  for (int i = 0; i < 40000; ++i) {
    std::string line = std::to_string(i) + " " + std::string(size_t(i % 97), char('a' + i % 26));
    if (i == 1234) line += std::string(300000, 'x');
    lines.push_back(line);
    text += line + (i % 3 == 0 ? "\r\n" : "\n");
  }
  text.pop_back();  // the last line ends without its newline
  if (text.back() == '\r') text.pop_back();
  ASSERT_GT(text.size(), size_t(2) << 20);
  write_file(tmp.file("lines.txt"), text);
  write_gzip(tmp.file("lines.txt.gz"), text);
  for (const char* name : {"lines.txt", "lines.txt.gz"}) {
    LineReader r(tmp.file(name));
    std::string_view line;
    size_t n = 0;
    while (r.next(&line)) {
      ASSERT_LT(n, lines.size()) << name;
      ASSERT_EQ(line, lines[n]) << name << " line " << n + 1;
      ASSERT_EQ(r.line_number(), int64_t(n + 1));
      ++n;
    }
    EXPECT_EQ(n, lines.size()) << name;
  }
}

}  // namespace
}  // namespace strata::io
