#include "security/private_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tiresias::security {
namespace {

absl::Status Errno(const std::string& path, const char* what) {
  return absl::PermissionDeniedError(
      absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

}  // namespace

void MakeFilesPrivateByDefault() { umask(077); }

absl::StatusOr<PrivateDir> EnsurePrivateDir(
    const std::string& dir, mode_t mode, const std::vector<std::string>& keep) {
  PrivateDir done;
  struct stat st = {};
  if (stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Errno(dir, "cannot read");
    std::error_code ec;
    // Its parents are made 0700 by the umask the daemon set, or as the
    // caller's umask says otherwise.
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat(dir, ": cannot create: ", ec.message()));
    }
    if (chmod(dir.c_str(), mode) != 0) return Errno(dir, "cannot set mode");
    done.created = true;
    return done;
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, ": not a folder"));
  }
  if ((st.st_mode & 077 & ~mode) != 0) {
    if (chmod(dir.c_str(), mode) != 0) return Errno(dir, "cannot set mode");
    done.tightened.push_back(dir);
  }
  std::error_code ec;
  auto it = std::filesystem::recursive_directory_iterator(
      dir, std::filesystem::directory_options::skip_permission_denied, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    const std::filesystem::path& path = it->path();
    if (std::find(keep.begin(), keep.end(), path.filename().string()) !=
        keep.end()) {
      it.disable_recursion_pending();
      continue;
    }
    struct stat entry = {};
    if (lstat(path.c_str(), &entry) != 0 || S_ISLNK(entry.st_mode)) continue;
    if ((entry.st_mode & 066) == 0) continue;
    if (chmod(path.c_str(), entry.st_mode & 07711) != 0) {
      return Errno(path.string(), "cannot close it to other users");
    }
    done.tightened.push_back(path.string());
  }
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir, ": cannot read: ", ec.message()));
  }
  return done;
}

std::string FirstClosedFolder(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path target =
      std::filesystem::absolute(path, ec).lexically_normal();
  if (ec) return "";
  std::filesystem::path walked;
  for (const std::filesystem::path& part : target) {
    walked /= part;
    struct stat st = {};
    if (stat(walked.c_str(), &st) != 0) return "";  // made later, by us
    if (S_ISDIR(st.st_mode) && (st.st_mode & S_IXOTH) == 0) {
      return walked.string();
    }
  }
  return "";
}

std::string DescribeTightened(const std::string& dir, const PrivateDir& done) {
  if (done.tightened.empty()) return "";
  std::vector<std::string> named(
      done.tightened.begin(),
      done.tightened.begin() + std::min<size_t>(done.tightened.size(), 5));
  return absl::StrCat("tightened ", done.tightened.size(),
                      done.tightened.size() == 1 ? " path" : " paths",
                      " that other users could read or write in ", dir, ": ",
                      absl::StrJoin(named, ", "),
                      done.tightened.size() > 5 ? ", ..." : "");
}

}  // namespace tiresias::security
