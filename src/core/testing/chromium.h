// Test-only: the headless Chromium that the browser tests run (the HTML
// report's, the dashboard's), found and started the same way everywhere.
#ifndef TIRESIAS_CORE_TESTING_CHROMIUM_H_
#define TIRESIAS_CORE_TESTING_CHROMIUM_H_

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace tiresias::test_support {

// $TIRESIAS_CHROMIUM if set, else /usr/bin/chromium.
inline std::string ChromiumPath() {
  const char* env = std::getenv("TIRESIAS_CHROMIUM");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/chromium";
}

// ChromiumPath() and the flags for a headless run that touches nothing
// outside `profile_dir` and fetches nothing on its own: add the run's own
// flags and URL.
inline std::vector<std::string> HeadlessChromiumArgv(
    const std::filesystem::path& profile_dir) {
  return {ChromiumPath(),
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--user-data-dir=" + profile_dir.string()};
}

}  // namespace tiresias::test_support

#endif  // TIRESIAS_CORE_TESTING_CHROMIUM_H_
