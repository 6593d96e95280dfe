// Internal to src/security: owning pointers for OpenSSL objects, the
// library's last error as text, and the process's random bytes.
#ifndef TIRESIAS_SECURITY_OPENSSL_UTIL_H_
#define TIRESIAS_SECURITY_OPENSSL_UTIL_H_

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace tiresias::security::internal {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};

using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using NamePtr = std::unique_ptr<X509_NAME, Deleter<X509_NAME, X509_NAME_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION,
                               Deleter<X509_EXTENSION, X509_EXTENSION_free>>;
using GeneralNamesPtr =
    std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES, GENERAL_NAMES_free>>;

// The reasons OpenSSL queued on this thread, "; "-joined (oldest first),
// and clears the queue; "no detail from OpenSSL" when it is empty.
std::string TakeOpenSslErrors();

// `n` bytes from the OS's cryptographic random source (OpenSSL's DRBG,
// seeded by getrandom). Aborts if none can be had: issuing a predictable
// key, serial or token would be worse than stopping.
std::string RandomBytes(size_t n);

// Lowercase hex of `bytes`.
std::string Hex(std::string_view bytes);

// A read-only memory BIO over `text` (which must outlive it).
BioPtr MemoryBio(std::string_view text);

// PEM parsing: null when `pem` does not hold one (the first, for X509).
X509Ptr ParseCertificate(std::string_view pem);
PkeyPtr ParsePrivateKey(std::string_view pem);

// The subject's common name as UTF-8; empty when there is none.
std::string CommonNameOf(const X509* cert);

}  // namespace tiresias::security::internal

#endif  // TIRESIAS_SECURITY_OPENSSL_UTIL_H_
