#include "master/notifier.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "security/notify_key.h"

namespace tiresias {
namespace {

// "https://host:port" and "/path?query" of a URL the master checked
// (job_validation.cc: http:// or https://, printable, no spaces, no
// user@, a valid port).
std::pair<std::string, std::string> SplitUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t path =
      url.find_first_of("/?#", scheme == std::string::npos ? 0 : scheme + 3);
  if (path == std::string::npos) return {url, "/"};
  std::string rest = url.substr(path);
  if (rest[0] != '/') rest.insert(0, "/");
  return {url.substr(0, path), rest};
}

// Text for a mail header: no line breaks or other control characters,
// whatever a job's name holds.
std::string HeaderText(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

}  // namespace

std::string SignWebhook(std::string_view key, std::string_view timestamp,
                        std::string_view body) {
  return "sha256=" +
         security::HexHmacSha256(
             key, absl::StrCat(std::string(timestamp), ".", std::string(body)));
}

Notifier::Notifier(NotifierOptions options)
    : options_(std::move(options)), thread_([this] { Loop(); }) {}

Notifier::~Notifier() {
  size_t left = 0;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    left = queue_.size();
  }
  cv_.SignalAll();
  thread_.join();
  if (left > 0) {
    Log(absl::StrCat(left,
                     " notification(s) not delivered: the master "
                     "stopped while they waited"));
  }
}

void Notifier::Send(std::vector<Notification> notifications) {
  if (notifications.empty()) return;
  {
    MutexLock lock(&mu_);
    const auto now = std::chrono::steady_clock::now();
    for (Notification& n : notifications) {
      if (queue_.size() >= options_.max_queue) {
        Log(absl::StrCat("notification queue full (", options_.max_queue,
                         "): dropped one for ", queue_.front().n.target));
        queue_.pop_front();
        ++stats_.dropped;
      }
      queue_.push_back(
          Pending{.n = std::move(n),
                  .delivery = absl::StrCat(std::time(nullptr), "-", ++next_id_),
                  .attempts = 0,
                  .due = now});
    }
  }
  cv_.Signal();
}

Notifier::Stats Notifier::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void Notifier::Loop() {
  // A receiver or sendmail that goes away mid-write gives EPIPE here, not
  // a SIGPIPE that would end the master (this thread's mask only).
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  while (true) {
    Pending p;
    {
      MutexLock lock(&mu_);
      while (true) {
        if (stopping_) return;
        // The earliest due; retries wait their backoff, new ones do not.
        auto it = std::min_element(
            queue_.begin(), queue_.end(),
            [](const Pending& a, const Pending& b) { return a.due < b.due; });
        if (it != queue_.end() && it->due <= std::chrono::steady_clock::now()) {
          p = std::move(*it);
          queue_.erase(it);
          break;
        }
        if (it == queue_.end()) {
          cv_.Wait(&mu_);
        } else {
          cv_.WaitUntil(&mu_, it->due);
        }
      }
    }
    const std::string failure = Deliver(p);
    ++p.attempts;
    MutexLock lock(&mu_);
    if (p.attempts > 1) ++stats_.retries;
    if (failure.empty()) {
      ++stats_.delivered;
      continue;
    }
    if (p.attempts >= options_.max_attempts) {
      ++stats_.failed;
      Log(absl::StrCat("notification ", p.n.event, " to ", p.n.target,
                       " not delivered after ", p.attempts,
                       " attempts: ", failure));
      continue;
    }
    p.due = std::chrono::steady_clock::now() +
            options_.first_retry * (1 << (p.attempts - 1));
    queue_.push_back(std::move(p));
  }
}

std::string Notifier::Deliver(const Pending& p) const {
  // Whatever a URL does to the HTTP client, the master stays up.
  try {
    if (p.n.target.rfind("mailto:", 0) == 0) return Mail(p);
    return PostWebhook(p);
  } catch (const std::exception& e) {
    return absl::StrCat("cannot send: ", e.what());
  }
}

std::string Notifier::PostWebhook(const Pending& p) const {
  const auto [base, path] = SplitUrl(p.n.target);
  httplib::Client client(base);
  client.set_connection_timeout(options_.timeout);
  client.set_read_timeout(options_.timeout);
  client.set_write_timeout(options_.timeout);
  // A redirect could lead the master's request anywhere: not followed.
  client.set_follow_location(false);
  const std::string timestamp = absl::StrCat(std::time(nullptr));
  const std::string key = p.n.user
                              ? security::UserNotifyKey(options_.key, *p.n.user)
                              : options_.key;
  httplib::Headers headers = {
      {"User-Agent", "tiresias-master"},
      {"X-Tiresias-Event", p.n.event},
      {"X-Tiresias-Delivery", p.delivery},
      {"X-Tiresias-Timestamp", timestamp},
      {"X-Tiresias-Signature", SignWebhook(key, timestamp, p.n.body)},
  };
  if (p.n.user && !p.n.user->empty()) {
    headers.emplace("X-Tiresias-User", HeaderText(*p.n.user));
  }
  httplib::Result res =
      client.Post(path, headers, p.n.body, "application/json");
  if (!res)
    return absl::StrCat("no answer (", httplib::to_string(res.error()), ")");
  if (res->status < 200 || res->status > 299) {
    return absl::StrCat("HTTP ", res->status);
  }
  return "";
}

std::string Notifier::Mail(const Pending& p) const {
  const std::string to = p.n.target.substr(7);
  // The address was checked at submission: printable, no spaces, no line
  // breaks, so it cannot add a header.
  const std::string command = options_.sendmail + " -t -oi";
  FILE* pipe = popen(command.c_str(), "w");
  if (pipe == nullptr) return absl::StrCat("cannot run ", options_.sendmail);
  const std::string message = absl::StrCat(
      "To: ", HeaderText(to), "\nSubject: [tiresias] ", HeaderText(p.n.subject),
      "\nContent-Type: application/json\nX-Tiresias-Event: ", p.n.event, "\n\n",
      p.n.body, "\n");
  const bool written =
      std::fwrite(message.data(), 1, message.size(), pipe) == message.size();
  const int status = pclose(pipe);
  if (!written || status != 0) {
    return absl::StrCat(options_.sendmail, " failed (status ", status, ")");
  }
  return "";
}

void Notifier::Log(const std::string& line) const {
  if (options_.log) options_.log("tiresias master: " + line);
}

}  // namespace tiresias
