#include "security/tls.h"

#include <arpa/inet.h>
#include <grpc/grpc_security_constants.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/socket.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "security/openssl_util.h"
#include "security/pem_files.h"

namespace tiresias::security {

namespace {

using internal::X509Ptr;

// Every certificate in a PEM bundle (a CA file may hold an old and a new CA
// while certificates move from one to the other).
std::vector<X509Ptr> ParseAllCertificates(std::string_view pem) {
  std::vector<X509Ptr> certs;
  internal::BioPtr bio = internal::MemoryBio(pem);
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the end of the bundle reads as an error
  return certs;
}

std::string TimeText(const ASN1_TIME* time) {
  internal::BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || ASN1_TIME_print(bio.get(), time) != 1) return "?";
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, length);
}

// FailedPrecondition naming `path` when `cert` is not valid now.
absl::Status CheckValidNow(const X509* cert, const std::string& path) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": expired on ", TimeText(X509_get0_notAfter(cert))));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": not valid before ", TimeText(X509_get0_notBefore(cert)),
        " (is this machine's clock right?)"));
  }
  return absl::OkStatus();
}

// Checks that the key matches the certificate and that one of the CAs
// signed it, so that a mix-up of files is reported at startup, naming the
// files, rather than as a failed handshake later.
absl::Status CheckIdentity(const TlsFiles& files, const TlsConfig& config) {
  X509Ptr cert = internal::ParseCertificate(config.cert_pem);
  internal::PkeyPtr key = internal::ParsePrivateKey(config.key_pem);
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(files.key_path, ": does not match the certificate in ",
                     files.cert_path));
  }
  bool signed_by_ca = false;
  for (const X509Ptr& ca : ParseAllCertificates(config.ca_pem)) {
    EVP_PKEY* ca_key = X509_get0_pubkey(ca.get());
    signed_by_ca = signed_by_ca ||
                   (ca_key != nullptr && X509_verify(cert.get(), ca_key) == 1);
  }
  ERR_clear_error();
  if (!signed_by_ca) {
    return absl::InvalidArgumentError(absl::StrCat(
        files.cert_path, ": not signed by the CA in ", files.ca_path));
  }
  return CheckValidNow(cert.get(), files.cert_path);
}

std::string PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    int value = 0;
    if (text[i] == '%' && i + 2 < text.size() &&
        absl::ascii_isxdigit(text[i + 1]) &&
        absl::ascii_isxdigit(text[i + 2])) {
      for (char c : text.substr(i + 1, 2)) {
        value = value * 16 + (absl::ascii_isdigit(c)
                                  ? c - '0'
                                  : absl::ascii_tolower(c) - 'a' + 10);
      }
      out += static_cast<char>(value);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<TlsConfig> LoadTlsConfig(const TlsFiles& files) {
  if (files.ca_path.empty()) {
    return absl::InvalidArgumentError(
        "CA file: expected the cluster CA's certificate (ca.pem), got no "
        "path");
  }
  if (files.cert_path.empty() != files.key_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "certificate and key: expected both or neither, got only ",
        files.cert_path.empty() ? files.key_path : files.cert_path));
  }
  TlsConfig config;
  ASSIGN_OR_RETURN(config.ca_pem,
                   ReadPem(files.ca_path, PemKind::kCertificate));
  std::vector<X509Ptr> cas = ParseAllCertificates(config.ca_pem);
  RETURN_IF_ERROR(CheckValidNow(cas.front().get(), files.ca_path));
  if (files.cert_path.empty()) return config;
  ASSIGN_OR_RETURN(config.cert_pem,
                   ReadPem(files.cert_path, PemKind::kCertificate));
  ASSIGN_OR_RETURN(config.key_pem,
                   ReadPem(files.key_path, PemKind::kPrivateKey));
  RETURN_IF_ERROR(CheckIdentity(files, config));
  return config;
}

