// ImageFolderDataset on folders of PNG/JPEG files the test writes.
#include "strata/io/images/image_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "strata/core/error.h"
#include "strata/io/images/image_loader.h"
#include "tests/io/image_test_support.h"

using namespace strata;
using namespace strata::io;
namespace fs = std::filesystem;

namespace {

Image flat(int64_t h, int64_t w, uint8_t r, uint8_t g, uint8_t b) {
  Image img(h, w);
  for (int64_t i = 0; i < h * w; ++i) img.pixels[size_t(3 * i)] = r, img.pixels[size_t(3 * i + 1)] = g, img.pixels[size_t(3 * i + 2)] = b;
  return img;
}

std::string error_of(const std::string& root) {
  return test::error_message([&] { ImageFolderDataset d(root); });
}

}  // namespace

TEST(ImageFolder, ClassesAreSortedSubfoldersAndFilesAreDecoded) {
  const test::TempImageDir tmp;
  const std::string root = tmp.path;
  fs::create_directories(root + "/zebra/nested");
  fs::create_directories(root + "/ant");
  fs::create_directories(root + "/.hidden");
  write_image(root + "/zebra/b.png", flat(6, 8, 10, 20, 30));
  write_image(root + "/zebra/nested/a.jpg", flat(6, 8, 200, 100, 50));
  write_image(root + "/ant/x.PNG", flat(6, 8, 1, 2, 3));
  std::ofstream(root + "/ant/notes.txt") << "not an image";
  write_image(root + "/.hidden/h.png", flat(6, 8, 0, 0, 0));
  ImageFolderDataset d(root);
  EXPECT_EQ(d.class_names(), (std::vector<std::string>{"ant", "zebra"}));
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.label(0), 0);
  EXPECT_EQ(d.label(1), 1);
  EXPECT_EQ(d.label(2), 1);
  EXPECT_EQ(d.file(1), root + "/zebra/b.png");
  EXPECT_EQ(d.image(1).pixels, flat(6, 8, 10, 20, 30).pixels);  // PNG: exact
  const Image j = d.image(2);                                   // JPEG: close
  ASSERT_EQ(j.height, 6);
  for (size_t i = 0; i < j.pixels.size(); i += 3) {
    EXPECT_NEAR(int(j.pixels[i]), 200, 4);
    EXPECT_NEAR(int(j.pixels[i + 1]), 100, 4);
    EXPECT_NEAR(int(j.pixels[i + 2]), 50, 4);
  }
}

TEST(ImageFolder, MissingOrEmptyFoldersAreErrorsNamingThem) {
  const test::TempImageDir tmp;
  const std::string root = tmp.path;
  EXPECT_NE(error_of(root + "/nope").find(root + "/nope' does not exist"), std::string::npos);
  EXPECT_NE(error_of(root).find("has no class subfolders"), std::string::npos) << error_of(root);
  fs::create_directories(root + "/cat");
  write_image(root + "/cat/1.png", flat(4, 4, 1, 1, 1));
  fs::create_directories(root + "/dog");
  std::ofstream(root + "/dog/readme.txt") << "x";
  const std::string e = error_of(root);
  EXPECT_NE(e.find("class folder '" + root + "/dog' holds no .png"), std::string::npos) << e;
}

TEST(ImageFolder, ResizeAndCenterCropMakeOneSize) {
  const test::TempImageDir tmp;
  const std::string root = tmp.path;
  fs::create_directories(root + "/a");
  write_image(root + "/a/wide.png", flat(20, 40, 9, 9, 9));
  write_image(root + "/a/tall.png", flat(30, 12, 9, 9, 9));
  ImageFolderDataset d(root, {.resize = 12, .center_crop = 10});
  for (int64_t i = 0; i < 2; ++i) {
    const Image img = d.image(i);
    EXPECT_EQ(img.height, 10);
    EXPECT_EQ(img.width, 10);
    for (uint8_t p : img.pixels) EXPECT_EQ(p, 9);
  }
}

TEST(ImageFolder, LoaderReportsCorruptFilesAndWrongSizesByName) {
  const test::TempImageDir tmp;
  const std::string root = tmp.path;
  fs::create_directories(root + "/a");
  for (int i = 0; i < 4; ++i) write_image(root + "/a/" + std::to_string(i) + ".png", flat(8, 8, 5, 5, 5));
  write_image(root + "/a/4_small.png", flat(8, 6, 5, 5, 5));
  auto d = std::make_shared<ImageFolderDataset>(root);
  for (int workers : {0, 2}) {
    ImageLoader loader(d, {.batch = 5, .shuffle = false, .num_workers = workers});
    try {
      loader.next();
      ADD_FAILURE() << "no error for an 8x6 image in 8x8 batches";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + root + "/a/4_small.png' is 8x6 after the transforms, but batches are 8x8"),
                std::string::npos)
          << e.what();
    }
  }
  // A corrupt file: the error reaches the trainer's thread, naming the file; no crash.
  std::ofstream(root + "/a/4_small.png", std::ios::trunc) << "\x89PNG\r\n\x1a\n garbage";
  ImageLoader loader(d, {.batch = 5, .shuffle = false, .num_workers = 3});
  try {
    loader.next();
    FAIL() << "corrupt PNG loaded";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot decode PNG '" + root + "/a/4_small.png'"), std::string::npos) << e.what();
  }
}
