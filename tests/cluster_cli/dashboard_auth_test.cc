// The dashboard in front of a secure master, met as an attacker and as
// users would meet it: `tiresias master --init-ca` and `tiresias dashboard
// --ca` as child processes, raw HTTP over a socket (an attacker sends what
// no browser would), and headless Chromium logging in through the form.
// Every test ends by reading both processes' stderr for the tokens it used:
// none may be there.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/testing/test_dir.h"
#include "dashboard_page_checks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "headless_browser.h"
#include "master_process.h"
#include "nlohmann/json.hpp"
#include "subprocess.h"

namespace tiresias::cluster_test {
namespace {

namespace fs = std::filesystem;
using cli_test::ProcessResult;
using cli_test::RunProcess;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

// Markup that runs script if a page ever inserts it as HTML.
const std::string kXssName =
    "<img src=x onerror=\"document.body.dataset.xss='name'\">";
const std::string kXssCommand =
    "</script><script>document.body.dataset.xss='command'</script>";
const std::string kXssToken =
    "<img src=x onerror=\"document.body.dataset.xss='token'\">";
// Well formed, never issued.
const std::string kUnknownToken = "tsk_999_" + std::string(64, '7');

struct HttpAnswer {
  int status = -1;
  std::string head;  // status line and headers
  std::string body;

