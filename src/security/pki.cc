#include "security/pki.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "security/openssl_util.h"

namespace tiresias::security {

namespace {

using internal::ExtPtr;
using internal::GeneralNamesPtr;
using internal::PkeyPtr;
using internal::X509Ptr;

absl::Status OpenSslFailure(std::string_view what) {
  return absl::InternalError(
      absl::StrCat(ToAbsl(what), ": ", internal::TakeOpenSslErrors()));
}

bool IsPrintableAscii(std::string_view text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

absl::Status CheckCommonName(std::string_view name) {
  // UTF-8 is allowed (node names may hold it); control bytes are not.
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(
          "common_name: expected printable text, got a control character");
    }
  }
  if (name.empty()) {
    return absl::InvalidArgumentError("common_name: expected a name, got none");
  }
  return absl::OkStatus();
}

absl::Status CheckValidity(std::chrono::seconds validity) {
  if (validity.count() <= 0 || validity > kMaxValidity) {
    return absl::InvalidArgumentError(absl::StrCat(
        "validity: expected more than 0 and at most ",
        kMaxValidity.count() / 86400, " days, got ", validity.count(), " s"));
  }
  return absl::OkStatus();
}

// The address in network byte order (4 or 16 bytes); empty when `text` is
// not one.
std::string IpBytes(std::string_view text) {
  const std::string copy(text);  // inet_pton wants a terminated string
  unsigned char raw[16];
  if (inet_pton(AF_INET, copy.c_str(), raw) == 1) {
    return std::string(reinterpret_cast<char*>(raw), 4);
  }
  if (inet_pton(AF_INET6, copy.c_str(), raw) == 1) {
    return std::string(reinterpret_cast<char*>(raw), 16);
  }
  return "";
}

PkeyPtr GenerateKey() { return PkeyPtr(EVP_EC_gen("P-256")); }

// A random positive 128-bit serial number.
absl::Status SetRandomSerial(X509* cert) {
  const std::string bytes = internal::RandomBytes(16);
  BIGNUM* bn = BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()),
                         static_cast<int>(bytes.size()), nullptr);
  if (bn != nullptr && BN_is_zero(bn)) BN_one(bn);  // 2^-128: still unique
  const bool ok =
      bn != nullptr &&
      BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
  BN_free(bn);
  return ok ? absl::OkStatus() : OpenSslFailure("serial number");
}

// A v3 certificate for `key` with subject CN=common_name, valid from
// kClockSkewAllowance ago for `validity`; no issuer, extensions or
// signature yet.
absl::StatusOr<X509Ptr> NewCertificate(std::string_view common_name,
                                       EVP_PKEY* key,
                                       std::chrono::seconds validity) {
  X509Ptr cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), X509_VERSION_3) != 1) {
    return OpenSslFailure("certificate");
  }
  RETURN_IF_ERROR(SetRandomSerial(cert.get()));
  // UTF8String set directly: the table-driven path would cap the CN at 64
  // bytes (RFC 5280's ub-common-name), and an agent's CN holds a node name
  // of up to 253 bytes. TLS stacks read longer names without complaint.
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_NID(
          subject, NID_commonName, V_ASN1_UTF8STRING,
          reinterpret_cast<const unsigned char*>(common_name.data()),
          static_cast<int>(common_name.size()), -1, 0) != 1) {
    return OpenSslFailure("common name");
  }
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()),
                      -kClockSkewAllowance.count()) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), validity.count()) ==
          nullptr ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return OpenSslFailure("certificate validity or key");
  }
  return cert;
}

// Adds an extension written in OpenSSL's configuration syntax (our own
// constant strings only: user text goes through SetSubjectAltNames).
absl::Status AddExtension(X509* cert, X509* issuer, int nid,
                          const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpenSslFailure(absl::StrCat("extension ", OBJ_nid2sn(nid)));
  }
  return absl::OkStatus();
}

