#include "agent/file_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/write_all.h"

namespace tiresias {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

class PosixFileStore final : public FileStore {
 public:
  absl::StatusOr<std::optional<std::string>> Read(
      const std::string& path) override {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return std::nullopt;
      return Errno("cannot open", path);
    }
    std::string contents;
    char buffer[1 << 16];
    for (;;) {
      const ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n < 0) {
        if (errno == EINTR) continue;
        absl::Status status = Errno("cannot read", path);
        close(fd);
        return status;
      }
      if (n == 0) break;
      contents.append(buffer, static_cast<size_t>(n));
    }
    close(fd);
    return contents;
  }

  absl::Status WriteAtomically(const std::string& path,
                               std::string_view contents) override {
    const std::filesystem::path target(path);
    std::filesystem::path dir = target.parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::UnavailableError(absl::StrCat(
          "cannot create folder ", dir.string(), ": ", ec.message()));
    }
    std::string temp = path + ".tmp.XXXXXX";
    const int fd = mkostemp(temp.data(), O_CLOEXEC);
    if (fd < 0) return Errno("cannot create a temporary file for", path);
    if (!WriteAll(fd, contents) || fsync(fd) != 0) {
      absl::Status status = Errno("cannot write", temp);
      close(fd);
      unlink(temp.c_str());
      return status;
    }
    if (close(fd) != 0) {
      absl::Status status = Errno("cannot close", temp);
      unlink(temp.c_str());
      return status;
    }
    if (rename(temp.c_str(), path.c_str()) != 0) {
      absl::Status status = Errno("cannot rename onto", path);
      unlink(temp.c_str());
      return status;
    }
    // Make the rename itself durable.
    const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return Errno("cannot open folder", dir.string());
    const bool synced = fsync(dir_fd) == 0;
    absl::Status status =
        synced ? absl::OkStatus() : Errno("cannot fsync folder", dir.string());
    close(dir_fd);
    return status;
  }
};

}  // namespace

FileStore* RealFileStore() {
  static PosixFileStore* const store = new PosixFileStore();
  return store;
}

}  // namespace tiresias