  // The value of the first header `name` (any case), or "".
  std::string Header(std::string_view name) const {
    for (absl::string_view line : absl::StrSplit(head, "\r\n")) {
      const size_t colon = line.find(':');
      if (colon != absl::string_view::npos &&
          absl::EqualsIgnoreCase(line.substr(0, colon),
                                 absl::string_view(name.data(), name.size()))) {
        return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
      }
    }
    return "";
  }
};

// Writes `request` as it is to 127.0.0.1:port and reads the answer until the
// server closes (requests say "Connection: close").
HttpAnswer RawHttp(int port, const std::string& request) {
  HttpAnswer answer;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return answer;
  }
  if (write(fd, request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return answer;
  }
  std::string text;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[65536];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t blank = text.find("\r\n\r\n");
  if (blank == std::string::npos || text.size() < 12) return answer;
  answer.head = text.substr(0, blank);
  answer.body = text.substr(blank + 4);
  answer.status = std::atoi(text.substr(9, 3).c_str());
  return answer;
}

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '.') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The user `tiresias master` names its first admin token after.
std::string ThisUser() {
  const passwd* pw = getpwuid(geteuid());
  return pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : "admin";
}

struct Token {
  int64_t id = 0;
  std::string text;
};

class DashboardAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"TIRESIAS_MASTER", "TIRESIAS_CA", "TIRESIAS_TOKEN",
                             "TIRESIAS_TOKEN_FILE", "TIRESIAS_CERT",
                             "TIRESIAS_KEY", "TIRESIAS_MASTER_NAME"}) {
      unsetenv(name);
    }
    master_ = std::make_unique<MasterProcess>(
        TIRESIAS_BINARY, (dir_ / "state").string(),
        std::vector<std::string>{"--init-ca", (dir_ / "tls").string(),
                                 "--http-listen", "127.0.0.1:0",
                                 "--metrics-token-required", "--hide-commands"},
        (dir_ / "master.log").string());
    ASSERT_FALSE(master_->address().empty())
        << master_->output() << ReadFile(dir_ / "master.log");
    ASSERT_THAT(master_->output(), HasSubstr("first admin token in "));
    std::ifstream token_file(dir_ / "state" / "admin-token");
    std::getline(token_file, admin_.text);
    admin_.id = 1;
    ASSERT_THAT(admin_.text, MatchesRegex("tsk_1_[0-9a-f]{64}"));
    tokens_used_ = {admin_.text, kUnknownToken};
    StartDashboard();
  }

  void TearDown() override {
    dashboard_.reset();
    master_.reset();
    // No token used in the test, nor its secret, is in any log.
    for (const char* log : {"master.log", "dashboard.log"}) {
      const std::string text = ReadFile(dir_ / log);
      for (const std::string& token : tokens_used_) {
        const std::string secret = token.substr(token.rfind('_') + 1);
        EXPECT_THAT(text, Not(HasSubstr(secret))) << log << ":\n" << text;
      }
    }
  }

  void StartDashboard(const std::vector<std::string>& extra = {}) {
    dashboard_.reset();
    std::vector<std::string> argv = {
        TIRESIAS_BINARY,    "dashboard",  "--master",
        master_->address(), "--ca",       (dir_ / "tls" / "ca.pem").string(),
        "--listen",         "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    dashboard_ = std::make_unique<DaemonProcess>(
        argv, "tiresias dashboard: http://", (dir_ / "dashboard.log").string());
    ASSERT_FALSE(dashboard_->address().empty())
        << dashboard_->output() << ReadFile(dir_ / "dashboard.log");
    port_ = std::stoi(
        dashboard_->address().substr(dashboard_->address().rfind(':') + 1));
  }

  // `tiresias args...` against the master with `token`.
  ProcessResult Cli(const std::string& token,
                    const std::vector<std::string>& args) {
    setenv("TIRESIAS_MASTER", master_->address().c_str(), 1);
    setenv("TIRESIAS_CA", (dir_ / "tls" / "ca.pem").c_str(), 1);
    setenv("TIRESIAS_TOKEN", token.c_str(), 1);
    std::vector<std::string> argv = {TIRESIAS_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = RunProcess(argv);
    unsetenv("TIRESIAS_TOKEN");
    EXPECT_EQ(r.exit_code, 0) << absl::StrJoin(args, " ") << ": " << r.err;
    return r;
  }

  Token CreateToken(const std::string& user) {
    ProcessResult r = Cli(
        admin_.text, {"admin", "token", "create", "--user", user, "--json"});
    const json created = json::parse(r.out, nullptr, false);
    if (!created.is_object()) return {};
    Token token{created["id"].get<int64_t>(),
                created["token"].get<std::string>()};
    tokens_used_.push_back(token.text);
    return token;
  }

  std::string Host() const { return absl::StrCat("127.0.0.1:", port_); }
  std::string Origin() const { return "http://" + Host(); }

  // GET `path` with `cookie` (a "name=value" pair) and `host` as Host,
  // and an Authorization header when `authorization` is set.
  HttpAnswer Get(const std::string& path, const std::string& cookie = "",
                 const std::string& host = "",
                 const std::string& authorization = "") {
    std::string request = absl::StrCat(
        "GET ", path, " HTTP/1.1\r\nHost: ", host.empty() ? Host() : host,
        "\r\nConnection: close\r\n");
    if (!cookie.empty()) absl::StrAppend(&request, "Cookie: ", cookie, "\r\n");
    if (!authorization.empty()) {
      absl::StrAppend(&request, "Authorization: ", authorization, "\r\n");
    }
    return RawHttp(port_, request + "\r\n");
  }

  // POST a form to `path`; `origin` "" sends no Origin header.
  HttpAnswer Post(const std::string& path, const std::string& form,
                  const std::string& origin, const std::string& cookie = "",
                  const std::string& host = "") {
    std::string request = absl::StrCat(
        "POST ", path, " HTTP/1.1\r\nHost: ", host.empty() ? Host() : host,
        "\r\nConnection: close\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: ",
        form.size(), "\r\n");
    if (!origin.empty()) absl::StrAppend(&request, "Origin: ", origin, "\r\n");
    if (!cookie.empty()) absl::StrAppend(&request, "Cookie: ", cookie, "\r\n");
    return RawHttp(port_, request + "\r\n" + form);
  }

  // Logs in with `token` through POST /login: the "name=value" of the
  // session cookie it was given, or "" (with a failure) if none.
  std::string Login(const std::string& token) {
    HttpAnswer a = Post("/login", "token=" + UrlEncode(token), Origin());
    EXPECT_EQ(a.status, 303) << a.head << "\n" << a.body;
    EXPECT_EQ(a.Header("Location"), "/");
    const std::string cookie = a.Header("Set-Cookie");
    EXPECT_FALSE(cookie.empty()) << a.head;
    return cookie.substr(0, cookie.find(';'));
  }

  json ApiJson(const std::string& path, const std::string& cookie,
               int expected_status = 200) {
    HttpAnswer a = Get(path, cookie);
    EXPECT_EQ(a.status, expected_status) << path << ": " << a.body;
    return json::parse(a.body, nullptr, false);
  }

  test_support::TestDir tmp_{"tiresias-dashboard-auth"};
  const fs::path& dir_ = tmp_.path();
  std::unique_ptr<MasterProcess> master_;
  std::unique_ptr<DaemonProcess> dashboard_;
  int port_ = 0;
  Token admin_;
  std::vector<std::string> tokens_used_;
};

