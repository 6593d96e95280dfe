// Whom a task runs as: the user map file, and resolving an owner to an
// account for an agent that is root (injected as agent_uid 0, so most of
// these run as any user) or is not.
#include "agent/run_as.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>

#include "agent/agent_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using agent_testing::MessageOf;
using agent_testing::TestDir;
using agent_testing::ThrowawayUser;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

UserMap MapOf(std::string_view text) {
  absl::StatusOr<UserMap> map = UserMap::Parse(text, "users.map");
  EXPECT_TRUE(map.ok()) << map.status();
  return map.value_or(UserMap());
}

// An agent that is root, whatever runs the test.
RunAsPolicy AsRoot(std::string_view map_text = "", bool allow_root = false) {
  RunAsPolicy policy;
  policy.user_map = MapOf(map_text);
  policy.allow_root_tasks = allow_root;
  policy.agent_uid = 0;
  return policy;
}

TEST(UserMapTest, PairsCommentsAndBlankLines) {
  const UserMap map = MapOf(
      "# owner  account\n"
      "\n"
      "alice   alice-gpu   # her batch account\n"
      "\tbob\tnobody \r\n"
      "   \n");
  EXPECT_EQ(map.AccountFor("alice"), "alice-gpu");
  EXPECT_EQ(map.AccountFor("bob"), "nobody");
  EXPECT_EQ(map.Source("alice"), "users.map:3");
  EXPECT_EQ(map.Source("bob"), "users.map:4");
}

TEST(UserMapTest, AnOwnerNotListedRunsAsItsOwnName) {
  const UserMap map = MapOf("alice alice-gpu\n");
  EXPECT_EQ(map.AccountFor("carol"), "carol");
  EXPECT_EQ(map.Source("carol"), "");
  EXPECT_EQ(UserMap().AccountFor("dave"), "dave");
}

TEST(UserMapTest, StarMapsEveryOwnerNotListed) {
  const UserMap map = MapOf("* nobody\nalice alice\n");
  EXPECT_EQ(map.AccountFor("alice"), "alice");  // listed: its own line
  EXPECT_EQ(map.AccountFor("mallory"), "nobody");
  EXPECT_EQ(map.Source("mallory"), "users.map:1");
}

