#include "dashboard/sessions.h"

#include <algorithm>

#include "security/tokens.h"

namespace tiresias {

namespace {
constexpr size_t kSessionIdBytes = 16;  // 128 bits
}  // namespace

SessionStore::SessionStore(std::chrono::seconds idle_timeout,
                           size_t max_sessions)
    : idle_timeout_(idle_timeout),
      max_sessions_(std::max<size_t>(max_sessions, 1)) {}

std::string SessionStore::Create(Session session, Clock::time_point now) {
  std::string id = security::RandomHex(kSessionIdBytes);
  MutexLock lock(&mu_);
  DropIdle(now);
  if (sessions_.size() >= max_sessions_) {
    auto oldest = std::min_element(
        sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
          return a.second.last_used < b.second.last_used;
        });
    sessions_.erase(oldest);
  }
  sessions_[id] = Entry{std::move(session), now};
  return id;
}

std::optional<Session> SessionStore::Find(const std::string& id,
                                          Clock::time_point now) {
  MutexLock lock(&mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (now - it->second.last_used >= idle_timeout_) {
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.last_used = std::max(it->second.last_used, now);
  return it->second.session;
}

void SessionStore::Remove(const std::string& id) {
  MutexLock lock(&mu_);
  sessions_.erase(id);
}

size_t SessionStore::size() const {
  MutexLock lock(&mu_);
  return sessions_.size();
}

void SessionStore::DropIdle(Clock::time_point now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second.last_used >= idle_timeout_) {
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace tiresias
