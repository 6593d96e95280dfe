// Certificates parsed back with OpenSSL: what a TLS peer will see.
#include "security/pki.h"

#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/cert_testing.h"

namespace tiresias::security {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Parse;
using testing::X509Ptr;

// Seconds from now to `time` (negative in the past).
int64_t SecondsFromNow(const ASN1_TIME* time) {
  int days = 0, seconds = 0;
  EXPECT_EQ(ASN1_TIME_diff(&days, &seconds, nullptr, time), 1);
  return int64_t{days} * 86400 + seconds;
}

class PkiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<PemPair> ca = CreateCa("test cluster CA");
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
  }
  PemPair ca_;
};

TEST_F(PkiTest, CaIsSelfSignedCaForTenYearsWithAnEcKey) {
  X509Ptr cert = Parse(ca_.cert_pem);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(testing::Cn(ca_.cert_pem), "test cluster CA");
  EXPECT_EQ(X509_check_ca(cert.get()), 1);
  EXPECT_EQ(X509_check_issued(cert.get(), cert.get()), X509_V_OK);
  EXPECT_EQ(X509_verify(cert.get(), X509_get0_pubkey(cert.get())), 1);
  EXPECT_TRUE(X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN);
  EXPECT_NEAR(SecondsFromNow(X509_get0_notAfter(cert.get())),
              kDefaultCaValidity.count(), 60);
  EXPECT_NEAR(SecondsFromNow(X509_get0_notBefore(cert.get())),
              -kClockSkewAllowance.count(), 60);
  EVP_PKEY* key = X509_get0_pubkey(cert.get());
  EXPECT_TRUE(EVP_PKEY_is_a(key, "EC"));
  char curve[64] = {};
  size_t length = 0;
  EXPECT_EQ(EVP_PKEY_get_group_name(key, curve, sizeof(curve), &length), 1);
  EXPECT_STREQ(curve, "prime256v1");
  EXPECT_THAT(ca_.key_pem, HasSubstr("-----BEGIN PRIVATE KEY-----"));
}

TEST_F(PkiTest, IssuedCertificateCarriesNamesUsagesAndNoCaFlag) {
  absl::StatusOr<PemPair> issued =
      IssueCertificate(ca_, {.common_name = "tiresias-agent:node-1",
                             .dns_names = {"node-1", "node-1.example.org"},
                             .ip_addresses = {"10.0.0.7", "::1"},
                             .server_auth = true,
                             .client_auth = true});
  ASSERT_TRUE(issued.ok()) << issued.status();
  X509Ptr cert = Parse(issued->cert_pem);
  X509Ptr ca = Parse(ca_.cert_pem);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(testing::Cn(issued->cert_pem), "tiresias-agent:node-1");
  testing::Sans sans = testing::SansOf(issued->cert_pem);
  EXPECT_THAT(sans.dns, ElementsAre("node-1", "node-1.example.org"));
  EXPECT_THAT(sans.ips, ElementsAre("10.0.0.7", "::1"));
  EXPECT_EQ(X509_get_extended_key_usage(cert.get()),
            static_cast<uint32_t>(XKU_SSL_SERVER | XKU_SSL_CLIENT));
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_EQ(X509_get_key_usage(cert.get()),
            static_cast<uint32_t>(KU_DIGITAL_SIGNATURE | KU_KEY_AGREEMENT));
  EXPECT_EQ(X509_check_issued(ca.get(), cert.get()), X509_V_OK);
  EXPECT_EQ(X509_verify(cert.get(), X509_get0_pubkey(ca.get())), 1);
  internal::PkeyPtr key = internal::ParsePrivateKey(issued->key_pem);
  EXPECT_EQ(X509_check_private_key(cert.get(), key.get()), 1);
  EXPECT_NEAR(SecondsFromNow(X509_get0_notAfter(cert.get())),
              kDefaultCertValidity.count(), 60);
}

TEST_F(PkiTest, UsagesFollowTheFlags) {
  absl::StatusOr<PemPair> user = IssueCertificate(
      ca_, {.common_name = "tiresias-user:alice", .client_auth = true});
  ASSERT_TRUE(user.ok()) << user.status();
  X509Ptr cert = Parse(user->cert_pem);
  EXPECT_EQ(X509_get_extended_key_usage(cert.get()),
            static_cast<uint32_t>(XKU_SSL_CLIENT));
  EXPECT_EQ(X509_get_ext_by_NID(cert.get(), NID_subject_alt_name, -1), -1)
      << "no names, no subjectAltName";
  absl::StatusOr<PemPair> server = IssueCertificate(
      ca_, {.common_name = "s", .dns_names = {"s"}, .server_auth = true});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(X509_get_extended_key_usage(Parse(server->cert_pem).get()),
            static_cast<uint32_t>(XKU_SSL_SERVER));
}

