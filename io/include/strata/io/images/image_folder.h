// ImageFolderDataset: a folder of PNG/JPEG files with one subfolder per class, as
// torchvision.datasets.ImageFolder reads it (root/<class>/<any path>.png|.jpg|.jpeg; classes
// sorted by name, label = position). Images are decoded on demand, by the loader's threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/io/images/image_dataset.h"

namespace strata::io {

struct ImageFolderOptions {
  // Applied at decode time: Resize(shorter side = resize) then CenterCrop(center_crop); 0 = off.
  // A loader needs one size per batch: set these or a cropping transform for mixed-size folders.
  int64_t resize = 0;
  int64_t center_crop = 0;
  // Images with more pixels are refused from their header (an IoError naming file and size).
  int64_t max_image_pixels = kDefaultMaxImagePixels;
};

class ImageFolderDataset final : public ImageDataset {
 public:
  // Scans `root`. IoError naming the folder when it is missing, has no class subfolders, or a
  // class subfolder holds no .png/.jpg/.jpeg file (other files are skipped).
  explicit ImageFolderDataset(std::string root, ImageFolderOptions options = {});

  int64_t size() const override { return int64_t(files_.size()); }
  int64_t num_classes() const override { return int64_t(classes_.size()); }
  // Decodes the file; IoError naming it when it is corrupt or not an image.
  Image image(int64_t index) const override;
  int64_t label(int64_t index) const override;
  std::string sample_name(int64_t index) const override { return "'" + file(index) + "'"; }
  std::vector<std::string> class_names() const override { return classes_; }
  std::string describe() const override;
  const std::string& file(int64_t index) const;

 private:
  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
};

}  // namespace strata::io
