#include "strata/io/images/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "strata/core/error.h"
#include "strata/io/images/image_transforms.h"

namespace strata::io {
namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

bool is_hidden(const fs::path& p) { return !p.filename().empty() && p.filename().string()[0] == '.'; }

}  // namespace

ImageFolderDataset::ImageFolderDataset(std::string root, ImageFolderOptions options)
    : root_(std::move(root)), options_(options) {
  STRATA_CHECK(options_.resize >= 0 && options_.center_crop >= 0, ValueError,
               "ImageFolderDataset: resize and center_crop must be >= 0");
  std::error_code ec;
  STRATA_CHECK(fs::is_directory(root_, ec), IoError, "image folder '", root_, "' does not exist or is not a directory");
  for (const fs::directory_entry& e : fs::directory_iterator(root_, ec))
    if (e.is_directory() && !is_hidden(e.path())) classes_.push_back(e.path().filename().string());
  STRATA_CHECK(!ec, IoError, "cannot list image folder '", root_, "' (", ec.message(), ")");
  std::sort(classes_.begin(), classes_.end());
  STRATA_CHECK(!classes_.empty(), IoError, "image folder '", root_,
               "' has no class subfolders (expected root/<class>/<image>.png|.jpg)");
  for (size_t k = 0; k < classes_.size(); ++k) {
    const fs::path dir = fs::path(root_) / classes_[k];
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (is_hidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file() && is_image_file(it->path())) found.push_back(it->path().string());
    }
    STRATA_CHECK(!ec, IoError, "cannot list class folder '", dir.string(), "' (", ec.message(), ")");
    STRATA_CHECK(!found.empty(), IoError, "class folder '", dir.string(),
                 "' holds no .png, .jpg or .jpeg file (an empty class would never be seen)");
    std::sort(found.begin(), found.end());
    for (std::string& f : found) {
      files_.push_back(std::move(f));
      labels_.push_back(int64_t(k));
    }
  }
}

const std::string& ImageFolderDataset::file(int64_t index) const {
  STRATA_CHECK(index >= 0 && index < size(), IndexError, "ImageFolderDataset: index ", index, " out of range [0, ",
               size(), ")");
  return files_[size_t(index)];
}

Image ImageFolderDataset::image(int64_t index) const {
  Image img = read_image(file(index), options_.max_image_pixels);
  if (options_.resize > 0) img = resize_shorter_side(img, options_.resize);
  if (options_.center_crop > 0) {
    STRATA_CHECK(img.height >= options_.center_crop && img.width >= options_.center_crop, IoError, "image '",
                 file(index), "' is ", img.height, "x", img.width, ", smaller than the center crop ",
                 options_.center_crop, " (set resize)");
    img = center_crop(img, options_.center_crop, options_.center_crop);
  }
  return img;
}

int64_t ImageFolderDataset::label(int64_t index) const {
  file(index);  // range check
  return labels_[size_t(index)];
}

std::string ImageFolderDataset::describe() const {
  std::ostringstream os;
  os << "image folder '" << root_ << "', " << size() << " images in " << num_classes() << " classes";
  if (options_.resize) os << ", Resize(" << options_.resize << ")";
  if (options_.center_crop) os << ", CenterCrop(" << options_.center_crop << ")";
  return os.str();
}

}  // namespace strata::io
