// The Notifier against a real HTTP server on loopback and a real sendmail
// stand-in (a shell script): signed webhooks, retries with backoff until a
// 2xx, giving up, and mail.
#include "master/notifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/testing/test_dir.h"
#include "httplib.h"
#include "security/notify_key.h"

namespace tiresias {
namespace {

using security::UserNotifyKey;
using ::testing::HasSubstr;

// printf '%s' '1700000000.{"a":1}' | openssl dgst -sha256 -hmac k
TEST(SignWebhookTest, IsHmacSha256OfTimestampDotBody) {
  EXPECT_EQ(SignWebhook("k", "1700000000", R"({"a":1})"),
            "sha256=1b6ad1bc9bf48c52ce01939866d5877c6cc4e87ddad27e16673cb8c"
            "4964394a3");
}

// printf '%s' 'tiresias-notify-user:alice' | openssl dgst -sha256 -hmac secret
TEST(UserNotifyKeyTest, IsHmacSha256OfTheUsersNameUnderTheClusterKey) {
  EXPECT_EQ(UserNotifyKey("secret", "alice"),
            "83ee43877274fcf98f08bdcbe1a699fe8f18ceaea6a75b0b1eb83276fb562a96");
  EXPECT_EQ(UserNotifyKey("secret", "bob"),
            "a4469395b0f6c2a170402fc6a1dcda86b68749c14b241fe1ef4f8a258d2a4573");
  EXPECT_NE(UserNotifyKey("other", "alice"), UserNotifyKey("secret", "alice"));
}

// A receiver that fails its first `failures` requests with HTTP 500.
class Receiver {
 public:
  explicit Receiver(int failures) : failures_(failures) {
    server_.Post("/hook", [this](const httplib::Request& req,
                                 httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(req);
      res.status = static_cast<int>(requests_.size()) <= failures_ ? 500 : 204;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const {
    return absl::StrCat("http://127.0.0.1:", port_, "/hook");
  }
  std::vector<httplib::Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  const int failures_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<httplib::Request> requests_;
};

template <typename F>
bool WaitFor(F done) {
  for (int i = 0; i < 300 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

NotifierOptions Fast(std::vector<std::string>* log = nullptr) {
  NotifierOptions o{.key = "secret",
                    .first_retry = std::chrono::milliseconds(20),
                    .timeout = std::chrono::seconds(5)};
  if (log != nullptr) {
    o.log = [log](const std::string& line) { log->push_back(line); };
  }
  return o;
}

TEST(NotifierTest, AWebhookIsSignedAndRetriedUntilAccepted) {
  Receiver receiver(/*failures=*/2);
  Notifier notifier(Fast());
  const std::string body = R"({"event":"end","job_id":7})";
  notifier.Send({{.target = receiver.url(),
                  .event = "end",
                  .subject = "job 7 finished",
                  .body = body}});
  ASSERT_TRUE(WaitFor([&] { return notifier.stats().delivered == 1; }));
  const std::vector<httplib::Request> got = receiver.requests();
  ASSERT_EQ(got.size(), 3u);  // two 500s, then 204
  for (const httplib::Request& req : got) {
    EXPECT_EQ(req.body, body);
    EXPECT_EQ(req.get_header_value("Content-Type"), "application/json");
    EXPECT_EQ(req.get_header_value("X-Tiresias-Event"), "end");
    const std::string ts = req.get_header_value("X-Tiresias-Timestamp");
    EXPECT_EQ(req.get_header_value("X-Tiresias-Signature"),
              SignWebhook("secret", ts, body));
    // One delivery id on every retry, for the receiver to drop repeats.
    EXPECT_EQ(req.get_header_value("X-Tiresias-Delivery"),
              got[0].get_header_value("X-Tiresias-Delivery"));
  }
  EXPECT_EQ(notifier.stats().retries, 2);
  EXPECT_EQ(notifier.stats().failed, 0);
}

// A job's webhook is signed with its owner's key and names them; it does
// not verify under the cluster's key or another user's, so a user who
// holds their own key cannot forge one another user's receiver accepts.
// An admin notice (no user) is signed with the cluster's key.
TEST(NotifierTest, AJobsWebhookIsSignedWithItsOwnersKeyAlone) {
  Receiver receiver(/*failures=*/0);
  Notifier notifier(Fast());
  const std::string job = R"({"event":"end","job_id":7,"user":"alice"})";
  const std::string node = R"({"event":"node_down","node":"n1"})";
  notifier.Send({{.target = receiver.url(),
                  .event = "end",
                  .subject = "job 7 finished",
                  .body = job,
                  .user = "alice"}});
  ASSERT_TRUE(WaitFor([&] { return notifier.stats().delivered == 1; }));
  notifier.Send({{.target = receiver.url(),
                  .event = "node_down",
                  .subject = "node n1 lost",
                  .body = node}});
  ASSERT_TRUE(WaitFor([&] { return notifier.stats().delivered == 2; }));
  const std::vector<httplib::Request> got = receiver.requests();
  ASSERT_EQ(got.size(), 2u);
  const std::string ts = got[0].get_header_value("X-Tiresias-Timestamp");
  const std::string signature = got[0].get_header_value("X-Tiresias-Signature");
  EXPECT_EQ(got[0].get_header_value("X-Tiresias-User"), "alice");
  EXPECT_EQ(signature, SignWebhook(UserNotifyKey("secret", "alice"), ts, job));
  EXPECT_NE(signature, SignWebhook("secret", ts, job));
  EXPECT_NE(signature, SignWebhook(UserNotifyKey("secret", "bob"), ts, job));
  EXPECT_FALSE(got[1].has_header("X-Tiresias-User"));
  EXPECT_EQ(got[1].get_header_value("X-Tiresias-Signature"),
            SignWebhook("secret",
                        got[1].get_header_value("X-Tiresias-Timestamp"), node));
}

TEST(NotifierTest, GivesUpAfterItsAttemptsAndSaysSo) {
  Receiver receiver(/*failures=*/100);
  std::vector<std::string> log;
  {
    NotifierOptions o = Fast(&log);
    o.max_attempts = 3;
    Notifier notifier(o);
    notifier.Send({{.target = receiver.url(), .event = "fail", .body = "{}"}});
    ASSERT_TRUE(WaitFor([&] { return notifier.stats().failed == 1; }));
    EXPECT_EQ(receiver.requests().size(), 3u);
  }
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("not delivered after 3 attempts: HTTP 500"));
  EXPECT_THAT(log[0], HasSubstr(receiver.url()));
}

TEST(NotifierTest, NobodyListeningIsRetriedThenGivenUp) {
  std::vector<std::string> log;
  {
    NotifierOptions o = Fast(&log);
    o.max_attempts = 2;
    o.timeout = std::chrono::seconds(1);
    Notifier notifier(o);
    // A port nothing listens on (bound, never listened).
    httplib::Server unused;
    const int port = unused.bind_to_any_port("127.0.0.1");
    notifier.Send({{.target = absl::StrCat("http://127.0.0.1:", port, "/x"),
                    .event = "end",
                    .body = "{}"}});
    ASSERT_TRUE(WaitFor([&] { return notifier.stats().failed == 1; }));
  }
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("no answer"));
}

// A URL the HTTP client chokes on (it throws on a port past INT_MAX)
// fails its delivery; the master's thread lives on.
TEST(NotifierTest, AUrlTheClientCannotUseFailsAlone) {
  std::vector<std::string> log;
  {
    NotifierOptions o = Fast(&log);
    o.max_attempts = 1;
    Notifier notifier(o);
    notifier.Send({{.target = "http://127.0.0.1:99999999999/x",
                    .event = "end",
                    .body = "{}"}});
    ASSERT_TRUE(WaitFor([&] { return notifier.stats().failed == 1; }));
  }
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("cannot send"));
}

TEST(NotifierTest, MailGoesThroughSendmailWithItsHeaders) {
  test_support::TestDir dir;
  const std::string out = dir.File("mail.txt");
  const std::string sendmail = dir.File("sendmail");
  {
    std::ofstream script(sendmail);
    script << "#!/bin/sh\necho \"args: $*\" > " << out << "\ncat >> " << out
           << "\n";
  }
  std::filesystem::permissions(sendmail, std::filesystem::perms::owner_all);
  NotifierOptions o = Fast();
  o.sendmail = sendmail;
  Notifier notifier(o);
  // A job's name with a line break must not add a header (Bcc: ...).
  notifier.Send({{.target = "mailto:alice@example.org",
                  .event = "end",
                  .subject = "job 3 (train\nBcc: eve@evil) finished",
                  .body = R"({"job_id":3})"}});
  ASSERT_TRUE(WaitFor([&] { return notifier.stats().delivered == 1; }));
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "args: -t -oi\nTo: alice@example.org\nSubject: [tiresias] job 3 "
            "(train Bcc: eve@evil) finished\nContent-Type: application/json\n"
            "X-Tiresias-Event: end\n\n{\"job_id\":3}\n");
}

}  // namespace
}  // namespace tiresias
