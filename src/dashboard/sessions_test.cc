#include "dashboard/sessions.h"

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using Clock = SessionStore::Clock;

const Clock::time_point kStart{};

TEST(SessionStoreTest, IdsAreFreshRandomHexAndHoldTheirSession) {
  SessionStore store;
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    const std::string id = store.Create({"tsk_1_x", "alice", true}, kStart);
    EXPECT_THAT(id, ::testing::MatchesRegex("[0-9a-f]{32}"));
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);
  std::optional<Session> found = store.Find(*ids.begin(), kStart);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->token, "tsk_1_x");
  EXPECT_EQ(found->user, "alice");
  EXPECT_TRUE(found->admin);
  EXPECT_FALSE(store.Find("", kStart));
  EXPECT_FALSE(store.Find(std::string(32, '0'), kStart));
}

// Idle 12 h: gone. Each use restarts the clock.
TEST(SessionStoreTest, ASessionIdleForTheTimeoutEnds) {
  SessionStore store(hours(12));
  const std::string kept = store.Create({"a", "alice", false}, kStart);
  const std::string idle = store.Create({"b", "bob", false}, kStart);
  EXPECT_TRUE(store.Find(kept, kStart + hours(11)));
  EXPECT_TRUE(store.Find(kept, kStart + hours(22)));  // 11 h after its use
  EXPECT_FALSE(store.Find(idle, kStart + hours(22)));
  EXPECT_FALSE(store.Find(idle, kStart));  // forgotten, not just hidden
  EXPECT_FALSE(store.Find(kept, kStart + hours(34)));
  EXPECT_EQ(store.size(), 0u);
}

TEST(SessionStoreTest, RemoveEndsOneSession) {
  SessionStore store;
  const std::string a = store.Create({"a", "alice", false}, kStart);
  const std::string b = store.Create({"a", "alice", false}, kStart);
  store.Remove(a);
  store.Remove("no-such-id");
  EXPECT_FALSE(store.Find(a, kStart));
  EXPECT_TRUE(store.Find(b, kStart));
}

// Past the most, a login pushes out the session idle longest, and idle
// ones are swept first.
TEST(SessionStoreTest, ANewLoginPastTheMostPushesOutTheLeastRecentlyUsed) {
  SessionStore store(hours(12), 2);
  const std::string a = store.Create({"a", "alice", false}, kStart);
  const std::string b = store.Create({"b", "bob", false}, kStart + seconds(1));
  EXPECT_TRUE(store.Find(a, kStart + seconds(2)));  // a used after b
  const std::string c =
      store.Create({"c", "carol", false}, kStart + seconds(3));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_TRUE(store.Find(a, kStart + seconds(4)));
  EXPECT_FALSE(store.Find(b, kStart + seconds(4)));
  EXPECT_TRUE(store.Find(c, kStart + seconds(4)));
}

}  // namespace
}  // namespace tiresias