absl::StatusOr<TlsConfig> LoadTlsDir(const std::string& dir,
                                     const std::string& base_name) {
  return LoadTlsConfig(TlsFiles{CertPath(dir, "ca"), CertPath(dir, base_name),
                                KeyPath(dir, base_name)});
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(
    const TlsConfig& config, ClientCerts policy) {
  if (config.insecure) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      policy == ClientCerts::kRequireAndVerify
          ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
          : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = config.ca_pem;
  if (!config.cert_pem.empty()) {
    options.pem_key_cert_pairs.push_back({config.key_pem, config.cert_pem});
  }
  return grpc::SslServerCredentials(options);
}

std::vector<std::string> SplitAddresses(const std::string& address) {
  std::vector<std::string> out;
  for (absl::string_view a : absl::StrSplit(address, ',', absl::SkipEmpty())) {
    a = absl::StripAsciiWhitespace(a);
    if (!a.empty()) out.emplace_back(a);
  }
  return out;
}

std::string ResolveAll(const std::vector<std::string>& addresses) {
  // Every address of every name, in order, by family; and whether each
  // name had an IPv4 one.
  std::vector<std::pair<int, std::string>> all;  // (family, "ip:port")
  bool every_name_has_v4 = true;
  for (const std::string& a : addresses) {
    std::string host, port;
    if (a.size() > 1 && a[0] == '[') {  // [v6]:port
      const size_t close = a.find(']');
      if (close == std::string::npos || close + 1 >= a.size() ||
          a[close + 1] != ':') {
        continue;
      }
      host = a.substr(1, close - 1);
      port = a.substr(close + 2);
    } else {
      const size_t colon = a.rfind(':');
      if (colon == std::string::npos) continue;
      host = a.substr(0, colon);
      port = a.substr(colon + 1);
    }
    addrinfo hints = {};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) continue;
    bool has_v4 = false;
    for (addrinfo* i = found; i != nullptr; i = i->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      if (i->ai_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(i->ai_addr);
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
        all.push_back({AF_INET, absl::StrCat(text, ":", port)});
        has_v4 = true;
      } else if (i->ai_family == AF_INET6) {
        const auto* in = reinterpret_cast<const sockaddr_in6*>(i->ai_addr);
        inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof(text));
        all.push_back({AF_INET6, absl::StrCat("[", text, "]:", port)});
      }
    }
    freeaddrinfo(found);
    every_name_has_v4 = every_name_has_v4 && has_v4;
  }
  if (all.empty()) return "";
  // One scheme per target. IPv4 when every master has an IPv4 address
  // (its IPv6 ones left out); else IPv6, IPv4 addresses as v4-mapped ones.
  std::vector<std::string> out;
  for (const auto& [family, address] : all) {
    if (every_name_has_v4 && family != AF_INET) continue;
    const size_t colon = address.rfind(':');
    std::string entry = every_name_has_v4 || family == AF_INET6
                            ? address
                            : absl::StrCat("[::ffff:", address.substr(0, colon),
                                           "]", address.substr(colon));
    // In the order given: pick_first tries them so.
    if (std::find(out.begin(), out.end(), entry) == out.end()) {
      out.push_back(std::move(entry));
    }
  }
  return absl::StrCat(every_name_has_v4 ? "ipv4:" : "ipv6:",
                      absl::StrJoin(out, ","));
}

namespace {

// Sets `key` to `value` unless the caller set it among `args`.
void SetDefault(grpc::ChannelArguments& args, const char* key, int value) {
  const grpc_channel_args c = args.c_channel_args();
  for (size_t i = 0; i < c.num_args; ++i) {
    if (std::string_view(c.args[i].key) == key) return;
  }
  args.SetInt(key, value);
}

}  // namespace

