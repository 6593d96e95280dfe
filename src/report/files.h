// Writing files the durable way: a temporary file in the same folder,
// fsync, then rename over the target, so a reader never sees half a file.
#ifndef TIRESIAS_REPORT_FILES_H_
#define TIRESIAS_REPORT_FILES_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace tiresias {

absl::Status WriteFileAtomically(const std::string& path,
                                 std::string_view contents);
// Creates `dir` and its parents if missing; Unavailable naming it if not.
absl::Status EnsureFolder(const std::string& dir);

}  // namespace tiresias

#endif  // TIRESIAS_REPORT_FILES_H_
