#include "core/warn_signal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

namespace tiresias {
namespace {

using ::testing::HasSubstr;

TEST(WarnSignalTest, ReadsSlurmsForms) {
  EXPECT_EQ(*ParseWarnSignal("USR1"), (WarnSignal{SIGUSR1, 60}));
  EXPECT_EQ(*ParseWarnSignal("SIGUSR2@90"), (WarnSignal{SIGUSR2, 90}));
  EXPECT_EQ(*ParseWarnSignal("term@1"), (WarnSignal{SIGTERM, 1}));
  EXPECT_EQ(*ParseWarnSignal("10@65535"), (WarnSignal{SIGUSR1, 65535}));
  EXPECT_EQ(FormatWarnSignal(*ParseWarnSignal("sigalrm@5")), "ALRM@5");
  EXPECT_EQ(SignalName(SIGHUP), "HUP");
  EXPECT_EQ(SignalName(SIGKILL), "9");
}

TEST(WarnSignalTest, RefusesSignalsTheShimWouldDieOfAndBadTimes) {
  for (const char* bad :
       {"KILL", "9", "STOP", "SEGV", "USR3", "", "@60", "USR1@", "USR1@0",
        "USR1@65536", "USR1@-5", "USR1@1.5", "USR1@ 5"}) {
    absl::StatusOr<WarnSignal> warn = ParseWarnSignal(bad);
    EXPECT_FALSE(warn.ok()) << bad;
    EXPECT_THAT(std::string(warn.status().message()),
                HasSubstr("expected SIG[@SECONDS]"))
        << bad;
  }
  EXPECT_FALSE(IsWarnSignal(SIGPIPE));  // the shim ignores it, but no
  EXPECT_TRUE(IsWarnSignal(SIGQUIT));
}

}  // namespace
}  // namespace tiresias
