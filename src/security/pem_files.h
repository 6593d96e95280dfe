// PEM files on disk: certificates readable by all (0644), private keys by
// their owner only (0600, from the moment the file exists). Every write is
// atomic (temporary file, fsync, rename, fsync of the folder): a reader
// sees the old file or the new one, never half of one, and a crash leaves
// no partial key behind under the real name.
//
// Not thread-safe against other writers of the same names (last rename
// wins); readers are safe.
#ifndef TIRESIAS_SECURITY_PEM_FILES_H_
#define TIRESIAS_SECURITY_PEM_FILES_H_

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "security/pki.h"

namespace tiresias::security {

inline constexpr mode_t kCertFileMode = 0644;
inline constexpr mode_t kKeyFileMode = 0600;

// "<dir>/<base>.pem" and "<dir>/<base>-key.pem".
std::string CertPath(std::string_view dir, std::string_view base_name);
std::string KeyPath(std::string_view dir, std::string_view base_name);

// Writes `contents` to `path` with exactly `mode` (whatever the umask),
// atomically, replacing any file there. The temporary file sits in the same
// folder and is created with mode 0600, so a key is never readable by
// others, even briefly. Errors name the path.
absl::Status WriteFileAtomically(const std::string& path,
                                 std::string_view contents, mode_t mode);

// Writes pair.key_pem to KeyPath (kKeyFileMode), then pair.cert_pem to
// CertPath (kCertFileMode), each atomically, replacing existing files. The
// folder must exist.
absl::Status WritePemFiles(std::string_view dir, std::string_view base_name,
                           const PemPair& pair);

enum class PemKind { kCertificate, kPrivateKey };

// The text of a PEM file, checked to hold (at least) one certificate or an
// unencrypted private key. Errors name the file: "<path>: unreadable:
// <reason>" (NotFound when it does not exist), "<path>: not a PEM
// certificate", "<path>: not a PEM private key (or one protected by a
// passphrase)".
absl::StatusOr<std::string> ReadPem(const std::string& path,
                                    PemKind kind = PemKind::kCertificate);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_PEM_FILES_H_
