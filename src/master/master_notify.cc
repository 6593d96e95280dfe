// MasterState: notifications (notifier.h). A job's chosen events, once
// written (Commit), go to its spec.notify; nodes lost or drained go to the
// admins' webhooks (MasterOptions::admin_notify). MasterServer takes them
// from the outbox and hands them to its Notifier.
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "master/master_state.h"
#include "nlohmann/json.hpp"

namespace tiresias {
namespace {

// The notify words (JobSpec.notify_on) an event's kind answers to.
std::vector<std::string_view> WordsOf(std::string_view kind) {
  if (kind == "started" || kind == "resumed") return {"begin"};
  if (kind == "finished" || kind == "cancelled") return {"end"};
  if (kind == "failed" || kind == "timeout") return {"end", "fail"};
  if (kind == "preempted" || kind == "requeued") return {"requeue"};
  return {};
}

bool Wants(const JobRequest& spec, std::string_view kind) {
  if (spec.notify.empty()) return false;
  static const std::vector<std::string> kDefault = {"end"};
  const std::vector<std::string>& on =
      spec.notify_on.empty() ? kDefault : spec.notify_on;
  for (std::string_view word : WordsOf(kind)) {
    if (std::find(on.begin(), on.end(), word) != on.end()) return true;
  }
  return false;
}

// "host" and "host:port" of an http(s) URL (checked by ValidateNotify).
std::pair<std::string, std::string> HostOf(const std::string& url) {
  const size_t start = url.find("://") + 3;
  std::string authority =
      url.substr(start, url.find_first_of("/?#", start) - start);
  authority = authority.substr(
      authority.rfind('@') == std::string::npos ? 0 : authority.rfind('@') + 1);
  std::string host = authority;
  if (!host.empty() && host[0] == '[') {
    host = host.substr(0, host.find(']') + 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  return {host, authority};
}

Notification JobNotification(const JobRecord& rec, const JobEvent& e,
                             std::string event) {
  nlohmann::json body = {
      {"event", event},         {"kind", e.kind},
      {"job_id", rec.id},       {"name", rec.spec.name},
      {"user", rec.spec.user},  {"state", JobRecordStateName(rec.state)},
      {"attempt", rec.attempt}, {"time", e.time.count()},
      {"detail", e.detail},
  };
  return Notification{
      .target = rec.spec.notify,
      .event = std::move(event),
      .subject =
          absl::StrCat("job ", rec.id, " (", rec.spec.name, ") ", e.kind),
      .body =
          body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      .user = rec.spec.user};
}

}  // namespace

absl::Status MasterState::CheckNotifyAllowed(const JobRequest& spec) const {
  if (spec.notify.empty()) return absl::OkStatus();
  if (spec.notify.rfind("mailto:", 0) == 0) {
    if (access(options_.sendmail.c_str(), X_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.notify: this master cannot send mail (no ",
                       options_.sendmail, "; master --sendmail)"));
    }
    return absl::OkStatus();
  }
  const auto [host, authority] = HostOf(spec.notify);
  for (const std::string& allowed : options_.notify_hosts) {
    if (allowed == "*" || allowed == host || allowed == authority) {
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "spec.notify: ", authority,
      options_.notify_hosts.empty()
          ? ": this master sends no webhooks to jobs' URLs (its operator "
            "allows hosts with master --notify-hosts)"
          : ": not a host this master sends webhooks to (master "
            "--notify-hosts)"));
}

void MasterState::QueueJobNotifications(const std::vector<JobEvent>& events) {
  for (const JobEvent& e : events) {
    auto it = records_.find(e.job_id);
    if (it == records_.end() || !Wants(it->second.spec, e.kind)) continue;
    const std::vector<std::string_view> words = WordsOf(e.kind);
    outbox_.push_back(
        JobNotification(it->second, e, std::string(words.back())));
  }
}

void MasterState::QueueTimeLimitNotification(const JobRecord& rec,
                                             Seconds now) {
  const auto& on = rec.spec.notify_on;
  if (rec.spec.notify.empty() ||
      std::find(on.begin(), on.end(), "time_limit") == on.end() ||
      !time_limit_told_.insert({rec.id, rec.attempt}).second) {
    return;
  }
  JobEvent e{rec.id, 0, now, "time_limit",
             absl::StrCat("90% of its --time of ", rec.spec.time_limit.count(),
                          " s used")};
  outbox_.push_back(JobNotification(rec, e, "time_limit"));
}

void MasterState::QueueAdminNotification(std::string_view event,
                                         const std::string& node,
                                         const std::string& detail,
                                         Seconds now) {
  nlohmann::json body = {{"event", event},
                         {"node", node},
                         {"detail", detail},
                         {"time", now.count()}};
  const std::string text =
      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (const std::string& target : options_.admin_notify) {
    outbox_.push_back(Notification{
        .target = target,
        .event = std::string(event),
        .subject = absl::StrCat("node ", node, " ",
                                event == "node_down" ? "lost" : "drained"),
        .body = text});
  }
}

std::vector<Notification> MasterState::TakeNotifications() {
  MutexLock lock(&mu_);
  std::vector<Notification> out;
  out.swap(outbox_);
  return out;
}

}  // namespace tiresias
