#include "core/image_ref.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tiresias {

std::string ImageRefError(std::string_view image) {
  if (image.empty()) return "expected an image, got nothing";
  if (image.size() > kMaxImageRefBytes) {
    return absl::StrCat("expected at most ", kMaxImageRefBytes, " bytes, got ",
                        image.size());
  }
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
  };
  for (size_t i = 0; i < image.size(); ++i) {
    const char c = image[i];
    if (!alnum(c) && c != '.' && c != '_' && c != ':' && c != '/' && c != '@' &&
        c != '+' && c != '-') {
      return absl::StrCat(
          "expected only letters, digits and . _ : / @ + -, got '",
          std::string(1, c >= 0x20 && c < 0x7f ? c : '?'), "' at byte ", i);
    }
  }
  if (!IsImagePath(image)) {
    if (!alnum(image.front())) {
      return "expected a name starting with a letter or digit, or an "
             "absolute path to a root file system folder";
    }
    return "";
  }
  if (image == "/") return "expected a root file system folder, not /";
  for (absl::string_view part : absl::StrSplit(
           absl::string_view(image.data() + 1, image.size() - 1), '/')) {
    if (part.empty() || part == "." || part == "..") {
      return "expected a normal absolute path (no empty, . or .. part, no "
             "trailing /)";
    }
  }
  return "";
}

}  // namespace tiresias
