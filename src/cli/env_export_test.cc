// `submit --export`: what is captured from a hand-made environment, what
// the deny-list keeps out, and the limits.
#include "cli/env_export.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli {
namespace {

using ::testing::HasSubstr;
using Env = std::map<std::string, std::string>;

const std::vector<std::string> kCaller = {
    "PATH=/opt/conda/bin:/usr/bin",
    "MYVAR=hello",
    "EMPTY=",
    "WITH_EQ=a=b",
    "TIRESIAS_TOKEN=tsk_2_secret",
    "TIRESIAS_MASTER=host:50051",
    "CUDA_VISIBLE_DEVICES=3",
    "NVIDIA_VISIBLE_DEVICES=all",
    "HOME=/home/alice",
    "USER=alice",
    "RANK=4",
    "HOSTNAME=laptop",
    "PWD=/tmp",
    "OLDPWD=/",
    "SHLVL=2",
    "_=/usr/bin/tiresias",
    "DISPLAY=:0",
    "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
    "SSH_CONNECTION=1.2.3.4 5 6.7.8.9 22",
    "XDG_RUNTIME_DIR=/run/user/1000",
    "BASH_FUNC_f%%=() {  echo; }",
    "LATIN1=caf\xe9",
    "NOEQUALS",
};

TEST(EnvExport, AllTakesEverythingButTheDenyList) {
  auto env = CaptureEnvironment("ALL", kCaller);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(*env, (Env{{"PATH", "/opt/conda/bin:/usr/bin"},
                       {"MYVAR", "hello"},
                       {"EMPTY", ""},
                       {"WITH_EQ", "a=b"}}));
}

TEST(EnvExport, NoneTakesNothing) {
  auto env = CaptureEnvironment("NONE", kCaller);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE(env->empty());
}

TEST(EnvExport, ANameListTakesOnlyThoseAndValuesGivenInIt) {
  // DISPLAY and SSH_AUTH_SOCK are left out of ALL, but taken when named;
  // UNSET is not set here, so there is nothing to take (as sbatch).
  auto env =
      CaptureEnvironment("MYVAR,DISPLAY,SSH_AUTH_SOCK,UNSET,SEED=7", kCaller);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(*env, (Env{{"MYVAR", "hello"},
                       {"DISPLAY", ":0"},
                       {"SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"},
                       {"SEED", "7"}}));
  env = CaptureEnvironment("ALL,MYVAR=override,EXTRA=1", kCaller);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->at("MYVAR"), "override");
  EXPECT_EQ(env->at("EXTRA"), "1");
  EXPECT_EQ(env->at("PATH"), "/opt/conda/bin:/usr/bin");
  EXPECT_FALSE(env->contains("TIRESIAS_TOKEN"));
}

TEST(EnvExport, WhatTheAgentSetsOrTiresiasOwnsIsRefusedByName) {
  EXPECT_EQ(
      CaptureEnvironment("MYVAR,TIRESIAS_TOKEN", kCaller).status().message(),
      "--export \"MYVAR,TIRESIAS_TOKEN\": TIRESIAS_TOKEN is a Tiresias "
      "variable (TIRESIAS_*: the client's settings and credentials, or "
      "set by the agent for every task); it is never exported");
  EXPECT_EQ(
      CaptureEnvironment("CUDA_VISIBLE_DEVICES=0", kCaller).status().message(),
      "--export \"CUDA_VISIBLE_DEVICES=0\": CUDA_VISIBLE_DEVICES is set by the "
      "agent on the node for every task; it cannot be exported");
  EXPECT_THAT(
      std::string(CaptureEnvironment("HOME", kCaller).status().message()),
      HasSubstr("HOME is set by the agent"));
  EXPECT_TRUE(LeftOutOfExport("SSH_TTY"));
  EXPECT_TRUE(LeftOutOfExport("XDG_SESSION_ID"));
  EXPECT_TRUE(LeftOutOfExport("TIRESIAS_CA"));
  EXPECT_TRUE(LeftOutOfExport("LOCAL_RANK"));
  EXPECT_TRUE(LeftOutOfExport("LOCAL_WORLD_SIZE"));
  EXPECT_TRUE(LeftOutOfExport("SLURM_CPUS_PER_TASK"));  // the caller's
  EXPECT_FALSE(LeftOutOfExport("LD_LIBRARY_PATH"));
}

TEST(EnvExport, MalformedFlagsSayWhatWasExpected) {
  for (const std::string flag : {"", "A,,B", "1A", "A-B", "NONE,A", "A,ALL"}) {
    auto env = CaptureEnvironment(flag, kCaller);
    EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument) << flag;
    EXPECT_THAT(std::string(env.status().message()),
                HasSubstr("--export \"" + flag + "\": "))
        << flag;
  }
  EXPECT_THAT(std::string(CaptureEnvironment("1A", kCaller).status().message()),
              HasSubstr("\"1A\" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"
                        "; expected ALL, NONE or a comma-separated list"));
  EXPECT_THAT(
      std::string(CaptureEnvironment("NONE,A", kCaller).status().message()),
      HasSubstr("NONE takes no names"));
}

TEST(EnvExport, TheSizeCapNamesTheLimitAndTheLargestVariables) {
  // 65,536 bytes of names and values pass; one more byte does not.
  std::vector<std::string> caller = {
      "A=" + std::string(30000, 'a'), "B=" + std::string(30000, 'b'),
      "C=" + std::string(65536 - 60000 - 3, 'c')};
  auto env = CaptureEnvironment("ALL", caller);
  ASSERT_TRUE(env.ok()) << env.status();
  caller.push_back("D=");
  env = CaptureEnvironment("ALL", caller);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().message(),
            "--export \"ALL\": the variables to capture take 65537 bytes "
            "(names and values), over the limit of 65536 (the largest: B "
            "30001, A 30001, C 5534); pass --export NONE or --export "
            "NAME,... naming what the job needs");
  // One value over the master's limit for a variable.
  env = CaptureEnvironment("ALL", {"HUGE=" + std::string(32769, 'h')});
  EXPECT_EQ(env.status().message(),
            "--export \"ALL\": the value of HUGE is 32769 bytes, over the "
            "limit of 32768 for one variable; leave it out with --export "
            "NONE or --export NAME,... naming what the job needs");
  // NONE is never too big.
  EXPECT_TRUE(CaptureEnvironment("NONE", caller).ok());
  // Too many variables.
  std::vector<std::string> many;
  for (int i = 0; i < 1025; ++i) many.push_back("V" + std::to_string(i) + "=");
  EXPECT_THAT(std::string(CaptureEnvironment("ALL", many).status().message()),
              HasSubstr("1025 variables to capture, over the limit of 1024"));
}

}  // namespace
}  // namespace tiresias::cli
