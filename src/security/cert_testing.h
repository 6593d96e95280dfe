// Test-only: certificates parsed back with OpenSSL, to check what pki.cc
// wrote, and file modes.
#ifndef TIRESIAS_SECURITY_CERT_TESTING_H_
#define TIRESIAS_SECURITY_CERT_TESTING_H_

#include <arpa/inet.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "security/openssl_util.h"

namespace tiresias::security::testing {

using internal::X509Ptr;

inline X509Ptr Parse(const std::string& pem) {
  return internal::ParseCertificate(pem);
}

inline std::string Cn(const std::string& pem) {
  X509Ptr cert = Parse(pem);
  return cert == nullptr ? "<no certificate>"
                         : internal::CommonNameOf(cert.get());
}

struct Sans {
  std::vector<std::string> dns;
  std::vector<std::string> ips;  // as inet_ntop writes them
};

inline Sans SansOf(const std::string& pem) {
  Sans sans;
  X509Ptr cert = Parse(pem);
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type == GEN_DNS) {
      const ASN1_STRING* s = name->d.dNSName;
      sans.dns.emplace_back(
          reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
          ASN1_STRING_length(s));
    } else if (name->type == GEN_IPADD) {
      const ASN1_STRING* s = name->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      inet_ntop(ASN1_STRING_length(s) == 4 ? AF_INET : AF_INET6,
                ASN1_STRING_get0_data(s), text, sizeof(text));
      sans.ips.emplace_back(text);
    }
  }
  GENERAL_NAMES_free(names);
  return sans;
}

// The permission bits of a file; -1 when it does not exist.
inline int ModeOf(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return st.st_mode & 07777;
}

}  // namespace tiresias::security::testing

#endif  // TIRESIAS_SECURITY_CERT_TESTING_H_
