#include "agent/task_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tiresias {
namespace {

constexpr size_t kChunkBytes = 64 << 10;

absl::Status TooLarge(const std::string& path, int64_t bytes, size_t max_bytes,
                      bool at_least) {
  return absl::ResourceExhaustedError(absl::StrCat(
      path, ": ", at_least ? "at least " : "", bytes, " bytes, more than the ",
      max_bytes,
      " this file may hold; not read (a task wrote it: a file this large "
      "is refused, not loaded into the agent)"));
}

}  // namespace

absl::StatusOr<TaskFile> TaskFile::Open(const std::string& path) {
  int fd;
  do {
    fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    if (error == ELOOP) {
      return absl::FailedPreconditionError(absl::StrCat(
          path,
          ": a symbolic link where the agent's file should be; not "
          "followed"));
    }
    return absl::UnavailableError(
        absl::StrCat(path, ": cannot open: ", std::strerror(error)));
  }
  struct stat st = {};
  if (fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat(path, ": cannot stat: ", std::strerror(error)));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": not a regular file (mode ", absl::Hex(st.st_mode),
                     "); not read"));
  }
  return TaskFile(fd, static_cast<int64_t>(st.st_size), path);
}

TaskFile::TaskFile(TaskFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      path_(std::move(other.path_)) {}

TaskFile& TaskFile::operator=(TaskFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    path_ = std::move(other.path_);
  }
  return *this;
}

TaskFile::~TaskFile() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::string> TaskFile::ReadAt(int64_t offset,
                                             size_t max_bytes) const {
  std::string data;
  while (data.size() < max_bytes) {
    const size_t want = std::min(kChunkBytes, max_bytes - data.size());
    const size_t had = data.size();
    data.resize(had + want);
    ssize_t n;
    do {
      n = pread(fd_, data.data() + had, want,
                static_cast<off_t>(offset) + static_cast<off_t>(had));
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      return absl::UnavailableError(
          absl::StrCat(path_, ": cannot read: ", std::strerror(errno)));
    }
    data.resize(had + static_cast<size_t>(n));
    if (n == 0) break;
  }
  return data;
}

absl::StatusOr<std::optional<std::string>> ReadTaskFile(const std::string& path,
                                                        size_t max_bytes) {
  absl::StatusOr<TaskFile> file = TaskFile::Open(path);
  if (absl::IsNotFound(file.status())) return std::nullopt;
  if (!file.ok()) return file.status();
  if (file->size() > static_cast<int64_t>(max_bytes)) {
    return TooLarge(path, file->size(), max_bytes, /*at_least=*/false);
  }
  // One byte more than the cap tells a file that grew past it (or a /proc
  // file, whose size fstat does not give) from one that fits.
  absl::StatusOr<std::string> data = file->ReadAt(0, max_bytes + 1);
  if (!data.ok()) return data.status();
  if (data->size() > max_bytes) {
    return TooLarge(path, static_cast<int64_t>(data->size()), max_bytes,
                    /*at_least=*/true);
  }
  return *std::move(data);
}

}  // namespace tiresias