TEST_F(PkiTest, SerialsAreRandom128BitPositiveNumbers) {
  auto serial_of = [&](const std::string& pem) {
    X509Ptr cert = Parse(pem);
    BIGNUM* bn =
        ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert.get()), nullptr);
    EXPECT_FALSE(BN_is_negative(bn));
    EXPECT_LE(BN_num_bits(bn), 128);
    EXPECT_GT(BN_num_bits(bn), 64);  // fails once in 2^64 runs
    char* hex = BN_bn2hex(bn);
    std::string text = hex;
    OPENSSL_free(hex);
    BN_free(bn);
    return text;
  };
  CertRequest request{.common_name = "tiresias-master", .server_auth = true};
  const std::string a = serial_of(IssueCertificate(ca_, request)->cert_pem);
  const std::string b = serial_of(IssueCertificate(ca_, request)->cert_pem);
  EXPECT_NE(a, b);
  EXPECT_NE(a, serial_of(ca_.cert_pem));
}

TEST_F(PkiTest, LongAgentCommonNameSurvives) {
  // RFC 5280 suggests 64 bytes for a CN; node names go to 253.
  const std::string cn = "tiresias-agent:" + std::string(253, 'n');
  absl::StatusOr<PemPair> issued =
      IssueCertificate(ca_, {.common_name = cn, .client_auth = true});
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_EQ(testing::Cn(issued->cert_pem), cn);
}

TEST_F(PkiTest, ValidityIsCutToTheCas) {
  absl::StatusOr<PemPair> short_ca =
      CreateCa("short", std::chrono::seconds(3600));
  ASSERT_TRUE(short_ca.ok());
  absl::StatusOr<PemPair> issued = IssueCertificate(
      *short_ca, {.common_name = "x",
                  .client_auth = true,
                  .validity = std::chrono::seconds(86400 * 30)});
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_NEAR(SecondsFromNow(X509_get0_notAfter(Parse(issued->cert_pem).get())),
              3600, 60);
}

TEST_F(PkiTest, BadRequestsNameTheField) {
  auto error = [&](CertRequest request) {
    absl::StatusOr<PemPair> issued = IssueCertificate(ca_, request);
    EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(issued.status().message());
  };
  EXPECT_EQ(error({.common_name = "x",
                   .dns_names = {"ok", "bad name,IP:1.2.3.4"},
                   .server_auth = true}),
            "dns_names[1]: expected a DNS name (letters, digits, '-', '.', "
            "'_'), got \"bad name,IP:1.2.3.4\"");
  EXPECT_EQ(error({.common_name = "x",
                   .ip_addresses = {"300.1.1.1"},
                   .server_auth = true}),
            "ip_addresses[0]: expected an IPv4 or IPv6 address, got "
            "\"300.1.1.1\"");
  EXPECT_THAT(error({.common_name = "x"}),
              HasSubstr("server_auth, client_auth"));
  EXPECT_THAT(error({.common_name = "", .client_auth = true}),
              HasSubstr("common_name"));
  EXPECT_THAT(error({.common_name = "x",
                     .client_auth = true,
                     .validity = std::chrono::seconds(0)}),
              HasSubstr("validity"));
  EXPECT_EQ(CreateCa("ca", std::chrono::seconds(-1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(PkiTest, RefusesAKeyThatIsNotTheCas) {
  absl::StatusOr<PemPair> other = CreateCa("other");
  ASSERT_TRUE(other.ok());
  CertRequest request{.common_name = "x", .client_auth = true};
  EXPECT_EQ(IssueCertificate({ca_.cert_pem, other->key_pem}, request)
                .status()
                .message(),
            "CA key: does not match the CA certificate");
  absl::StatusOr<PemPair> leaf = IssueCertificate(ca_, request);
  ASSERT_TRUE(leaf.ok());
  EXPECT_THAT(IssueCertificate(*leaf, request).status().message(),
              HasSubstr("CA certificate: not a CA"));
  EXPECT_EQ(IssueCertificate({"junk", ca_.key_pem}, request).status().message(),
            "CA certificate: not a PEM certificate");
}

TEST(SanSyntaxTest, DnsNamesAndIps) {
  EXPECT_TRUE(IsDnsName("node-1.example.org"));
  EXPECT_TRUE(IsDnsName("*.example.org"));
  EXPECT_FALSE(IsDnsName(""));
  EXPECT_FALSE(IsDnsName("a b"));
  EXPECT_FALSE(IsDnsName("a,DNS:b"));
  EXPECT_TRUE(IsIpAddress("127.0.0.1"));
  EXPECT_TRUE(IsIpAddress("fe80::1"));
  EXPECT_FALSE(IsIpAddress("localhost"));
  EXPECT_FALSE(IsIpAddress("1.2.3"));
}

}  // namespace
}  // namespace tiresias::security