TEST(UserMapTest, EachKindOfBadLineNamesFileAndLine) {
  struct Case {
    std::string text;
    std::string where;
    std::string says;
  };
  const Case cases[] = {
      {"# ok\nalice\n", "users.map:2: ", "expected two fields"},
      {"alice a b\n", "users.map:1: ", "got 3"},
      {"alice a\n\nbob *\n", "users.map:3: ",
       "expected an account name as the second field, got \"*\""},
      {"alice a\nalice b\n", "users.map:2: ",
       "expected each owner once, got \"alice\" again (line 1)"},
      {"* nobody\n* daemon\n", "users.map:2: ",
       "expected one \"*\" line, got another (line 1)"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<UserMap> map = UserMap::Parse(c.text, "users.map");
    ASSERT_FALSE(map.ok()) << c.text;
    EXPECT_EQ(map.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(MessageOf(map.status()), StartsWith(c.where)) << c.text;
    EXPECT_THAT(MessageOf(map.status()), HasSubstr(c.says)) << c.text;
  }
}

TEST(UserMapTest, LoadReadsTheFileAndNamesAMissingOne) {
  TestDir dir;
  const std::string path = dir.Write("users", "alice nobody\nbroken\n");
  absl::StatusOr<UserMap> bad = UserMap::Load(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(MessageOf(bad.status()), StartsWith(path + ":2: "));

  dir.Write("users", "alice nobody\n");
  absl::StatusOr<UserMap> good = UserMap::Load(path);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->AccountFor("alice"), "nobody");
  EXPECT_EQ(good->file(), path);

  absl::StatusOr<UserMap> missing = UserMap::Load(dir.File("none"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(MessageOf(missing.status()), HasSubstr(dir.File("none")));
}

TEST(ResolveTaskAccountTest, AnAgentThatIsNotRootRunsEveryTaskAsItself) {
  RunAsPolicy policy;
  policy.agent_uid = 4321;
  for (const char* owner : {"", "root", "tiresias-no-such-owner"}) {
    absl::StatusOr<std::optional<TaskAccount>> account =
        ResolveTaskAccount(owner, policy);
    ASSERT_TRUE(account.ok()) << owner << ": " << account.status();
    EXPECT_FALSE(account->has_value()) << owner;
  }
  EXPECT_THAT(DescribeRunAs(policy),
              StartsWith("not running as root: tasks run as "));
  EXPECT_THAT(DescribeRunAs(policy), HasSubstr("(uid 4321)"));
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  policy.agent_uid = nobody->pw_uid;
  EXPECT_EQ(DescribeRunAs(policy),
            "not running as root: tasks run as nobody (uid " +
                std::to_string(nobody->pw_uid) + ")");
}

TEST(ResolveTaskAccountTest, ARootAgentRefusesAnEmptyOwner) {
  absl::StatusOr<std::optional<TaskAccount>> account =
      ResolveTaskAccount("", AsRoot());
  ASSERT_FALSE(account.ok());
  EXPECT_EQ(account.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(MessageOf(account.status()), HasSubstr("no owner"));
}

TEST(ResolveTaskAccountTest, ARootAgentRefusesAnOwnerWithoutAccount) {
  absl::StatusOr<std::optional<TaskAccount>> account =
      ResolveTaskAccount("tiresias-no-such-owner", AsRoot());
  ASSERT_FALSE(account.ok());
  EXPECT_EQ(account.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(MessageOf(account.status()),
              HasSubstr("owner \"tiresias-no-such-owner\": no Unix account"));
}

TEST(ResolveTaskAccountTest, RootIsRefusedUnlessAllowed) {
  absl::StatusOr<std::optional<TaskAccount>> refused =
      ResolveTaskAccount("root", AsRoot());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(MessageOf(refused.status()), HasSubstr("--allow-root-tasks"));

  absl::StatusOr<std::optional<TaskAccount>> allowed =
      ResolveTaskAccount("root", AsRoot("", /*allow_root=*/true));
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  ASSERT_TRUE(allowed->has_value());
  EXPECT_EQ((*allowed)->ids.uid, 0u);
  EXPECT_EQ((*allowed)->ids.gid, 0u);
  EXPECT_EQ((*allowed)->name, "root");
}

TEST(ResolveTaskAccountTest, AnOwnerMappedToRootIsRefusedNamingTheLine) {
  absl::StatusOr<std::optional<TaskAccount>> account =
      ResolveTaskAccount("alice", AsRoot("bob nobody\nalice root\n"));
  ASSERT_FALSE(account.ok());
  EXPECT_EQ(account.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(MessageOf(account.status()),
              HasSubstr("owner \"alice\" (account \"root\" per users.map:2)"));
}

TEST(ResolveTaskAccountTest, StarMapsAnyOwnerToOneAccount) {
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const uid_t uid = nobody->pw_uid;
  const gid_t gid = nobody->pw_gid;
  absl::StatusOr<std::optional<TaskAccount>> account =
      ResolveTaskAccount("someone-without-account", AsRoot("* nobody\n"));
  ASSERT_TRUE(account.ok()) << account.status();
  ASSERT_TRUE(account->has_value());
  EXPECT_EQ((*account)->name, "nobody");
  EXPECT_EQ((*account)->ids.uid, uid);
  EXPECT_EQ((*account)->ids.gid, gid);
  EXPECT_TRUE(std::find((*account)->ids.groups.begin(),
                        (*account)->ids.groups.end(),
                        gid) != (*account)->ids.groups.end());
}

TEST(ResolveTaskAccountTest, AnAccountComesWithItsIdsGroupsAndHome) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (useradd)";
  ThrowawayUser user;
  ASSERT_TRUE(user.ok());
  absl::StatusOr<std::optional<TaskAccount>> account =
      ResolveTaskAccount(user.name(), AsRoot());
  ASSERT_TRUE(account.ok()) << account.status();
  ASSERT_TRUE(account->has_value());
  EXPECT_EQ((*account)->name, user.name());
  EXPECT_EQ((*account)->ids.uid, user.uid());
  EXPECT_EQ((*account)->ids.gid, user.gid());
  EXPECT_THAT((*account)->ids.groups,
              UnorderedElementsAre(user.gid(), user.extra_gid()));
  EXPECT_EQ((*account)->home, user.home());
}

}  // namespace
}  // namespace tiresias
