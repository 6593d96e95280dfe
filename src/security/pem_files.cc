#include "security/pem_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "security/openssl_util.h"

namespace tiresias::security {

namespace {

absl::Status Errno(const std::string& path, std::string_view what, int err) {
  const absl::StatusCode code = err == ENOENT ? absl::StatusCode::kNotFound
                                : err == EACCES || err == EPERM
                                    ? absl::StatusCode::kPermissionDenied
                                    : absl::StatusCode::kFailedPrecondition;
  return absl::Status(
      code, absl::StrCat(path, ": ", ToAbsl(what), ": ", std::strerror(err)));
}

absl::Status WriteAll(int fd, std::string_view contents,
                      const std::string& path) {
  while (!contents.empty()) {
    const ssize_t n = write(fd, contents.data(), contents.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(path, "cannot write", errno);
    }
    contents.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// fsync of the folder, so that the rename itself survives a crash.
absl::Status SyncFolder(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return Errno(dir, "cannot open folder", errno);
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  return rc == 0 ? absl::OkStatus() : Errno(dir, "cannot sync folder", err);
}

// The whole file (a PEM file is a few kB; anything past kMaxBytes is not
// one of ours).
absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  constexpr size_t kMaxBytes = 1 << 20;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno(path, "unreadable", errno);
  std::string text;
  char buffer[8192];
  while (text.size() <= kMaxBytes) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Errno(path, "unreadable", err);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  if (text.size() > kMaxBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unreadable: larger than ", kMaxBytes, " bytes"));
  }
  return text;
}

}  // namespace

std::string CertPath(std::string_view dir, std::string_view base_name) {
  return (std::filesystem::path(dir) / absl::StrCat(ToAbsl(base_name), ".pem"))
      .string();
}

std::string KeyPath(std::string_view dir, std::string_view base_name) {
  return (std::filesystem::path(dir) /
          absl::StrCat(ToAbsl(base_name), "-key.pem"))
      .string();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 std::string_view contents, mode_t mode) {
  const std::filesystem::path target(path);
  std::string temp =
      (target.parent_path() /
       absl::StrCat(".", target.filename().string(), ".tmp-XXXXXX"))
          .string();
  const int fd = mkstemp(temp.data());  // mode 0600, whatever the umask
  if (fd < 0) return Errno(path, "cannot create", errno);
  absl::Status status = WriteAll(fd, contents, path);
  if (status.ok() && fchmod(fd, mode) != 0) {
    status = Errno(path, "cannot set mode", errno);
  }
  if (status.ok() && fsync(fd) != 0) status = Errno(path, "cannot sync", errno);
  if (close(fd) != 0 && status.ok())
    status = Errno(path, "cannot close", errno);
  if (status.ok() && rename(temp.c_str(), path.c_str()) != 0) {
    status = Errno(path, "cannot rename into place", errno);
  }
  if (!status.ok()) {
    unlink(temp.c_str());
    return status;
  }
  return SyncFolder(path);
}

absl::Status WritePemFiles(std::string_view dir, std::string_view base_name,
                           const PemPair& pair) {
  RETURN_IF_ERROR(
      WriteFileAtomically(KeyPath(dir, base_name), pair.key_pem, kKeyFileMode));
  return WriteFileAtomically(CertPath(dir, base_name), pair.cert_pem,
                             kCertFileMode);
}

absl::StatusOr<std::string> ReadPem(const std::string& path, PemKind kind) {
  ASSIGN_OR_RETURN(std::string pem, ReadSmallFile(path));
  if (kind == PemKind::kCertificate) {
    if (internal::ParseCertificate(pem) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a PEM certificate"));
    }
  } else if (internal::ParsePrivateKey(pem) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a PEM private key (or one protected by a passphrase)"));
  }
  return pem;
}

}  // namespace tiresias::security
