// The certificate folders of `tiresias admin` (offline, run by an operator
// on the machine that keeps the CA key):
//
//   CA folder:    ca.pem (0644), ca-key.pem (0600)
//   issued to --out:  ca.pem, <role>.pem (0644), <role>-key.pem (0600)
//                 with <role> = master | agent | user
//
// which is what LoadTlsDir(out, role) reads back. Not thread-safe against
// another writer of the same folders.
#ifndef TIRESIAS_SECURITY_CERT_DIRS_H_
#define TIRESIAS_SECURITY_CERT_DIRS_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "security/identity.h"
#include "security/pki.h"

namespace tiresias::security {

inline constexpr char kCaBaseName[] = "ca";

// Creates `dir` if missing (mode 0700) and a new CA in it named `name`.
// AlreadyExists, writing nothing, when dir/ca.pem or dir/ca-key.pem exists:
// "DIR/ca.pem exists; a new CA would invalidate every certificate issued".
absl::Status InitCaDir(const std::string& dir, const std::string& name,
                       std::chrono::seconds validity = kDefaultCaValidity);

struct IssueFilesRequest {
  // Who: kMaster (name ignored), kAgent (name = node), kUser (name = user).
  Identity identity;
  std::string ca_dir;   // holds ca.pem and ca-key.pem
  std::string out_dir;  // created (0700) if missing
  // Extra subjectAltNames: each an IP address or a DNS name. Agents and
  // the master only (a user's certificate serves nothing).
  std::vector<std::string> sans;
  std::chrono::seconds validity = kDefaultCertValidity;
};

struct IssuedFiles {
  std::string cert_path;
  std::string key_path;
  std::string ca_path;  // the copy of the CA certificate in out_dir
  CertRequest request;  // what was signed: names, usages
};

// The certificate request for `identity`, before --san values:
//  master: server+client auth; localhost, 127.0.0.1, ::1 and `hostname`
//  agent:  server+client auth (it serves task logs to the master);
//          localhost, 127.0.0.1, ::1 and the node name when it is a DNS name
//  user:   client auth only; no subjectAltName
// then `sans`, each as an IP or DNS entry, without repeats.
// InvalidArgument for a bad name or SAN, or SANs on a user certificate.
absl::StatusOr<CertRequest> RequestFor(const Identity& identity,
                                       const std::string& hostname,
                                       const std::vector<std::string>& sans);

// Signs RequestFor(request.identity, this machine's hostname, sans) with
// the CA in ca_dir and writes the three files of the role to out_dir
// (replacing earlier ones: re-issuing is how a certificate is renewed).
absl::StatusOr<IssuedFiles> IssueCertFiles(const IssueFilesRequest& request);

// "master", "agent", "user": the base name of the role's files.
std::string BaseName(IdentityKind kind);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_CERT_DIRS_H_