std::shared_ptr<grpc::Channel> Dial(const std::string& address,
                                    const TlsConfig& config,
                                    const DialOptions& options) {
  grpc::ChannelArguments args = options.args;
  std::string target = address;
  const std::vector<std::string> list = SplitAddresses(address);
  if (list.size() == 1) target = list[0];
  if (list.size() > 1) {
    // Several masters (a leader and its standbys): only the leader
    // listens, and pick_first takes the first address that accepts a
    // connection, again after the one it had is lost. The certificate is
    // checked for the first master's name, which every master's
    // certificate must list (those of one state dir share it).
    if (std::string all = ResolveAll(list); !all.empty()) {
      target = std::move(all);
      args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, list[0]);
      args.SetLoadBalancingPolicyName("pick_first");
      // A leader that stops answering without closing its port (frozen,
      // or its host cut off; a lease-led one steps down while its standby
      // takes over) is left within about 5 s: pings every 3 s answered
      // within 2 s, and a connection attempt given up after
      // several_masters_attempt_ms (2 s unless asked), so that pick_first
      // goes on to the next address.
      SetDefault(args, GRPC_ARG_KEEPALIVE_TIME_MS, 3000);
      SetDefault(args, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2000);
      SetDefault(args, GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
      SetDefault(args, GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
      SetDefault(args, GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
                 options.several_masters_attempt_ms);
    } else {
      target = list[0];  // none resolves: gRPC's error names the first
    }
  }
  if (!options.retry_services.empty()) {
    std::vector<std::string> names;
    for (const std::string& service : options.retry_services) {
      names.push_back(absl::StrCat("{\"service\": \"", service, "\"}"));
    }
    args.SetServiceConfigJSON(absl::StrCat(
        "{\"methodConfig\": [{\"name\": [", absl::StrJoin(names, ", "),
        "], \"retryPolicy\": {\"maxAttempts\": 3, "
        "\"initialBackoff\": \"0.2s\", \"maxBackoff\": \"0.4s\", "
        "\"backoffMultiplier\": 2, "
        "\"retryableStatusCodes\": [\"UNAVAILABLE\"]}}]}"));
    SetDefault(args, GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  }
  if (config.insecure) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                     args);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = config.ca_pem;
  ssl.pem_private_key = config.key_pem;
  ssl.pem_cert_chain = config.cert_pem;
  if (!options.target_name_override.empty()) {
    args.SetSslTargetNameOverride(options.target_name_override);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

void AttachToken(grpc::ClientContext* context, const std::string& token) {
  context->AddMetadata("authorization", "Bearer " + token);
}

std::optional<std::string> BearerToken(const grpc::ServerContextBase& context) {
  constexpr std::string_view kScheme = "bearer ";
  const auto& metadata = context.client_metadata();
  auto [begin, end] = metadata.equal_range("authorization");
  for (auto it = begin; it != end; ++it) {
    const std::string_view value(it->second.data(), it->second.size());
    if (value.size() <= kScheme.size() ||
        !absl::EqualsIgnoreCase(
            tiresias::ToAbsl(value.substr(0, kScheme.size())),
            tiresias::ToAbsl(kScheme))) {
      continue;
    }
    return std::string(value.substr(kScheme.size()));
  }
  return std::nullopt;
}

std::optional<Identity> PeerIdentity(const grpc::ServerContextBase& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return std::nullopt;
  const std::vector<grpc::string_ref> transport =
      auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
  if (transport.size() != 1 ||
      transport[0] != GRPC_SSL_TRANSPORT_SECURITY_TYPE) {
    return std::nullopt;
  }
  const std::vector<grpc::string_ref> names =
      auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
  if (names.size() != 1) return std::nullopt;
  absl::StatusOr<Identity> identity =
      ParseIdentity(std::string_view(names[0].data(), names[0].size()));
  if (!identity.ok()) return std::nullopt;
  return *identity;
}

std::string PeerAddress(const grpc::ServerContextBase& context) {
  const std::string peer = context.peer();
  for (std::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (absl::StartsWith(peer, tiresias::ToAbsl(scheme))) {
      return PercentDecode(std::string_view(peer).substr(scheme.size()));
    }
  }
  return peer;
}

}  // namespace tiresias::security
