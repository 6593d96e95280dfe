#include "master/state_dir_lead.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "security/pem_files.h"

namespace tiresias {
namespace {

constexpr char kMasterPrefix[] = "master-";

absl::Status Errno(const std::string& path, const std::string& what) {
  const int error = errno;
  return absl::ErrnoToStatus(
      error, absl::StrCat(path, ": ", what, ": ", std::strerror(error)));
}

// An open file with an exclusive flock, or -1 (errno set) if another
// process holds it or it cannot be opened.
int LockFile(const std::string& path, int flags) {
  const int fd = open(path.c_str(), flags | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateDirLead>> StateDirLead::Join(
    const std::string& state_dir) {
  const std::string dir = state_dir + "/lead";
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Errno(dir, "cannot create");
  }
  // Random, so that masters of one pid and host name (containers) differ.
  std::random_device random;
  const std::string name =
      absl::StrCat(kMasterPrefix, getpid(), "@", LeadHostName(), "#",
                   absl::Hex(static_cast<uint32_t>(random()), absl::kZeroPad8));
  const std::string path = dir + "/" + name;
  for (int attempt = 0;; ++attempt) {
    const int fd = LockFile(path, O_CREAT);
    if (fd < 0) {
      // A leader judging it stale holds it for a moment.
      if (errno != EWOULDBLOCK || attempt == 50) {
        return Errno(path, "cannot lock");
      }
      usleep(10'000);
      continue;
    }
    // That leader may also have removed it between our open and our lock:
    // then ours is a file nobody can see; make it again.
    struct stat held = {}, named = {};
    if (fstat(fd, &held) == 0 && stat(path.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      return std::unique_ptr<StateDirLead>(new StateDirLead(dir, name, fd));
    }
    close(fd);
    if (attempt == 50) return Errno(path, "keeps disappearing");
  }
}

StateDirLead::~StateDirLead() {
  if (self_fd_ >= 0) {
    unlink((dir_ + "/" + self_name_).c_str());
    close(self_fd_);
  }
  if (lock_fd_ >= 0) close(lock_fd_);
}

absl::StatusOr<bool> StateDirLead::TryLead() {
  if (leading()) return true;
  const std::string path = dir_ + "/lock";
  const int fd = LockFile(path, O_CREAT);
  if (fd < 0) {
    if (errno == EWOULDBLOCK) return false;
    return Errno(path, "cannot lock");
  }
  absl::StatusOr<std::optional<Record>> last = ReadLeader();
  if (!last.ok()) {
    close(fd);
    return last.status();
  }
  Record r;
  r.epoch = (*last ? (*last)->epoch : 0) + 1;
  r.pid = getpid();
  r.host = LeadHostName();
  r.since = static_cast<double>(absl::ToUnixMicros(absl::Now())) / 1e6;
  // Synced, file and folder, before the lead is used.
  absl::Status written = security::WriteFileAtomically(
      dir_ + "/leader", EncodeLeaderRecord(r), 0600);
  if (!written.ok()) {
    close(fd);
    return written;
  }
  lock_fd_ = fd;
  {
    MutexLock lock(&mu_);
    record_ = r;
  }
  epoch_.store(r.epoch);
  return true;
}

StateDirLead::Record StateDirLead::record() const {
  MutexLock lock(&mu_);
  return record_;
}

absl::Status StateDirLead::SetAddress(const std::string& address) {
  if (!leading()) {
    return absl::FailedPreconditionError("not leading: no record to write");
  }
  MutexLock lock(&mu_);
  record_.address = address;
  return security::WriteFileAtomically(dir_ + "/leader",
                                       EncodeLeaderRecord(record_), 0600);
}

absl::StatusOr<std::optional<StateDirLead::Record>> StateDirLead::ReadLeader()
    const {
  const std::string path = dir_ + "/leader";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    return Errno(path, "cannot open");
  }
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status status = Errno(path, "cannot read");
      close(fd);
      return status;
    }
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > 64 * 1024) break;  // not ours: Decode says so
  }
  close(fd);
  absl::StatusOr<Record> r = DecodeLeaderRecord(path, text);
  if (!r.ok()) return r.status();
  return std::optional<Record>(*std::move(r));
}

StoreHealth StateDirLead::Store() const {
  return {.kind = "sqlite",
          .where = std::filesystem::path(dir_).parent_path().string()};
}

std::vector<std::string> StateDirLead::Standbys() const {
  MutexLock lock(&mu_);
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kMasterPrefix, 0) != 0 || name == self_name_) continue;
    const int fd = LockFile(entry.path().string(), 0);
    if (fd < 0) {
      // Held: a live master. (Or gone meanwhile: not listed.)
      if (errno == EWOULDBLOCK) {
        const std::string who = name.substr(sizeof(kMasterPrefix) - 1);
        out.push_back(who.substr(0, who.find('#')));
      }
      continue;
    }
    // Nobody holds it: its master ended without removing it (SIGKILL).
    unlink(entry.path().c_str());
    close(fd);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tiresias
