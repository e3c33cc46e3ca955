// The CIFAR-10 binary reader on files the test writes byte by byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "strata/core/error.h"
#include "strata/io/images/cifar10.h"
#include "tests/io/image_test_support.h"

using namespace strata;
using namespace strata::io;

namespace {

// Record r: label (3 * r) % 10; plane c byte i = (r + 7 * c + i) % 256.
void write_records(const std::string& path, int n, int first = 0, size_t cut = 0) {
  std::string bytes;
  for (int r = first; r < first + n; ++r) {
    bytes.push_back(char((3 * r) % 10));
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 1024; ++i) bytes.push_back(char((r + 7 * c + i) % 256));
  }
  bytes.resize(bytes.size() - cut);
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::string error_of(const std::vector<std::string>& files) {
  return test::error_message([&] { Cifar10Dataset d(files); });
}

}  // namespace

TEST(Cifar10, ReadsRecordsAcrossFilesInChwOrder) {
  const test::TempImageDir tmp;
  const std::string dir = tmp.path;
  write_records(dir + "/a.bin", 3, 0);
  write_records(dir + "/b.bin", 2, 3);
  Cifar10Dataset d({dir + "/a.bin", dir + "/b.bin"});
  ASSERT_EQ(d.size(), 5);
  EXPECT_EQ(d.num_classes(), 10);
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(d.label(r), (3 * r) % 10);
    const Image img = d.image(r);
    ASSERT_EQ(img.height, 32);
    ASSERT_EQ(img.width, 32);
    for (int y : {0, 5, 31})
      for (int x : {0, 17, 31})
        for (int c = 0; c < 3; ++c) EXPECT_EQ(int(img.at(y, x)[c]), (r + 7 * c + y * 32 + x) % 256);
  }
  EXPECT_EQ(d.sample_name(4), "'" + dir + "/b.bin' record 1");
  EXPECT_EQ(d.class_names()[3], "cat");
}

TEST(Cifar10, WriteThenReadRoundTrips) {
  const test::TempImageDir tmp;
  const std::string path = tmp.path + "/w.bin";
  std::vector<Image> images;
  for (int i = 0; i < 4; ++i) {
    Image img(32, 32);
    for (size_t p = 0; p < img.pixels.size(); ++p) img.pixels[p] = uint8_t(p * (i + 1));
    images.push_back(img);
  }
  write_cifar10(path, images, {9, 0, 4, 4});
  EXPECT_EQ(std::filesystem::file_size(path), 4u * 3073u);
  Cifar10Dataset d({path});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(d.image(i).pixels, images[size_t(i)].pixels);
  EXPECT_EQ(d.label(0), 9);
  EXPECT_THROW(write_cifar10(path, {Image(31, 32)}, {0}), ValueError);
}

TEST(Cifar10, TruncatedFileNamesTheFileTheRecordAndTheOffset) {
  const test::TempImageDir tmp;
  const std::string path = tmp.path + "/data_batch_1.bin";
  write_records(path, 3, 0, /*cut=*/100);
  const std::string e = error_of({path});
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("record 2 at offset 6146 has only 2973 bytes"), std::string::npos) << e;
}

TEST(Cifar10, BadLabelEmptyAndMissingFilesAreErrors) {
  const test::TempImageDir tmp;
  const std::string dir = tmp.path;
  write_records(dir + "/ok.bin", 2);
  {
    std::fstream f(dir + "/ok.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3073);
    f.put(char(11));  // record 1's label
  }
  std::string e = error_of({dir + "/ok.bin"});
  EXPECT_NE(e.find("record 1 (offset 3073) has label 11"), std::string::npos) << e;
  std::ofstream(dir + "/empty.bin").close();
  e = error_of({dir + "/empty.bin"});
  EXPECT_NE(e.find("empty.bin' is empty"), std::string::npos) << e;
  e = error_of({dir + "/nope.bin"});
  EXPECT_NE(e.find("nope.bin"), std::string::npos) << e;
  EXPECT_THROW(Cifar10Dataset::files_in(dir, true), IoError);
}
