#include "security/cert_dirs.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <string>

#include "core/testing/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/cert_testing.h"
#include "security/pem_files.h"
#include "security/tls.h"

namespace tiresias::security {
namespace {

using test_support::TestDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ModeOf;
using testing::X509Ptr;

std::string ReadOrEmpty(const std::string& path) {
  absl::StatusOr<std::string> text = ReadPem(path, PemKind::kCertificate);
  return text.ok() ? *text : "";
}

class CertDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_dir_ = dir_.File("ca");
    ASSERT_TRUE(InitCaDir(ca_dir_, "test CA").ok());
  }
  TestDir dir_{"cert_dirs_test"};
  std::string ca_dir_;
};

TEST_F(CertDirsTest, InitWritesTheCaWithAPrivateFolderAndKey) {
  EXPECT_EQ(ModeOf(ca_dir_), 0700);
  EXPECT_EQ(ModeOf(ca_dir_ + "/ca.pem"), 0644);
  EXPECT_EQ(ModeOf(ca_dir_ + "/ca-key.pem"), 0600);
  EXPECT_EQ(testing::Cn(ReadOrEmpty(ca_dir_ + "/ca.pem")), "test CA");
}

TEST_F(CertDirsTest, InitRefusesToReplaceACa) {
  const std::string before = ReadOrEmpty(ca_dir_ + "/ca.pem");
  absl::Status again = InitCaDir(ca_dir_, "second CA");
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(again.message(),
            ca_dir_ +
                "/ca.pem exists; a new CA would invalidate every "
                "certificate issued");
  EXPECT_EQ(ReadOrEmpty(ca_dir_ + "/ca.pem"), before);
  // A key alone (a half-restored backup) is protected as well.
  const std::string key_only = dir_.File("key_only");
  std::filesystem::create_directory(key_only);
  dir_.Write("key_only/ca-key.pem", "secret", 0600);
  EXPECT_EQ(InitCaDir(key_only, "x").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(std::filesystem::exists(key_only + "/ca.pem"));
}

TEST_F(CertDirsTest, MasterCertificateListsLocalNamesHostnameAndSans) {
  const std::string out = dir_.File("master");
  absl::StatusOr<IssuedFiles> files =
      IssueCertFiles({.identity = Identity{IdentityKind::kMaster, ""},
                      .ca_dir = ca_dir_,
                      .out_dir = out,
                      .sans = {"master.example.org", "10.1.2.3", "localhost"}});
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->cert_path, out + "/master.pem");
  EXPECT_EQ(files->key_path, out + "/master-key.pem");
  EXPECT_EQ(files->ca_path, out + "/ca.pem");
  EXPECT_EQ(ModeOf(files->key_path), 0600);
  EXPECT_EQ(ModeOf(files->cert_path), 0644);
  EXPECT_EQ(ModeOf(out), 0700);
  EXPECT_EQ(ReadOrEmpty(files->ca_path), ReadOrEmpty(ca_dir_ + "/ca.pem"));
  const std::string pem = ReadOrEmpty(files->cert_path);
  EXPECT_EQ(testing::Cn(pem), "tiresias-master");
  char host[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  testing::Sans sans = testing::SansOf(pem);
  EXPECT_THAT(sans.dns, ElementsAre("localhost", std::string(host),
                                    "master.example.org"));
  EXPECT_THAT(sans.ips, ElementsAre("127.0.0.1", "::1", "10.1.2.3"));
  X509Ptr cert = testing::Parse(pem);
  EXPECT_EQ(X509_get_extended_key_usage(cert.get()),
            static_cast<uint32_t>(XKU_SSL_SERVER | XKU_SSL_CLIENT));
  // What `master` reads at startup.
  absl::StatusOr<TlsConfig> config = LoadTlsDir(out, "master");
  EXPECT_TRUE(config.ok()) << config.status();
}

TEST_F(CertDirsTest, AgentCertificateNamesItsNode) {
  const std::string out = dir_.File("agent");
  absl::StatusOr<IssuedFiles> files =
      IssueCertFiles({.identity = Identity{IdentityKind::kAgent, "gpu-7"},
                      .ca_dir = ca_dir_,
                      .out_dir = out});
  ASSERT_TRUE(files.ok()) << files.status();
  const std::string pem = ReadOrEmpty(out + "/agent.pem");
  EXPECT_EQ(testing::Cn(pem), "tiresias-agent:gpu-7");
  EXPECT_THAT(testing::SansOf(pem).dns, ElementsAre("localhost", "gpu-7"));
  EXPECT_EQ(X509_get_extended_key_usage(testing::Parse(pem).get()),
            static_cast<uint32_t>(XKU_SSL_SERVER | XKU_SSL_CLIENT));
  EXPECT_TRUE(LoadTlsDir(out, "agent").ok());
}

TEST_F(CertDirsTest, BadNodeNameWritesNothing) {
  const std::string out = dir_.File("bad");
  for (const std::string& node :
       {std::string(), std::string("a\tb"), std::string(254, 'n')}) {
    absl::StatusOr<IssuedFiles> files =
        IssueCertFiles({.identity = Identity{IdentityKind::kAgent, node},
                        .ca_dir = ca_dir_,
                        .out_dir = out});
    EXPECT_EQ(files.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(files.status().message(), HasSubstr("node name: expected"));
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(CertDirsTest, UserCertificateIsForClientsOnly) {
  const std::string out = dir_.File("alice");
  ASSERT_TRUE(
      IssueCertFiles({.identity = Identity{IdentityKind::kUser, "alice"},
                      .ca_dir = ca_dir_,
                      .out_dir = out})
          .ok());
  const std::string pem = ReadOrEmpty(out + "/user.pem");
  EXPECT_EQ(testing::Cn(pem), "tiresias-user:alice");
  EXPECT_THAT(testing::SansOf(pem).dns, IsEmpty());
  EXPECT_EQ(X509_get_extended_key_usage(testing::Parse(pem).get()),
            static_cast<uint32_t>(XKU_SSL_CLIENT));
  EXPECT_EQ(IssueCertFiles({.identity = Identity{IdentityKind::kUser, "-rf"},
                            .ca_dir = ca_dir_,
                            .out_dir = out})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CertDirsTest, MissingCaNamesTheFile) {
  absl::StatusOr<IssuedFiles> files =
      IssueCertFiles({.identity = Identity{IdentityKind::kMaster, ""},
                      .ca_dir = dir_.File("nowhere"),
                      .out_dir = dir_.File("out")});
  EXPECT_EQ(files.status().message(),
            dir_.File("nowhere") +
                "/ca.pem: unreadable: No such file or "
                "directory");
}

TEST(RequestForTest, SansAreCheckedAndDeduplicated) {
  absl::StatusOr<CertRequest> request =
      RequestFor({IdentityKind::kMaster, ""}, "host-1",
                 {"127.0.0.1", "host-1", "fd00::2"});
  ASSERT_TRUE(request.ok());
  EXPECT_THAT(request->dns_names, ElementsAre("localhost", "host-1"));
  EXPECT_THAT(request->ip_addresses,
              ElementsAre("127.0.0.1", "::1", "fd00::2"));
  EXPECT_EQ(RequestFor({IdentityKind::kMaster, ""}, "h", {"bad name"})
                .status()
                .message(),
            "--san: expected a host name or an IP address, got \"bad name\"");
  EXPECT_THAT(
      RequestFor({IdentityKind::kUser, "bob"}, "h", {"x"}).status().message(),
      HasSubstr("takes no subjectAltName"));
  // A node name that is no DNS name is fine; it just is not a SAN.
  absl::StatusOr<CertRequest> agent =
      RequestFor({IdentityKind::kAgent, "rack 2 / slot 3"}, "h", {});
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_EQ(agent->common_name, "tiresias-agent:rack 2 / slot 3");
  EXPECT_THAT(agent->dns_names, ElementsAre("localhost"));
}

}  // namespace
}  // namespace tiresias::security
