// Debian 12's abseil keeps its own absl::string_view, which std::string_view
// does not convert to; ToAbsl bridges the two for StrCat, StrSplit and
// friends.
#ifndef TIRESIAS_CORE_TO_ABSL_H_
#define TIRESIAS_CORE_TO_ABSL_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace tiresias {

inline absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace tiresias

#endif  // TIRESIAS_CORE_TO_ABSL_H_
