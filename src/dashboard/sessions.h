// The dashboard's logins (dashboard_server.h). A browser that logged in
// holds only a session id, in a cookie; the token it logged in with stays
// here, in this process's memory, with who it stands for. The token is never
// sent back to the browser, never written to disk, and goes with the
// session; restarting the dashboard logs everyone out.
//
// Ids are 128 bits from the OS's random source, as 32 hex digits, so that
// nobody can guess one. A session ends when it has been idle for
// idle_timeout, on logout, and when the master refuses its token (the
// caller removes it: a revoked or expired token). Past max_sessions, a new
// login pushes out the session idle longest.
//
// Thread-safe. Time comes in as an argument (a steady clock), so that
// expiry is tested without waiting.
#ifndef TIRESIAS_DASHBOARD_SESSIONS_H_
#define TIRESIAS_DASHBOARD_SESSIONS_H_

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "core/mutex.h"

namespace tiresias {

struct Session {
  std::string token;  // the bearer token every call for this browser carries
  std::string user;   // who the master said the token stands for
  bool admin = false;
  // The page's anti-forgery token: every POST to /api/... must carry it in
  // the X-Tiresias-Csrf header (random, made at login).
  std::string csrf;
};

class SessionStore {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kDefaultIdleTimeout{12 * 3600};
  static constexpr size_t kDefaultMaxSessions = 10000;

  explicit SessionStore(std::chrono::seconds idle_timeout = kDefaultIdleTimeout,
                        size_t max_sessions = kDefaultMaxSessions);

  // A new session; returns its id.
  std::string Create(Session session, Clock::time_point now);
  // The session with this id, which counts as a use at `now`; nullopt for
  // an unknown id or one idle past the timeout (then forgotten).
  std::optional<Session> Find(const std::string& id, Clock::time_point now);
  // Ends a session; an unknown id is a no-op.
  void Remove(const std::string& id);
  size_t size() const;

 private:
  struct Entry {
    Session session;
    Clock::time_point last_used;
  };
  void DropIdle(Clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const std::chrono::seconds idle_timeout_;
  const size_t max_sessions_;

  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tiresias

#endif  // TIRESIAS_DASHBOARD_SESSIONS_H_
