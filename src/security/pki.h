// The cluster's PKI: one CA, and the certificates it signs for the master,
// the agents and the users (their identity in the common name, see
// identity.h). Keys are EC P-256, made with OpenSSL 3; certificates are
// X.509 v3, signed with SHA-256. Everything is PEM text in memory: writing
// it to files is pem_files.h's job.
//
//   ASSIGN_OR_RETURN(PemPair ca, CreateCa("tiresias cluster CA"));
//   ASSIGN_OR_RETURN(PemPair agent, IssueCertificate(ca, {
//       .common_name = "tiresias-agent:node-1", .dns_names = {"node-1"},
//       .server_auth = true, .client_auth = true}));
//
// Pure apart from drawing key and serial randomness from the OS;
// thread-safe.
#ifndef TIRESIAS_SECURITY_PKI_H_
#define TIRESIAS_SECURITY_PKI_H_

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias::security {

// A certificate and its private key (unencrypted PKCS#8), both PEM.
struct PemPair {
  std::string cert_pem;
  std::string key_pem;
};

inline constexpr std::chrono::seconds kDefaultCaValidity{3650LL * 86400};
inline constexpr std::chrono::seconds kDefaultCertValidity{365LL * 86400};
// Certificates are valid from this long before they were made, so that a
// machine whose clock is a little behind accepts them at once.
inline constexpr std::chrono::seconds kClockSkewAllowance{300};
// Longest validity accepted (a guard against a typo of units).
inline constexpr std::chrono::seconds kMaxValidity{100LL * 365 * 86400};

// A new self-signed CA: basicConstraints CA:TRUE (critical), keyUsage
// keyCertSign and cRLSign (critical), valid for `validity` from now.
// InvalidArgument for an empty or non-printable name or a validity outside
// (0, kMaxValidity].
absl::StatusOr<PemPair> CreateCa(
    std::string_view common_name,
    std::chrono::seconds validity = kDefaultCaValidity);

struct CertRequest {
  std::string common_name;                // the identity, see identity.h
  std::vector<std::string> dns_names;     // subjectAltName DNS entries
  std::vector<std::string> ip_addresses;  // subjectAltName IPs (v4 or v6)
  bool server_auth = false;               // extendedKeyUsage serverAuth
  bool client_auth = false;               // extendedKeyUsage clientAuth
  // From now; cut to the CA's own end when that comes first.
  std::chrono::seconds validity = kDefaultCertValidity;
};

// A new key and a certificate for it signed by `ca`: a random 128-bit
// serial, subject CN = request.common_name, subjectAltName with the DNS
// names and IPs (omitted when both are empty), extendedKeyUsage per the
// flags, basicConstraints CA:FALSE, keyUsage digitalSignature and
// keyAgreement. InvalidArgument naming the field for a bad request
// ("dns_names[1]: ...") or a CA pair that is not a CA certificate with its
// matching key.
absl::StatusOr<PemPair> IssueCertificate(const PemPair& ca,
                                         const CertRequest& request);

// What a subjectAltName may hold. A DNS name: letters, digits, '-', '.',
// '_', 1..253 bytes, optionally after a "*." wildcard. An IP address: IPv4
// dotted or IPv6 text, as inet_pton reads them.
bool IsDnsName(std::string_view name);
bool IsIpAddress(std::string_view text);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_PKI_H_
