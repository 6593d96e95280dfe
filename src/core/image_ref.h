// A container image as a job names it (JobSpec.image, `submit --image`):
// checked the same way by the master, which refuses a bad one, and by the
// agent, which passes it to podman as an argument.
#ifndef TIRESIAS_CORE_IMAGE_REF_H_
#define TIRESIAS_CORE_IMAGE_REF_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace tiresias {

inline constexpr size_t kMaxImageRefBytes = 512;

// True for a root file system folder on the node ("/srv/images/torch"),
// false for a name in the node's image store ("torch:2.1").
inline bool IsImagePath(std::string_view image) {
  return !image.empty() && image.front() == '/';
}

// What is wrong with `image`, or "" if it is a valid reference: 1 to
// kMaxImageRefBytes bytes of [A-Za-z0-9._:/@+-]; a name starts with a
// letter or digit (never '-', which podman would read as an option); a
// path is absolute and normal (no empty, "." or ".." component, no
// trailing '/').
std::string ImageRefError(std::string_view image);

}  // namespace tiresias

#endif  // TIRESIAS_CORE_IMAGE_REF_H_
