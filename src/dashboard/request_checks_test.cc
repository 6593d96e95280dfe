#include "dashboard/request_checks.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::HasSubstr;

TEST(HostAllowListTest, AnswersToItsLoopbackNamesOnItsPortOnly) {
  auto list = HostAllowList::Make("127.0.0.1", 8080, {});
  ASSERT_TRUE(list.ok()) << list.status();
  for (const char* host : {"127.0.0.1:8080", "localhost:8080", "LocalHost:8080",
                           "[::1]:8080", " localhost:8080"}) {
    EXPECT_TRUE(list->Allows(host)) << host;
  }
  for (const char* host :
       {"", "evil.example", "evil.example:8080", "127.0.0.1", "localhost",
        "127.0.0.1:8081", "localhost:80", "127.0.0.1:8080.evil.example",
        "127.0.0.2:8080", "::1:8080", "[::1]"}) {
    EXPECT_FALSE(list->Allows(host)) << host;
  }
}

TEST(HostAllowListTest, ListenHostAndAllowedHostsAreNamesToo) {
  auto list = HostAllowList::Make(
      "0.0.0.0", 8080, {"dash.example", "proxy.example:443", "[fd00::5]"});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->Allows("0.0.0.0:8080"));
  EXPECT_TRUE(list->Allows("DASH.example:8080"));
  EXPECT_FALSE(list->Allows("dash.example:443"));
  EXPECT_TRUE(list->Allows("proxy.example:443"));
  EXPECT_FALSE(list->Allows("proxy.example:8080"));
  EXPECT_TRUE(list->Allows("[fd00::5]:8080"));
  EXPECT_FALSE(list->Allows("sub.dash.example:8080"));
  auto v6 = HostAllowList::Make("::1", 9000, {});
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->Allows("[::1]:9000"));
}

TEST(HostAllowListTest, OnPort80TheBareNameIsTheSame) {
  auto list = HostAllowList::Make("127.0.0.1", 80, {"dash.example"});
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->Allows("localhost"));
  EXPECT_TRUE(list->Allows("dash.example"));
  EXPECT_TRUE(list->Allows("dash.example:80"));
  EXPECT_FALSE(list->Allows("evil.example"));
}

TEST(HostAllowListTest, MalformedAllowedHostsAreRefusedByName) {
  for (const char* bad : {"", "*", "*.example", "a b", "host:0", "host:99999",
                          "host:x", "::1", "[::1", "evil.example/x", ":80"}) {
    auto list = HostAllowList::Make("127.0.0.1", 8080, {bad});
    EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(list.status().message()),
                HasSubstr("--allowed-host"));
  }
}

TEST(OriginAllowedTest, OnlyThisDashboardsOwnOriginOrNone) {
  EXPECT_TRUE(OriginAllowed(std::nullopt, "127.0.0.1:8080"));
  EXPECT_TRUE(OriginAllowed("http://127.0.0.1:8080", "127.0.0.1:8080"));
  EXPECT_TRUE(OriginAllowed("https://dash.example", "dash.example"));
  EXPECT_TRUE(OriginAllowed("http://LOCALHOST:8080", "localhost:8080"));
  for (const char* origin :
       {"null", "", "http://evil.example", "http://127.0.0.1:8081",
        "http://localhost:8080", "http://127.0.0.1:8080/",
        "http://127.0.0.1:8080.evil.example", "127.0.0.1:8080"}) {
    EXPECT_FALSE(OriginAllowed(std::string(origin), "127.0.0.1:8080"))
        << origin;
  }
  EXPECT_FALSE(OriginAllowed(std::string("http://"), ""));
}

TEST(RequestParsingTest, CookiesAndFormFields) {
  EXPECT_EQ(CookieValue("a=1; tiresias_session=abc; b=2", "tiresias_session"),
            "abc");
  EXPECT_EQ(CookieValue("xtiresias_session=abc", "tiresias_session"), "");
  EXPECT_EQ(CookieValue("", "tiresias_session"), "");
  EXPECT_EQ(FormField("a=1&token=tsk_1_ab%2Bc+d&b=", "token"), "tsk_1_ab+c d");
  EXPECT_EQ(FormField("token=", "token"), "");
  EXPECT_EQ(FormField("token", "token"), "");
  EXPECT_EQ(FormField("tok%65n=x", "token"), "x");
  EXPECT_EQ(FormField("a=1", "token"), std::nullopt);
  EXPECT_EQ(FormField("token=%zz%4", "token"), "%zz%4");
  EXPECT_EQ(Printable("a\nb\x01\xff"), "a?b??");
  EXPECT_EQ(Printable(std::string(120, 'x'), 4), "xxxx...");
}

}  // namespace
}  // namespace tiresias
