#include "agent/lease.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace tiresias {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat(what, " lease file ", path, ": ", std::strerror(errno)));
}

absl::StatusOr<int64_t*> Map(int fd, const std::string& path) {
  void* p = mmap(nullptr, sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd, 0);
  if (p == MAP_FAILED) return Errno("cannot map", path);
  return static_cast<int64_t*>(p);
}

}  // namespace

int64_t BootTimeNs() {
  struct timespec ts = {};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

absl::StatusOr<std::unique_ptr<LeaseFile>> LeaseFile::Create(
    const std::string& path, int64_t deadline_ns,
    const std::vector<int>& gpus) {
  std::error_code ec;
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path(), ec);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create", path);
  const std::string text = absl::StrJoin(gpus, ",");
  if (ftruncate(fd, sizeof(int64_t)) != 0 ||
      pwrite(fd, text.data(), text.size(), sizeof(int64_t)) !=
          static_cast<ssize_t>(text.size())) {
    absl::Status s = Errno("cannot write", path);
    close(fd);
    return s;
  }
  absl::StatusOr<int64_t*> word = Map(fd, path);
  close(fd);  // the mapping stays
  if (!word.ok()) return word.status();
  std::unique_ptr<LeaseFile> lease(new LeaseFile(path, *word));
  lease->gpus_ = gpus;
  lease->Renew(deadline_ns);
  return lease;
}

absl::StatusOr<std::unique_ptr<LeaseFile>> LeaseFile::Open(
    const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no lease file ", path));
    }
    return Errno("cannot open", path);
  }
  struct stat st = {};
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(int64_t))) {
    close(fd);
    return absl::DataLossError(absl::StrCat("lease file ", path, " is short"));
  }
  std::string text(static_cast<size_t>(st.st_size) - sizeof(int64_t), '\0');
  const bool read_all =
      text.empty() || pread(fd, text.data(), text.size(), sizeof(int64_t)) ==
                          static_cast<ssize_t>(text.size());
  absl::StatusOr<int64_t*> word = Map(fd, path);
  close(fd);
  if (!word.ok()) return word.status();
  std::unique_ptr<LeaseFile> lease(new LeaseFile(path, *word));
  if (read_all) {
    for (absl::string_view g : absl::StrSplit(text, ',', absl::SkipEmpty())) {
      int index;
      if (absl::SimpleAtoi(g, &index)) lease->gpus_.push_back(index);
    }
  }
  return lease;
}

LeaseFile::~LeaseFile() { munmap(word_, sizeof(int64_t)); }

void LeaseFile::Renew(int64_t deadline_ns) {
  __atomic_store_n(word_, deadline_ns, __ATOMIC_RELEASE);
}

int64_t LeaseFile::deadline_ns() const {
  return __atomic_load_n(word_, __ATOMIC_ACQUIRE);
}

void LeaseFile::Remove() { unlink(path_.c_str()); }

}  // namespace tiresias
