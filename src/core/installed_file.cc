#include "core/installed_file.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/to_absl.h"

namespace tiresias {

namespace fs = std::filesystem;

absl::StatusOr<std::string> FindInstalledFile(std::string_view file_name,
                                              std::string_view build_dir,
                                              const char* env) {
  if (const char* set = std::getenv(env); set != nullptr && *set != '\0') {
    std::error_code error;
    if (!fs::is_regular_file(set, error)) {
      return absl::NotFoundError(absl::StrCat(env, "=", set, ": no such file"));
    }
    return fs::absolute(set, error).string();
  }
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) {
    return absl::NotFoundError(
        absl::StrCat("cannot find ", ToAbsl(file_name),
                     ": /proc/self/exe is unreadable; set ", env));
  }
  const fs::path dir = exe.parent_path();
  std::vector<std::string> tried;
  for (const fs::path& candidate :
       {dir / file_name, dir / ".." / build_dir / file_name,
        dir / ".." / "lib" / "tiresias" / file_name}) {
    const fs::path path = candidate.lexically_normal();
    if (fs::is_regular_file(path, error)) return path.string();
    tried.push_back(path.string());
  }
  return absl::NotFoundError(
      absl::StrCat("cannot find ", ToAbsl(file_name), " (looked at ",
                   absl::StrJoin(tried, ", "), "); set ", env));
}

}  // namespace tiresias
