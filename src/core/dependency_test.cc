#include "core/dependency.h"

#include <map>

#include "gtest/gtest.h"

namespace tiresias {
namespace {

using K = DependencyKind;
using T = DependencyTarget;
using V = DependencyVerdict;

TEST(ParseDependencies, SlurmFormsWithSeveralIdsAndKinds) {
  auto deps = ParseDependencies("afterok:12:13,afterany:4,afternotok:7");
  ASSERT_TRUE(deps.ok()) << deps.status();
  EXPECT_EQ(*deps, (std::vector<JobDependency>{{K::kAfterOk, 12},
                                               {K::kAfterOk, 13},
                                               {K::kAfterAny, 4},
                                               {K::kAfterNotOk, 7}}));
  EXPECT_EQ(FormatDependencies(*deps), "afterok:12:13,afterany:4,afternotok:7");
}

TEST(ParseDependencies, EmptyIsNoneAndRepeatsAreKeptOnce) {
  auto none = ParseDependencies("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto twice = ParseDependencies("afterok:3,afterok:3:3");
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(*twice, (std::vector<JobDependency>{{K::kAfterOk, 3}}));
}

TEST(ParseDependencies, BadSyntaxSaysWhatWasWrong) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"afterok", "no job id"},
                        Case{"afterok:", "job id \"\" is not a positive"},
                        Case{"afterok:x", "job id \"x\" is not a positive"},
                        Case{"afterok:0", "job id \"0\""},
                        Case{"afterok:-3", "job id \"-3\""},
                        Case{"afterok:1,", "unknown dependency type \"\""},
                        Case{"after:1", "unknown dependency type \"after\""},
                        Case{"singleton", "unknown dependency type"},
                        Case{"afterok:12abc", "\"12abc\""}}) {
    auto deps = ParseDependencies(c.text);
    ASSERT_FALSE(deps.ok()) << c.text;
    EXPECT_EQ(deps.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(deps.status().message().find(c.says), std::string_view::npos)
        << c.text << ": " << deps.status().message();
    EXPECT_NE(deps.status().message().find("expected afterok|afterany"),
              std::string_view::npos);
  }
}

// Job 1 finished, 2 failed (or was cancelled, timed out), 3 still runs.
DependencyCheck Check(std::vector<JobDependency> deps) {
  const std::map<JobId, T> states = {
      {1, T::kSucceeded}, {2, T::kFailed}, {3, T::kUnfinished}};
  return CheckDependencies(deps, [&](JobId id) { return states.at(id); });
}

TEST(CheckDependencies, MetWaitingAndNever) {
  EXPECT_EQ(Check({}).verdict, V::kMet);
  EXPECT_EQ(Check({{K::kAfterOk, 1}}).verdict, V::kMet);
  EXPECT_EQ(Check({{K::kAfterAny, 1}, {K::kAfterAny, 2}}).verdict, V::kMet);
  EXPECT_EQ(Check({{K::kAfterNotOk, 2}}).verdict, V::kMet);

  const DependencyCheck waiting =
      Check({{K::kAfterOk, 1}, {K::kAfterOk, 3}, {K::kAfterAny, 3}});
  EXPECT_EQ(waiting.verdict, V::kWaiting);
  EXPECT_EQ(waiting.index, 1u);
  EXPECT_EQ(waiting.unmet, 2);

  // afterok on a failed job, afternotok on a finished one: never, even
  // with others still waiting ahead of it.
  const DependencyCheck never = Check({{K::kAfterOk, 3}, {K::kAfterOk, 2}});
  EXPECT_EQ(never.verdict, V::kNever);
  EXPECT_EQ(never.index, 1u);
  EXPECT_EQ(Check({{K::kAfterNotOk, 1}}).verdict, V::kNever);
}

}  // namespace
}  // namespace tiresias
