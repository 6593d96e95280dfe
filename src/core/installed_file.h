// Files the programs ship beside themselves (the profiler library, the
// container init): found the same way in the build tree and installed.
#ifndef TIRESIAS_CORE_INSTALLED_FILE_H_
#define TIRESIAS_CORE_INSTALLED_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tiresias {

// The absolute path of `file_name`: the one environment variable `env`
// names when set (NotFound if that is no file), else the first file of
// <dir>/<file_name>, <dir>/../<build_dir>/<file_name> (the build tree) and
// <dir>/../lib/tiresias/<file_name> (installed), <dir> being the running
// program's folder. NotFound names the places looked at and `env`.
absl::StatusOr<std::string> FindInstalledFile(std::string_view file_name,
                                              std::string_view build_dir,
                                              const char* env);

}  // namespace tiresias

#endif  // TIRESIAS_CORE_INSTALLED_FILE_H_
