#include "dashboard/dashboard_page.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kMarkup = "<script>alert(\"x\")</script>&'";
const std::string kEscaped =
    "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;";

// The page's own markup: from <body> to its first script (what a failure
// prints stays readable).
std::string Markup(const std::string& page) {
  const size_t body = page.find("<body");
  return page.substr(body, page.find("<script") - body);
}

TEST(LoginPageTest, TheReasonIsTextAndTheFormPostsToLogin) {
  const std::string full = LoginPage("m:1", kMarkup, "n0nce");
  EXPECT_THAT(full, HasSubstr("<style nonce=\"n0nce\">"));
  EXPECT_THAT(full, Not(HasSubstr("<script")));  // none at all
  const std::string page = Markup(full);
  EXPECT_THAT(page, HasSubstr("<form method=\"post\" action=\"/login\">"));
  EXPECT_THAT(page, HasSubstr("name=\"token\" type=\"password\""));
  EXPECT_THAT(page,
              HasSubstr("<p id=\"login-error\" class=\"error\">" + kEscaped));
  EXPECT_THAT(LoginPage("m:1", "", "n"), Not(HasSubstr("login-error")));
}

TEST(DashboardPageTest, ALoggedInUserAndLogoutButtonNoBanner) {
  const std::string full = DashboardPage(
      "m:1", 2000, {.logged_in = true, .user = kMarkup, .admin = true}, "n");
  EXPECT_THAT(full, HasSubstr("<script nonce=\"n\">"));
  EXPECT_THAT(full, Not(HasSubstr("<script>")));
  const std::string page = Markup(full);
  EXPECT_THAT(page, HasSubstr("<span id=\"who\">" + kEscaped + " (admin)"));
  EXPECT_THAT(page, HasSubstr("<form method=\"post\" action=\"/logout\""));
  EXPECT_THAT(page, HasSubstr("data-session=\"1\""));
  EXPECT_THAT(page, Not(HasSubstr("insecure-banner")));
}

TEST(DashboardPageTest, AnInsecureMasterGetsTheBannerAndNoLogout) {
  std::string page =
      Markup(DashboardPage("m:1", 2000, {.insecure = true}, "n"));
  EXPECT_THAT(page, HasSubstr("<div id=\"insecure-banner\" class=\"banner\">"
                              "insecure: no TLS and no authentication"));
  EXPECT_THAT(page, Not(HasSubstr("/logout")));
  EXPECT_THAT(page, Not(HasSubstr("data-session")));
  // Not known to be insecure (the master did not answer): there, hidden,
  // for the page's script to show when it hears.
  page = Markup(DashboardPage("m:1", 2000, {}, "n"));
  EXPECT_THAT(page, HasSubstr("<div id=\"insecure-banner\" class=\"banner\" "
                              "hidden>"));
}

// The anti-forgery token goes to the script in <body>; the jobs panel has
// its filter (every state), pager, action answer line, and the details
// their log.
TEST(DashboardPageTest, CsrfTokenFilterPagerAndLogAreOnThePage) {
  const std::string page = Markup(
      DashboardPage("m:1", 2000, {.insecure = true, .csrf = "c0ffee"}, "n"));
  EXPECT_THAT(page, HasSubstr("data-csrf=\"c0ffee\""));
  EXPECT_THAT(page, HasSubstr("<form id=\"jobs-filter\""));
  EXPECT_THAT(page, HasSubstr("<option value=\"timeout\">timeout</option>"));
  EXPECT_THAT(page, HasSubstr("id=\"jobs-next\""));
  EXPECT_THAT(page, HasSubstr("id=\"action-result\""));
  EXPECT_THAT(page, HasSubstr("<pre id=\"job-log\"></pre>"));
  EXPECT_THAT(Markup(DashboardPage("m:1", 2000, {.csrf = kMarkup}, "n")),
              HasSubstr("data-csrf=\"" + kEscaped + "\""));
}

}  // namespace
}  // namespace tiresias