// An attacker who reaches the dashboard's port without a session gets
// nothing of the master's: the API says 401, the page is the login form.
TEST_F(DashboardAuthTest, WithoutASessionTheApiIsRefusedAndThePageIsALogin) {
  Cli(admin_.text, {"submit", "--gpus", "1", "--name", "secret-job", "--env",
                    "SECRET=admin-secret", "--", "/bin/sleep", "9"});
  for (const std::string& cookie :
       {std::string(), "tiresias_session=" + std::string(32, '0'),
        "tiresias_session=" + admin_.text}) {
    for (const char* path : {"/api/state", "/api/jobs/1"}) {
      HttpAnswer a = Get(path, cookie);
      EXPECT_EQ(a.status, 401) << path << " " << cookie << ": " << a.body;
      EXPECT_THAT(a.body, Not(HasSubstr("secret-job")));
      EXPECT_THAT(a.body, Not(HasSubstr("admin-secret")));
      EXPECT_THAT(a.body, HasSubstr("log in"));
    }
  }
  HttpAnswer page = Get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("<form method=\"post\" action=\"/login\""));
  EXPECT_THAT(page.body, Not(HasSubstr("secret-job")));
  EXPECT_THAT(page.body, Not(HasSubstr("id=\"jobs\"")));
  EXPECT_THAT(page.body, Not(HasSubstr("insecure")));
}

