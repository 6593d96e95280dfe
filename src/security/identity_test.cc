#include "security/identity.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tiresias::security {
namespace {

TEST(IdentityTest, CommonNamesRoundTrip) {
  for (const Identity& identity :
       {Identity{IdentityKind::kMaster, ""},
        Identity{IdentityKind::kAgent, "gpu-node-07"},
        Identity{IdentityKind::kAgent, "rack 3: node \xc5\x93"},  // UTF-8, ':'
        Identity{IdentityKind::kUser, "alice.b_c-d"}}) {
    const std::string cn = CommonName(identity);
    absl::StatusOr<Identity> parsed = ParseIdentity(cn);
    ASSERT_TRUE(parsed.ok()) << cn << ": " << parsed.status();
    EXPECT_EQ(*parsed, identity) << cn;
  }
  EXPECT_EQ(CommonName({IdentityKind::kMaster, ""}), "tiresias-master");
  EXPECT_EQ(CommonName({IdentityKind::kAgent, "n1"}), "tiresias-agent:n1");
  EXPECT_EQ(CommonName({IdentityKind::kUser, "bob"}), "tiresias-user:bob");
}

TEST(IdentityTest, AnythingElseIsNotFound) {
  for (const std::string cn :
       {"", "tiresias-master ", "tiresias-master:x", "Tiresias-Master",
        "tiresias-agent:", "tiresias-agent", "tiresias-user:",
        "tiresias-user:-rf", "tiresias-user:a b", "tiresias-agent:bad\x07",
        "tiresias-agent:bad\xc2\x85",  // C1 control (NEL)
        "tiresias-agent:\xff", "example.com", "tiresias-admin:root"}) {
    absl::StatusOr<Identity> parsed = ParseIdentity(cn);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kNotFound) << cn;
  }
  EXPECT_NE(ParseIdentity("nope").status().message().find(
                "expected tiresias-master, tiresias-agent:<node> or "
                "tiresias-user:<user>"),
            std::string::npos);
}

TEST(IdentityTest, NodeNamesAreOneTo253PrintableBytes) {
  EXPECT_TRUE(ValidateNodeName("n").ok());
  EXPECT_TRUE(ValidateNodeName(std::string(253, 'a')).ok());
  EXPECT_TRUE(ValidateNodeName("n\xc5\x93ud").ok());
  for (const std::string& bad :
       {std::string(), std::string(254, 'a'), std::string("a\nb"),
        std::string("a\x7f"), std::string("\xc0\x80")}) {
    absl::Status s = ValidateNodeName(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("node name: expected 1 to 253 bytes"),
              std::string::npos)
        << s;
  }
}

TEST(IdentityTest, UserNamesAreUnixAccountNames) {
  EXPECT_TRUE(ValidateUserName("alice").ok());
  EXPECT_TRUE(ValidateUserName("_svc.train-1").ok());
  EXPECT_TRUE(ValidateUserName(std::string(32, 'u')).ok());
  for (const std::string& bad :
       std::vector<std::string>{"", "-alice", "al ice", "root;rm", "a/b",
                                "\xc5\x93", std::string(33, 'u')}) {
    EXPECT_EQ(ValidateUserName(bad).code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(ValidateUserName("a b").message(),
            "user name: expected a Unix account name (1 to 32 letters, "
            "digits, '.', '_' or '-', not starting with '-'), got \"a b\"");
}

}  // namespace
}  // namespace tiresias::security