absl::Status AddGeneralName(GENERAL_NAMES* names, int type,
                            std::string_view bytes) {
  GENERAL_NAME* name = GENERAL_NAME_new();
  ASN1_STRING* value = ASN1_STRING_type_new(
      type == GEN_DNS ? V_ASN1_IA5STRING : V_ASN1_OCTET_STRING);
  if (name == nullptr || value == nullptr ||
      ASN1_STRING_set(value, bytes.data(), static_cast<int>(bytes.size())) !=
          1) {
    GENERAL_NAME_free(name);
    ASN1_STRING_free(value);
    return OpenSslFailure("subjectAltName");
  }
  GENERAL_NAME_set0_value(name, type, value);
  if (sk_GENERAL_NAME_push(names, name) == 0) {
    GENERAL_NAME_free(name);
    return OpenSslFailure("subjectAltName");
  }
  return absl::OkStatus();
}

// subjectAltName built entry by entry, so that no name can smuggle
// configuration syntax ("DNS:a,IP:...") into the certificate.
absl::Status SetSubjectAltNames(X509* cert, const CertRequest& request) {
  if (request.dns_names.empty() && request.ip_addresses.empty()) {
    return absl::OkStatus();
  }
  GeneralNamesPtr names(sk_GENERAL_NAME_new_null());
  if (names == nullptr) return OpenSslFailure("subjectAltName");
  for (size_t i = 0; i < request.dns_names.size(); ++i) {
    const std::string& dns = request.dns_names[i];
    if (!IsDnsName(dns)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dns_names[", i,
          "]: expected a DNS name (letters, digits, '-', '.', '_'), got ",
          IsPrintableAscii(dns) ? absl::StrCat("\"", dns, "\"")
                                : std::string("unprintable text")));
    }
    RETURN_IF_ERROR(AddGeneralName(names.get(), GEN_DNS, dns));
  }
  for (size_t i = 0; i < request.ip_addresses.size(); ++i) {
    const std::string& ip = request.ip_addresses[i];
    const std::string raw = IpBytes(ip);
    if (raw.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ip_addresses[", i, "]: expected an IPv4 or IPv6 address, got ",
          IsPrintableAscii(ip) ? absl::StrCat("\"", ip, "\"")
                               : std::string("unprintable text")));
    }
    RETURN_IF_ERROR(AddGeneralName(names.get(), GEN_IPADD, raw));
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0,
                        X509V3_ADD_DEFAULT) != 1) {
    return OpenSslFailure("subjectAltName");
  }
  return absl::OkStatus();
}

absl::StatusOr<PemPair> SignAndEncode(X509* cert, EVP_PKEY* signer,
                                      EVP_PKEY* key) {
  if (X509_sign(cert, signer, EVP_sha256()) == 0) {
    return OpenSslFailure("signing");
  }
  internal::BioPtr cert_bio(BIO_new(BIO_s_mem()));
  internal::BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (cert_bio == nullptr || key_bio == nullptr ||
      PEM_write_bio_X509(cert_bio.get(), cert) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key, nullptr, nullptr, 0, nullptr,
                               nullptr) != 1) {
    return OpenSslFailure("PEM encoding");
  }
  auto text = [](BIO* bio) {
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio, &data);
    return std::string(data, length);
  };
  return PemPair{text(cert_bio.get()), text(key_bio.get())};
}

struct LoadedCa {
  X509Ptr cert;
  PkeyPtr key;
};

absl::StatusOr<LoadedCa> LoadCa(const PemPair& ca) {
  LoadedCa loaded{internal::ParseCertificate(ca.cert_pem),
                  internal::ParsePrivateKey(ca.key_pem)};
  if (loaded.cert == nullptr) {
    return absl::InvalidArgumentError("CA certificate: not a PEM certificate");
  }
  if (loaded.key == nullptr) {
    return absl::InvalidArgumentError(
        "CA key: not an unencrypted PEM private key");
  }
  if (X509_check_ca(loaded.cert.get()) != 1) {
    return absl::InvalidArgumentError(
        "CA certificate: not a CA (basicConstraints CA:TRUE with "
        "keyCertSign expected)");
  }
  if (X509_check_private_key(loaded.cert.get(), loaded.key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        "CA key: does not match the CA certificate");
  }
  return loaded;
}

}  // namespace

