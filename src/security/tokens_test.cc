#include "security/tokens.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::security {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

TEST(TokensTest, NewTokenParsesBackAndMatchesItsHash) {
  IssuedToken token = NewToken(42);
  EXPECT_THAT(token.text, MatchesRegex("tsk_42_[0-9a-f]{64}"));
  EXPECT_THAT(token.salt, MatchesRegex("[0-9a-f]{32}"));
  EXPECT_THAT(token.hash, MatchesRegex("[0-9a-f]{64}"));
  absl::StatusOr<ParsedToken> parsed = ParseToken(token.text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->id, 42);
  EXPECT_EQ("tsk_42_" + parsed->secret, token.text);
  EXPECT_TRUE(SecretMatches(parsed->secret, token.salt, token.hash));
  EXPECT_EQ(HashSecret(parsed->secret, token.salt), token.hash);
}

TEST(TokensTest, TokensAndSaltsDiffer) {
  IssuedToken a = NewToken(1), b = NewToken(1);
  EXPECT_NE(a.text, b.text);
  EXPECT_NE(a.salt, b.salt);
}

TEST(TokensTest, HashIsSha256OfSaltThenSecret) {
  // printf 'saltsecret' | sha256sum
  EXPECT_EQ(HashSecret("secret", "salt"),
            "bede90386d450cea8b77b822f8887065e4e5abf132c2f9dccfcc7fbd4cba5e35");
  EXPECT_EQ(HashSecret("", ""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HashSecret("c", "ab"), HashSecret("bc", "a"))
      << "the hash is over the concatenation";
}

TEST(TokensTest, SecretMatchesOnlyTheRightSecretAndSalt) {
  IssuedToken token = NewToken(7);
  const std::string secret = ParseToken(token.text)->secret;
  EXPECT_TRUE(SecretMatches(secret, token.salt, token.hash));
  std::string wrong = secret;
  wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
  EXPECT_FALSE(SecretMatches(wrong, token.salt, token.hash));
  EXPECT_FALSE(SecretMatches(secret, NewToken(7).salt, token.hash));
  EXPECT_FALSE(SecretMatches(secret, token.salt, ""));
  EXPECT_FALSE(SecretMatches(secret, token.salt, token.hash.substr(1)));
}

TEST(TokensTest, MalformedTokensAreRejectedWithoutTheSecret) {
  const std::string secret(64, 'a');
  const std::string leaked = "deadbeefcafe";  // must never be echoed
  for (const std::string& bad : std::vector<std::string>{
           "", "tsk_", "tsk_1", "tsk_1_", "tsk__" + secret, "tsk_0_" + secret,
           "tsk_-1_" + secret, "tsk_01_" + secret, "tsk_x_" + secret,
           "tsk_99999999999999999999_" + secret, "tsk_1_" + secret.substr(1),
           "tsk_1_" + secret + "a", "tsk_1_" + std::string(64, 'A'),
           "TSK_1_" + secret, "Bearer tsk_1_" + secret,
           "tsk_1_" + leaked + std::string(52, 'g'), "tsk_1_" + secret + " "}) {
    absl::StatusOr<ParsedToken> parsed = ParseToken(bad);
    ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    const std::string message(parsed.status().message());
    EXPECT_THAT(message, HasSubstr("token: ")) << bad;
    EXPECT_THAT(message, Not(HasSubstr(leaked)));
    EXPECT_THAT(message, Not(HasSubstr("aaaaaaaa")));
  }
  EXPECT_EQ(ParseToken("tsk_5_xyz").status().message(),
            "token: the secret is not 64 lowercase hex digits (expected "
            "tsk_<id>_<64 lowercase hex digits>)");
  EXPECT_EQ(ParseToken("abc").status().message(),
            "token: does not start with tsk_ (expected tsk_<id>_<64 "
            "lowercase hex digits>)");
}

TEST(TokensTest, LargestIdParses) {
  absl::StatusOr<ParsedToken> parsed =
      ParseToken("tsk_9223372036854775807_" + std::string(64, 'f'));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->id, INT64_MAX);
}

TEST(TokensTest, ParseDurationTakesDaysHoursMinutesSeconds) {
  EXPECT_EQ(*ParseDuration("30d"), std::chrono::hours(24 * 30));
  EXPECT_EQ(*ParseDuration("12h"), std::chrono::hours(12));
  EXPECT_EQ(*ParseDuration("45m"), std::chrono::minutes(45));
  EXPECT_EQ(*ParseDuration("90s"), std::chrono::seconds(90));
  for (const std::string bad :
       {"", "d", "30", "0d", "-1d", "+1d", "1.5h", "1w", "30 d", " 30d", "1D",
        "99999999999999999999s", "106751991167301d"}) {
    absl::StatusOr<std::chrono::seconds> d = ParseDuration(bad);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseDuration("1w").status().message(),
            "duration: expected a positive whole number followed by d, h, m "
            "or s (e.g. 30d, 12h, 45m, 90s), got \"1w\"");
  EXPECT_THAT(std::string(ParseDuration("x", "--valid-for").status().message()),
              ::testing::StartsWith("--valid-for: expected"));
}

TEST(TokensTest, RandomHexIsFreshLowercaseHexEachTime) {
  const std::string a = RandomHex(16);
  EXPECT_THAT(a, ::testing::MatchesRegex("[0-9a-f]{32}"));
  EXPECT_NE(a, RandomHex(16));
}

TEST(TokensTest, RedactTokensHidesEverySecret) {
  const std::string secret(64, 'e');
  EXPECT_EQ(RedactTokens("auth with tsk_12_" + secret + " failed"),
            "auth with tsk_12_<redacted> failed");
  EXPECT_EQ(RedactTokens("a=tsk_1_" + secret + ",b=tsk_22_" + secret),
            "a=tsk_1_<redacted>,b=tsk_22_<redacted>");
  // A cut or mistyped secret is hidden too; upper-case hex as well.
  EXPECT_EQ(RedactTokens("tsk_3_ABCdef01 x"), "tsk_3_<redacted> x");
  EXPECT_EQ(RedactTokens("tsk_3_" + secret + "zz"), "tsk_3_<redacted>zz");
  // Not token-shaped: left alone.
  for (const std::string plain :
       {"", "no tokens here", "tsk_", "tsk_12", "tsk_12_", "tsk__abc",
        "tsk_x_abc", "tsk_12_zz", "tsk_tsk_"}) {
    EXPECT_EQ(RedactTokens(plain), plain);
  }
  EXPECT_EQ(RedactTokens("tsk_tsk_5_" + secret), "tsk_tsk_5_<redacted>");
}

}  // namespace
}  // namespace tiresias::security
