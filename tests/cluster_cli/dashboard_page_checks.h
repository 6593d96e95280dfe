// Checks of the dashboard page as a browser renders it, shared by the tests
// against an --insecure master (dashboard_test) and a secure one
// (dashboard_auth_test).
#ifndef TIRESIAS_TESTS_CLUSTER_CLI_DASHBOARD_PAGE_CHECKS_H_
#define TIRESIAS_TESTS_CLUSTER_CLI_DASHBOARD_PAGE_CHECKS_H_

#include <string>

#include "gtest/gtest.h"
#include "headless_browser.h"

namespace tiresias::cluster_test {

// Clicks job `job_id`'s row on the dashboard open in `browser`, and expects
// its details to show `command` as text, and nothing on the page to have
// run as markup: no <img> in it, and body.dataset.xss (what the tests'
// payloads set) unset.
inline void ExpectJobCommandShownAsText(HeadlessBrowser& browser, int job_id,
                                        const std::string& command) {
  const std::string id = std::to_string(job_id);
  ASSERT_TRUE(browser
                  .Evaluate("document.querySelector('tr[data-job-id=\"" + id +
                            "\"]').click(); true")
                  .has_value())
      << browser.error();
  ASSERT_TRUE(
      browser.WaitFor("document.body.dataset.detailJob === '" + id + "'"))
      << browser.error();
  EXPECT_EQ(
      browser.Evaluate("document.getElementById('job-command').textContent"),
      command);
  EXPECT_EQ(
      browser.Evaluate("document.getElementById('job-profile').textContent"),
      "Traffic profile: not measured yet (placed as skewed)");
  EXPECT_EQ(browser.Evaluate("document.querySelectorAll('main img').length"),
            0);
  EXPECT_EQ(browser.Evaluate("document.body.dataset.xss === undefined"), true);
}

}  // namespace tiresias::cluster_test

#endif  // TIRESIAS_TESTS_CLUSTER_CLI_DASHBOARD_PAGE_CHECKS_H_