bool IsDnsName(std::string_view name) {
  if (name.starts_with("*.")) name.remove_prefix(2);
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool IsIpAddress(std::string_view text) { return !IpBytes(text).empty(); }

absl::StatusOr<PemPair> CreateCa(std::string_view common_name,
                                 std::chrono::seconds validity) {
  RETURN_IF_ERROR(CheckCommonName(common_name));
  RETURN_IF_ERROR(CheckValidity(validity));
  PkeyPtr key = GenerateKey();
  if (key == nullptr) return OpenSslFailure("EC P-256 key");
  ASSIGN_OR_RETURN(X509Ptr cert,
                   NewCertificate(common_name, key.get(), validity));
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) !=
      1) {
    return OpenSslFailure("issuer");
  }
  X509* c = cert.get();
  RETURN_IF_ERROR(
      AddExtension(c, c, NID_basic_constraints, "critical,CA:TRUE"));
  RETURN_IF_ERROR(
      AddExtension(c, c, NID_key_usage, "critical,keyCertSign,cRLSign"));
  RETURN_IF_ERROR(AddExtension(c, c, NID_subject_key_identifier, "hash"));
  RETURN_IF_ERROR(
      AddExtension(c, c, NID_authority_key_identifier, "keyid:always"));
  return SignAndEncode(c, key.get(), key.get());
}

absl::StatusOr<PemPair> IssueCertificate(const PemPair& ca,
                                         const CertRequest& request) {
  RETURN_IF_ERROR(CheckCommonName(request.common_name));
  RETURN_IF_ERROR(CheckValidity(request.validity));
  if (!request.server_auth && !request.client_auth) {
    return absl::InvalidArgumentError(
        "server_auth, client_auth: expected at least one to be set");
  }
  ASSIGN_OR_RETURN(LoadedCa issuer, LoadCa(ca));
  PkeyPtr key = GenerateKey();
  if (key == nullptr) return OpenSslFailure("EC P-256 key");
  ASSIGN_OR_RETURN(X509Ptr cert, NewCertificate(request.common_name, key.get(),
                                                request.validity));
  X509* c = cert.get();
  const ASN1_TIME* ca_end = X509_get0_notAfter(issuer.cert.get());
  if (ASN1_TIME_compare(X509_get0_notAfter(c), ca_end) > 0 &&
      X509_set1_notAfter(c, ca_end) != 1) {
    return OpenSslFailure("validity");
  }
  if (X509_set_issuer_name(c, X509_get_subject_name(issuer.cert.get())) != 1) {
    return OpenSslFailure("issuer");
  }
  RETURN_IF_ERROR(SetSubjectAltNames(c, request));
  X509* ca_cert = issuer.cert.get();
  RETURN_IF_ERROR(
      AddExtension(c, ca_cert, NID_basic_constraints, "critical,CA:FALSE"));
  RETURN_IF_ERROR(AddExtension(c, ca_cert, NID_key_usage,
                               "critical,digitalSignature,keyAgreement"));
  const char* usage = request.server_auth && request.client_auth
                          ? "serverAuth,clientAuth"
                      : request.server_auth ? "serverAuth"
                                            : "clientAuth";
  RETURN_IF_ERROR(AddExtension(c, ca_cert, NID_ext_key_usage, usage));
  RETURN_IF_ERROR(AddExtension(c, ca_cert, NID_subject_key_identifier, "hash"));
  RETURN_IF_ERROR(
      AddExtension(c, ca_cert, NID_authority_key_identifier, "keyid:always"));
  return SignAndEncode(c, issuer.key.get(), key.get());
}

}  // namespace tiresias::security
