#include "report/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace tiresias {
namespace {

absl::Status ErrnoStatus(const std::string& what, const std::string& path) {
  const int error = errno;
  return absl::ErrnoToStatus(error, absl::StrCat(what, " ", path));
}

}  // namespace

absl::Status EnsureFolder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(dir, ": cannot create folder: ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 std::string_view contents) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  std::string temp = path + ".tmp.XXXXXX";
  const int fd = mkstemp(temp.data());
  if (fd < 0) return ErrnoStatus("cannot create a temporary file for", path);
  auto fail = [&](const std::string& what) {
    absl::Status status = ErrnoStatus(what, temp);
    close(fd);
    unlink(temp.c_str());
    return status;
  };
  if (fchmod(fd, 0644) != 0) return fail("cannot set permissions of");
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n =
        write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write");
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail("cannot fsync");
  if (close(fd) != 0) {
    absl::Status status = ErrnoStatus("cannot close", temp);
    unlink(temp.c_str());
    return status;
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    absl::Status status = ErrnoStatus("cannot rename to", path);
    unlink(temp.c_str());
    return status;
  }
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd < 0) return ErrnoStatus("cannot open folder", dir);
  const int synced = fsync(dir_fd);
  close(dir_fd);
  if (synced != 0) return ErrnoStatus("cannot fsync folder", dir);
  return absl::OkStatus();
}

}  // namespace tiresias
