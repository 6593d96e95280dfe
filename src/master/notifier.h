// Notifications the master sends (`submit --notify`, `master
// --notify-admin`): a job's begin, end, failure, requeue or nearing time
// limit, a node lost or drained. Webhooks are POSTed as JSON, signed with
// HMAC-SHA256: a job's under its owner's key (security::UserNotifyKey,
// derived from the cluster's notify key), an admin notice under the cluster's
// key, so that one user's key forges nothing another user's receiver accepts.
// Mail goes through the host's
// sendmail. Each is retried with backoff (1, 2, 4, 8, 16 s) until it is
// delivered or has failed six times; a webhook is delivered when its
// receiver answers 2xx.
//
//   Notifier notifier({.key = key, .sendmail = "/usr/sbin/sendmail"});
//   notifier.Send({{.target = "https://hooks.example/x", .event = "end",
//                   .subject = "job 12 finished", .body = json}});
//
// Delivery is in memory: what is still being retried when the master
// stops is not sent (the master logs how many). Thread-safe.
#ifndef TIRESIAS_MASTER_NOTIFIER_H_
#define TIRESIAS_MASTER_NOTIFIER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"

namespace tiresias {

struct Notification {
  std::string target;   // http://..., https://... or mailto:ADDRESS
  std::string event;    // "end", "node_down", ...: X-Tiresias-Event
  std::string subject;  // a mail's subject
  std::string body;     // the JSON document
  // A job's owner: signed with security::UserNotifyKey(key, *user) (an
  // insecure master's nameless owner too) and named in X-Tiresias-User.
  // None (an admin notice): signed with the cluster's key.
  std::optional<std::string> user;
};

struct NotifierOptions {
  std::string key;  // the HMAC key (notify-key file's text)
  std::string sendmail = "/usr/sbin/sendmail";
  int max_attempts = 6;
  std::chrono::milliseconds first_retry{1000};
  std::chrono::seconds timeout{10};  // per webhook request
  size_t max_queue = 10000;          // beyond: the oldest are dropped
  std::function<void(const std::string&)> log;  // one line each; may be null
};

// "sha256=" and the hex HMAC-SHA256 under `key` of "TIMESTAMP.BODY": the
// X-Tiresias-Signature header a receiver recomputes to trust a webhook.
std::string SignWebhook(std::string_view key, std::string_view timestamp,
                        std::string_view body);

class Notifier {
 public:
  explicit Notifier(NotifierOptions options);
  ~Notifier();  // stops the delivery thread; logs what was not delivered
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Queues each for delivery; never blocks on the network.
  void Send(std::vector<Notification> notifications);

  struct Stats {
    int64_t delivered = 0;
    int64_t failed = 0;   // given up after max_attempts
    int64_t retries = 0;  // attempts after a first that failed
    int64_t dropped = 0;  // over max_queue
  };
  Stats stats() const;

 private:
  struct Pending {
    Notification n;
    std::string delivery;  // X-Tiresias-Delivery: the same on every retry
    int attempts = 0;
    std::chrono::steady_clock::time_point due;
  };

  void Loop();
  // One attempt: empty on success, else why it failed.
  std::string Deliver(const Pending& p) const;
  std::string PostWebhook(const Pending& p) const;
  std::string Mail(const Pending& p) const;
  void Log(const std::string& line) const;

  const NotifierOptions options_;
  mutable Mutex mu_;
  SteadyCondVar cv_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_NOTIFIER_H_
