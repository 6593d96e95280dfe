// Headless Chromium driven over the DevTools protocol, for tests where a
// real browser must act as a user would: fill in and submit a form, follow
// the redirect with the cookies it was given, run the page's script, click.
// The protocol runs over a pipe (--remote-debugging-pipe: Chromium reads
// commands on fd 3 and answers on fd 4, each message JSON ending in NUL), so
// no port is opened and nothing else can drive the browser.
//
//   HeadlessBrowser browser(dir / "profile");
//   ASSERT_TRUE(browser.Open("http://127.0.0.1:8080/")) << browser.error();
//   ASSERT_TRUE(browser.WaitFor("document.forms.length > 0"));
//   nlohmann::json title = browser.Evaluate("document.title");
//
// Not thread-safe; one tab per browser.
#ifndef TIRESIAS_TESTS_CLUSTER_CLI_HEADLESS_BROWSER_H_
#define TIRESIAS_TESTS_CLUSTER_CLI_HEADLESS_BROWSER_H_

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/testing/chromium.h"
#include "nlohmann/json.hpp"

namespace tiresias::cluster_test {

using test_support::ChromiumPath;
using test_support::HeadlessChromiumArgv;

class HeadlessBrowser {
 public:
  // Starts Chromium with a fresh profile in `profile_dir` (its stderr goes
  // to chromium.log there). started() says whether it runs.
  explicit HeadlessBrowser(const std::filesystem::path& profile_dir);
  ~HeadlessBrowser();  // kills the browser's process group
  HeadlessBrowser(const HeadlessBrowser&) = delete;
  HeadlessBrowser& operator=(const HeadlessBrowser&) = delete;

  bool started() const { return pid_ > 0; }
  // What went wrong last, for test messages.
  const std::string& error() const { return error_; }

  // Opens a tab at `url` (later calls run in it, across its navigations).
  bool Open(const std::string& url);
  // The value of a JavaScript expression in the tab (a promise is awaited),
  // as JSON; nullopt if it threw or the page was between documents (then
  // error() says why).
  std::optional<nlohmann::json> Evaluate(const std::string& expression);
  // Evaluates `expression` every 50 ms until it is true, up to `timeout`.
  bool WaitFor(const std::string& expression,
               std::chrono::milliseconds timeout = std::chrono::seconds(20));

 private:
  // Sends a command and returns its answer ("result" or "error"); events
  // in between are skipped. nullopt when the browser does not answer
  // within 30 s.
  std::optional<nlohmann::json> Call(const std::string& method,
                                     nlohmann::json params,
                                     bool in_session = true);

  pid_t pid_ = -1;
  int to_browser_ = -1;
  int from_browser_ = -1;
  int next_id_ = 1;
  std::string session_id_;
  std::string buffer_;  // read from the browser, not yet a whole message
  std::string error_;
};

}  // namespace tiresias::cluster_test

#endif  // TIRESIAS_TESTS_CLUSTER_CLI_HEADLESS_BROWSER_H_