// Headless Chromium fills in the form as a person would: a wrong token
// shows the form again with the master's reason; the admin token shows the
// jobs table, whose markup-laden names, users and commands stay text; the
// session cookie is out of the page's reach; logging out ends the session.
// (A user name is a Unix account name here, so markup in users is tested
// against an --insecure master, in dashboard_test.)
TEST_F(DashboardAuthTest, ChromiumLogsInSeesTheJobsAsTextAndLogsOut) {
  const Token bob = CreateToken("bob");
  Cli(admin_.text, {"submit", "--gpus", "1", "--name", kXssName, "--",
                    "/bin/echo", kXssCommand});
  Cli(bob.text,
      {"submit", "--gpus", "2", "--name", "plain", "--", "/bin/sleep", "9"});
  if (access(ChromiumPath().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no Chromium at " << ChromiumPath();
  }
  HeadlessBrowser browser(dir_ / "profile");
  ASSERT_TRUE(browser.Open("http://" + Host() + "/")) << browser.error();
  const std::string form = "document.querySelector('form[action=\"/login\"]')";
  ASSERT_TRUE(browser.WaitFor(form + " !== null")) << browser.error();

  // A wrong token, itself markup: the form again, with the reason as text.
  auto type_and_submit = [&](const std::string& token) {
    return browser.Evaluate(
        form +
        ".querySelector('input[name=token]').value = " + json(token).dump() +
        "; " + form + ".querySelector('button').click(); true");
  };
  ASSERT_TRUE(type_and_submit(kXssToken).has_value()) << browser.error();
  ASSERT_TRUE(
      browser.WaitFor("document.getElementById('login-error') !== null && " +
                      form + " !== null"))
      << browser.error() << "\n"
      << browser.Evaluate("location.href + ' ' + document.body.innerHTML")
             .value_or("")
      << "\n"
      << ReadFile(dir_ / "dashboard.log");
  EXPECT_EQ(*browser.Evaluate("document.getElementById('login-error')"
                              ".textContent.includes('malformed')"),
            true);
  ASSERT_TRUE(type_and_submit(kUnknownToken).has_value()) << browser.error();
  ASSERT_TRUE(
      browser.WaitFor("document.getElementById('login-error') !== null && "
                      "document.getElementById('login-error').textContent"
                      ".includes('token 999 is not valid')"))
      << browser.error();

  // The admin's token: the jobs, as text.
  ASSERT_TRUE(type_and_submit(admin_.text).has_value()) << browser.error();
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.dashboardReady === '1'"))
      << browser.error();
  EXPECT_EQ(*browser.Evaluate("document.body.dataset.jobCount"), "2");
  EXPECT_EQ(*browser.Evaluate(
                "Array.from(document.querySelectorAll('#jobs tbody tr'))"
                ".map(tr => tr.cells[1].textContent + '|' + "
                "tr.cells[2].textContent)"),
            (json{"plain|bob", kXssName + "|" + ThisUser()}));
  EXPECT_EQ(*browser.Evaluate("document.getElementById('who').textContent"),
            ThisUser() + " (admin)");
  EXPECT_EQ(*browser.Evaluate("document.cookie"), "");  // HttpOnly
  EXPECT_EQ(*browser.Evaluate("document.getElementById('insecure-banner')"
                              " === null"),
            true);
  ExpectJobCommandShownAsText(browser, 1, "/bin/echo " + kXssCommand);

  // Log out: the form again, and the browser's session no longer reads.
  ASSERT_TRUE(browser
                  .Evaluate("document.querySelector('form[action=\"/logout\"]"
                            " button').click(); true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor(form + " !== null")) << browser.error();
  EXPECT_EQ(*browser.Evaluate("fetch('/api/state').then(r => r.status)"), 401);
}

TEST_F(DashboardAuthTest, WrongTokensShowTheFormWithTheMastersReason) {
  HttpAnswer a = Post("/login", "token=" + kUnknownToken, Origin());
  EXPECT_EQ(a.status, 401);
  EXPECT_EQ(a.Header("Set-Cookie"), "");
  EXPECT_THAT(a.body, HasSubstr("action=\"/login\""));
  EXPECT_THAT(a.body, HasSubstr("token 999 is not valid"));
  EXPECT_THAT(a.body, Not(HasSubstr(kUnknownToken)));

  // Markup in the token never comes back as markup.
  a = Post("/login", "token=" + UrlEncode("<script>alert(1)</script>"),
           Origin());
  EXPECT_EQ(a.status, 401);
  EXPECT_THAT(a.body, HasSubstr("id=\"login-error\""));
  EXPECT_THAT(a.body, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(a.body, Not(HasSubstr("alert(1)")));

  a = Post("/login", "token=", Origin());
  EXPECT_EQ(a.status, 400);
  EXPECT_THAT(a.body, HasSubstr("action=\"/login\""));
  EXPECT_EQ(a.Header("Set-Cookie"), "");
}

// The dashboard reads as the logged-in user: others' jobs are listed, but
// their environment (and here, with --hide-commands, their command) is not.
TEST_F(DashboardAuthTest, AUserSeesOthersJobsWithoutTheirEnvironment) {
  const Token bob = CreateToken("bob");
  // --export NONE: only the --env variables, none of the test's own.
  Cli(admin_.text,
      {"submit", "--gpus", "1", "--name", "admins", "--export", "NONE", "--env",
       "SECRET=admin-secret", "--", "/bin/sleep", "9"});
  Cli(bob.text, {"submit", "--gpus", "1", "--name", "bobs", "--export", "NONE",
                 "--env", "MINE=bob-value", "--", "/bin/sleep", "8"});

  const std::string admin = Login(admin_.text);
  json job = ApiJson("/api/jobs/1", admin);
  EXPECT_EQ(job["env"], (json{{"SECRET", "admin-secret"}}));
  EXPECT_EQ(ApiJson("/api/jobs/2", admin)["env"],
            (json{{"MINE", "bob-value"}}));

  const std::string session = Login(bob.text);
  json state = ApiJson("/api/state", session);
  EXPECT_EQ(state["viewer"],
            (json{{"user", "bob"}, {"admin", false}, {"insecure", false}}));
  EXPECT_EQ(state["jobs"]["pending"], 2);  // counted, not listed
  json listed = ApiJson("/api/jobs", session);
  ASSERT_EQ(listed["jobs"].size(), 2u);
  EXPECT_EQ(listed["jobs"][0]["name"], "admins");
  EXPECT_TRUE(listed["jobs"][0]["command"].empty());
  HttpAnswer a = Get("/api/jobs/1", session);
  EXPECT_EQ(a.status, 200);
  EXPECT_THAT(a.body, Not(HasSubstr("admin-secret")));
  job = json::parse(a.body);
  EXPECT_TRUE(job["env"].empty());
  EXPECT_TRUE(job["command"].empty());
  job = ApiJson("/api/jobs/2", session);
  EXPECT_EQ(job["env"], (json{{"MINE", "bob-value"}}));
  EXPECT_EQ(job["command"], (json{"/bin/sleep", "8"}));
  HttpAnswer page = Get("/", session);
  EXPECT_THAT(page.body, HasSubstr("<span id=\"who\">bob</span>"));
}

// DNS rebinding: a page of evil.example whose name now points at 127.0.0.1
// reaches the port, but its requests carry Host: evil.example.
TEST_F(DashboardAuthTest, RequestsForAnotherHostAreRefused) {
  const std::string session = Login(admin_.text);
  for (const std::string& host :
       {std::string("evil.example"), "evil.example:" + std::to_string(port_),
        "127.0.0.1:" + std::to_string(port_ + 1), std::string("127.0.0.1")}) {
    for (HttpAnswer a :
         {Get("/", "", host), Get("/api/state", session, host),
          Post("/login", "token=" + admin_.text, "http://" + host, "", host),
          Post("/logout", "", "", session, host)}) {
      EXPECT_EQ(a.status, 403) << host << ": " << a.head;
      EXPECT_EQ(a.Header("Set-Cookie"), "");
      EXPECT_THAT(a.body, HasSubstr("Host"));
      EXPECT_EQ(std::count(a.body.begin(), a.body.end(), '\n'), 1) << a.body;
      EXPECT_THAT(a.body, Not(HasSubstr("\"jobs\"")));
    }
  }
  // No Host at all (HTTP/1.0).
  HttpAnswer a = RawHttp(
      port_, "GET /api/state HTTP/1.0\r\nCookie: " + session + "\r\n\r\n");
  EXPECT_EQ(a.status, 403);
  // The session survived all that, and the loopback names are its own.
  for (const std::string& host : {Host(), "localhost:" + std::to_string(port_),
                                  "LOCALHOST:" + std::to_string(port_),
                                  "[::1]:" + std::to_string(port_)}) {
    EXPECT_EQ(Get("/api/state", session, host).status, 200) << host;
  }

  StartDashboard({"--allowed-host", "dash.example"});
  EXPECT_EQ(Get("/", "", "dash.example:" + std::to_string(port_)).status, 200);
  EXPECT_EQ(Get("/", "", "dash.example:1").status, 403);
  EXPECT_EQ(Get("/", "", "evil.example:" + std::to_string(port_)).status, 403);
}

// CSRF: another site's page can make the browser POST here, but the
// browser says where the page came from (Origin).
TEST_F(DashboardAuthTest, CrossOriginPostsAreRefused) {
  const std::string form = "token=" + admin_.text;
  for (const std::string& origin :
       {std::string("http://evil.example"), std::string("null"),
        "http://127.0.0.1:" + std::to_string(port_ + 1),
        "http://localhost:" + std::to_string(port_)}) {
    HttpAnswer a = Post("/login", form, origin);
    EXPECT_EQ(a.status, 403) << origin << ": " << a.head;
    EXPECT_EQ(a.Header("Set-Cookie"), "");
    EXPECT_THAT(a.body, HasSubstr("Origin"));
  }
  const std::string session = Login(admin_.text);
  HttpAnswer a = Post("/logout", "", "http://evil.example", session);
  EXPECT_EQ(a.status, 403);
  EXPECT_EQ(Get("/api/state", session).status, 200);  // still logged in
  // GET never changes state: there is no GET /logout (nor /login).
  EXPECT_EQ(Get("/logout", session).status, 404);
  EXPECT_EQ(Get("/login?token=" + admin_.text).Header("Set-Cookie"), "");
  EXPECT_EQ(Get("/api/state", session).status, 200);
  // A client that sends no Origin (curl) is not a browser being tricked.
  EXPECT_EQ(Post("/login", form, "").status, 303);
}

TEST_F(DashboardAuthTest, LoggingOutOrRevokingTheTokenEndsTheSession) {
  const std::string session = Login(admin_.text);
  EXPECT_EQ(Get("/api/state", session).status, 200);
  HttpAnswer a = Post("/logout", "", Origin(), session);
  EXPECT_EQ(a.status, 303);
  EXPECT_EQ(a.Header("Location"), "/");
  EXPECT_THAT(a.Header("Set-Cookie"), HasSubstr("Max-Age=0"));
  EXPECT_EQ(Get("/api/state", session).status, 401);
  EXPECT_THAT(Get("/", session).body, HasSubstr("action=\"/login\""));

  const Token bob = CreateToken("bob");
  const std::string bobs = Login(bob.text);
  EXPECT_EQ(Get("/api/state", bobs).status, 200);
  Cli(admin_.text, {"admin", "token", "revoke", std::to_string(bob.id)});
  a = Get("/api/state", bobs);
  EXPECT_EQ(a.status, 401);
  EXPECT_THAT(a.body, HasSubstr("was revoked"));
  a = Get("/api/state", bobs);  // the session is gone, not just refused
  EXPECT_EQ(a.status, 401);
  EXPECT_THAT(a.body, Not(HasSubstr("was revoked")));
}

// Scripts read /api with their own token (Bearer), no login form: as that
// user, never with a bad or revoked token, never for an action.
TEST_F(DashboardAuthTest, ScriptsReadTheApiWithABearerToken) {
  const Token bob = CreateToken("bob");
  HttpAnswer a = Get("/api/state", "", "", "Bearer " + bob.text);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(
      json::parse(a.body)["viewer"],
      json::parse(R"({"user": "bob", "admin": false, "insecure": false})"));
  EXPECT_EQ(Get("/api/jobs", "", "", "bearer " + admin_.text).status, 200);
  a = Get("/api/state", "", "", "Bearer " + kUnknownToken);
  EXPECT_EQ(a.status, 401);
  EXPECT_THAT(a.body, Not(HasSubstr(kUnknownToken)));
  a = Get("/api/state", "", "", "Basic Ym9iOnB3");
  EXPECT_EQ(a.status, 401);
  EXPECT_THAT(a.body, HasSubstr("Authorization: Bearer TOKEN"));
  Cli(admin_.text, {"admin", "token", "revoke", std::to_string(bob.id)});
  EXPECT_EQ(Get("/api/state", "", "", "Bearer " + bob.text).status, 401);
  const std::string post =
      absl::StrCat("POST /api/jobs/1/cancel HTTP/1.1\r\nHost: ", Host(),
                   "\r\nConnection: close\r\nAuthorization: Bearer ",
                   admin_.text, "\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(RawHttp(port_, post).status, 401);
}

TEST_F(DashboardAuthTest, TheCookieIsARandomIdOutOfScriptsAndOtherSitesReach) {
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    HttpAnswer a = Post("/login", "token=" + admin_.text, Origin());
    ASSERT_EQ(a.status, 303);
    const std::string cookie = a.Header("Set-Cookie");
    EXPECT_THAT(cookie, MatchesRegex("tiresias_session=[0-9a-f]{32}; Path=/; "
                                     "HttpOnly; SameSite=Strict"));
    ids.push_back(cookie.substr(0, cookie.find(';')));
  }
  EXPECT_NE(ids[0], ids[1]);
  for (const std::string& id : ids)
    EXPECT_EQ(Get("/api/state", id).status, 200);
}

TEST_F(DashboardAuthTest, MetricsNeedATokenAndHealthzStaysOpen) {
  const std::string marker = "metrics on http://";
  const size_t at = master_->output().find(marker);
  ASSERT_NE(at, std::string::npos) << master_->output();
  const std::string address = master_->output().substr(
      at + marker.size(),
      master_->output().find('/', at + marker.size()) - at - marker.size());
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  const Token bob = CreateToken("bob");
  auto get = [&](const std::string& path, const std::string& authorization) {
    std::string request =
        absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: ", address,
                     "\r\nConnection: close\r\n");
    if (!authorization.empty()) {
      absl::StrAppend(&request, "Authorization: ", authorization, "\r\n");
    }
    return RawHttp(port, request + "\r\n");
  };
  for (const std::string& authorization :
       {std::string(), "Bearer " + kUnknownToken, "Basic " + admin_.text,
        std::string("Bearer ")}) {
    HttpAnswer a = get("/metrics", authorization);
    EXPECT_EQ(a.status, 401) << authorization;
    EXPECT_EQ(a.Header("WWW-Authenticate"), "Bearer realm=\"tiresias\"");
    EXPECT_THAT(a.body, Not(HasSubstr("tiresias_jobs")));
  }
  for (const std::string& token : {admin_.text, bob.text}) {
    HttpAnswer a = get("/metrics", "Bearer " + token);
    EXPECT_EQ(a.status, 200);
    EXPECT_THAT(a.body, HasSubstr("tiresias_jobs{state=\"pending\"} 0\n"));
  }
  HttpAnswer health = get("/healthz", "");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
}

}  // namespace
}  // namespace tiresias::cluster_test
