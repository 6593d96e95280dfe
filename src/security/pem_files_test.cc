#include "security/pem_files.h"

#include <openssl/pem.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "core/testing/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/cert_testing.h"

namespace tiresias::security {
namespace {

using test_support::TestDir;
using ::testing::HasSubstr;
using testing::ModeOf;

// Sets the umask for one scope, restoring the old one after.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(umask(mask)) {}
  ~ScopedUmask() { umask(old_); }

 private:
  mode_t old_;
};

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> text = ReadPem(path);
  return text.ok() ? *text : std::string(text.status().message());
}

class PemFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<PemPair> ca = CreateCa("files test CA");
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
  }
  TestDir dir_{"pem_files_test"};
  PemPair ca_;
};

TEST_F(PemFilesTest, KeyIs0600AndCertificate0644WhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{022}, mode_t{077}}) {
    ScopedUmask scoped(mask);
    ASSERT_TRUE(WritePemFiles(dir_.path().string(), "master", ca_).ok());
    EXPECT_EQ(ModeOf(dir_.File("master-key.pem")), 0600) << "umask " << mask;
    EXPECT_EQ(ModeOf(dir_.File("master.pem")), 0644) << "umask " << mask;
  }
  EXPECT_EQ(Read(dir_.File("master.pem")), ca_.cert_pem);
  absl::StatusOr<std::string> key =
      ReadPem(dir_.File("master-key.pem"), PemKind::kPrivateKey);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(*key, ca_.key_pem);
  EXPECT_EQ(CertPath("/d", "agent"), "/d/agent.pem");
  EXPECT_EQ(KeyPath("/d", "agent"), "/d/agent-key.pem");
}

TEST_F(PemFilesTest, RewriteReplacesAtomicallyAndLeavesNoTemporaryFile) {
  // An old key readable by others (a hand-made file) gets the new key
  // with 0600, never the old file's mode.
  dir_.Write("agent-key.pem", "old", 0644);
  absl::StatusOr<PemPair> other = CreateCa("other");
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(WritePemFiles(dir_.path().string(), "agent", *other).ok());
  EXPECT_EQ(ModeOf(dir_.File("agent-key.pem")), 0600);
  EXPECT_EQ(Read(dir_.File("agent.pem")), other->cert_pem);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos)
        << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 2);
}

TEST_F(PemFilesTest, WriteIntoAMissingFolderNamesThePath) {
  const std::string missing = dir_.File("no/such/dir");
  absl::Status s = WritePemFiles(missing, "user", ca_);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(missing + "/user-key.pem: cannot create"));
}

TEST_F(PemFilesTest, ReadErrorsNameTheFile) {
  const std::string missing = dir_.File("ca.pem");
  absl::StatusOr<std::string> r = ReadPem(missing);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(),
            missing + ": unreadable: No such file or directory");

  const std::string junk = dir_.Write("junk.pem", "hello\n");
  EXPECT_EQ(ReadPem(junk).status().message(), junk + ": not a PEM certificate");

  const std::string cert = dir_.Write("cert.pem", ca_.cert_pem);
  EXPECT_EQ(
      ReadPem(cert, PemKind::kPrivateKey).status().message(),
      cert + ": not a PEM private key (or one protected by a passphrase)");

  const std::string key = dir_.Write("key.pem", ca_.key_pem, 0600);
  EXPECT_EQ(ReadPem(key).status().message(), key + ": not a PEM certificate");

  std::filesystem::create_directory(dir_.File("folder"));
  EXPECT_THAT(ReadPem(dir_.File("folder")).status().message(),
              HasSubstr(dir_.File("folder") + ": unreadable: "));
  if (geteuid() != 0) {  // root reads anything
    const std::string locked = dir_.Write("locked.pem", ca_.cert_pem, 0);
    absl::StatusOr<std::string> denied = ReadPem(locked);
    EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(denied.status().message(),
              locked + ": unreadable: Permission denied");
  }
}

TEST_F(PemFilesTest, EncryptedKeyIsRefusedWithoutPrompting) {
  internal::PkeyPtr key = internal::ParsePrivateKey(ca_.key_pem);
  internal::BioPtr bio(BIO_new(BIO_s_mem()));
  char passphrase[] = "secret";
  ASSERT_EQ(
      PEM_write_bio_PrivateKey(bio.get(), key.get(), EVP_aes_128_cbc(),
                               reinterpret_cast<unsigned char*>(passphrase), 6,
                               nullptr, nullptr),
      1);
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio.get(), &data);
  const std::string path =
      dir_.Write("enc.pem", std::string(data, length), 0600);
  EXPECT_THAT(ReadPem(path, PemKind::kPrivateKey).status().message(),
              HasSubstr("not a PEM private key"));
}

}  // namespace
}  // namespace tiresias::security
