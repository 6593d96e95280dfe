// StateDirLead with real processes: the lead is a lock the kernel drops
// with its process, so the other masters are forked children here.
#include "master/state_dir_lead.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/testing/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class StateDirLeadTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (pid_t child : children_) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
  }

  // A child process that joins the state dir, leads if `lead` (and says
  // its epoch on the pipe, or 0), then waits to be killed.
  pid_t ChildMaster(bool lead, uint64_t* epoch) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    const pid_t child = fork();
    if (child == 0) {
      close(fds[0]);
      auto joined = StateDirLead::Join(dir_.path().string());
      uint64_t said = 0;
      if (joined.ok() && lead) {
        auto led = (*joined)->TryLead();
        if (led.ok() && *led) said = (*joined)->record().epoch;
      }
      if (!joined.ok()) said = ~uint64_t{0};
      (void)!write(fds[1], &said, sizeof(said));
      for (;;) pause();
    }
    close(fds[1]);
    EXPECT_EQ(read(fds[0], epoch, sizeof(*epoch)),
              static_cast<ssize_t>(sizeof(*epoch)));
    close(fds[0]);
    children_.push_back(child);
    return child;
  }

  void Kill(pid_t child) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    std::erase(children_, child);
  }

  test_support::TestDir dir_;
  std::vector<pid_t> children_;
};

TEST_F(StateDirLeadTest, EachLeadTakesTheNextEpochAndRecordsItsMaster) {
  for (uint64_t expected = 1; expected <= 3; ++expected) {
    auto lead = StateDirLead::Join(dir_.path().string());
    ASSERT_TRUE(lead.ok()) << lead.status();
    auto led = (*lead)->TryLead();
    ASSERT_TRUE(led.ok()) << led.status();
    ASSERT_TRUE(*led);
    EXPECT_EQ((*lead)->record().epoch, expected);
    ASSERT_TRUE((*lead)->SetAddress("127.0.0.1:5000").ok());
    auto record = (*lead)->ReadLeader();
    ASSERT_TRUE(record.ok()) << record.status();
    ASSERT_TRUE(record->has_value());
    EXPECT_EQ((*record)->epoch, expected);
    EXPECT_EQ((*record)->pid, getpid());
    EXPECT_EQ((*record)->address, "127.0.0.1:5000");
    EXPECT_THAT(
        DescribeLeader(**record),
        HasSubstr(absl::StrCat("epoch ", expected, ", pid ", getpid())));
  }
}

TEST_F(StateDirLeadTest, AStandbyLeadsOnceTheLeaderIsKilled) {
  uint64_t child_epoch = 0;
  const pid_t leader = ChildMaster(/*lead=*/true, &child_epoch);
  ASSERT_EQ(child_epoch, 1u);
  auto standby = StateDirLead::Join(dir_.path().string());
  ASSERT_TRUE(standby.ok()) << standby.status();
  auto led = (*standby)->TryLead();
  ASSERT_TRUE(led.ok());
  EXPECT_FALSE(*led) << "two leaders at once";
  EXPECT_FALSE((*standby)->leading());
  auto record = (*standby)->ReadLeader();
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_EQ((*record)->pid, leader);

  Kill(leader);  // no chance to clean up
  led = (*standby)->TryLead();
  ASSERT_TRUE(led.ok()) << led.status();
  EXPECT_TRUE(*led);
  EXPECT_EQ((*standby)->record().epoch, 2u);
}

TEST_F(StateDirLeadTest, TheLeaderListsLiveStandbysAndForgetsKilledOnes) {
  auto lead = StateDirLead::Join(dir_.path().string());
  ASSERT_TRUE(lead.ok());
  ASSERT_TRUE(*(*lead)->TryLead());
  EXPECT_THAT((*lead)->Standbys(), IsEmpty());
  uint64_t epoch = 0;
  const pid_t a = ChildMaster(/*lead=*/true, &epoch);
  EXPECT_EQ(epoch, 0u) << "a second master led beside the first";
  const pid_t b = ChildMaster(/*lead=*/false, &epoch);
  std::vector<std::string> standbys = (*lead)->Standbys();
  ASSERT_EQ(standbys.size(), 2u);
  EXPECT_THAT(standbys[0] + " " + standbys[1],
              HasSubstr(absl::StrCat(std::min(a, b), "@")));
  Kill(a);
  standbys = (*lead)->Standbys();
  ASSERT_EQ(standbys.size(), 1u);
  EXPECT_EQ(standbys[0].substr(0, standbys[0].find('@')), absl::StrCat(b));
  Kill(b);
  EXPECT_THAT((*lead)->Standbys(), IsEmpty());
  // The killed masters' files are gone too.
  int files = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(dir_.path().string() + "/lead")) {
    files += e.path().filename().string().rfind("master-", 0) == 0;
  }
  EXPECT_EQ(files, 1);  // this process's
}

TEST_F(StateDirLeadTest, AnUnreadableRecordStopsEveryLeadAndNamesTheFile) {
  {
    auto lead = StateDirLead::Join(dir_.path().string());
    ASSERT_TRUE(lead.ok());
    ASSERT_TRUE(*(*lead)->TryLead());
  }
  const std::string record = dir_.path().string() + "/lead/leader";
  std::ofstream(record) << "epoch seven\npid 1\n";
  auto lead = StateDirLead::Join(dir_.path().string());
  ASSERT_TRUE(lead.ok());
  auto led = (*lead)->TryLead();
  ASSERT_FALSE(led.ok());
  EXPECT_THAT(led.status().message(), HasSubstr(record));
  EXPECT_THAT(led.status().message(), HasSubstr("line 1: epoch"));
  EXPECT_FALSE((*lead)->leading());
  // The lock was let go: mended, the lead is taken, from the epoch written.
  std::ofstream(record) << "epoch 7\n";
  led = (*lead)->TryLead();
  ASSERT_TRUE(led.ok()) << led.status();
  EXPECT_TRUE(*led);
  EXPECT_EQ((*lead)->record().epoch, 8u);
  // And a record with no epoch at all is refused too.
  std::ofstream(record) << "pid 1\n";
  auto read = (*lead)->ReadLeader();
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("no epoch"));
}

}  // namespace
}  // namespace tiresias
