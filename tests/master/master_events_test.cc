// A job's event list in MasterState (fake clock, real SQLite, agents'
// reports by hand): every launch that runs records its start with its
// attempt ("started attempt 1 on ...", "resumed attempt 2 on ..."), every
// preemption names the attempt it stopped, and a launch preempted before
// it ran says so instead of leaving a start out silently.
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias {
namespace {

using master_testing::MasterFixture;
using master_testing::Spec;
using master_testing::Starts;
using master_testing::Task;
using testing::ElementsAre;
using testing::Pair;
using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_PREEMPTED;
using v1::TASK_STATE_RUNNING;

class MasterEventsTest : public MasterFixture {
 protected:
  static bool Anyone(const JobRecord&) { return true; }

  void Requeue(JobId id) {
    auto results = master_->UpdateJobs(JobAction::kRequeue, {id}, Anyone);
    ASSERT_TRUE(results.ok()) << results.status();
    ASSERT_TRUE((*results)[0].status.ok()) << (*results)[0].status;
  }
  // (kind, detail) of the job's events, oldest first.
  std::vector<std::pair<std::string, std::string>> Events(JobId id) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const JobEvent& e : Get(id).events) out.emplace_back(e.kind, e.detail);
    return out;
  }
};

// Attempt 1 runs from 1000, is requeued at 1005 and ends at 1005.2;
// attempt 2 runs from 1010 and finishes. The list shows both starts.
TEST_F(MasterEventsTest, APreemptedAndResumedJobListsEveryAttempt) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const JobId id = Submit(Spec(2));
  Pass();
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0, 1}, {}, 1000.0)});
  clock_.Advance(Seconds{5});
  Requeue(id);
  v1::TaskStatus ended =
      Task(id, 1, 0, TASK_STATE_PREEMPTED, {0, 1}, 143, 1000.0);
  ended.set_stop_reason(v1::STOP_REASON_PREEMPT);
  ended.set_end_time(1005.2);
  Beat(n1, {ended});
  clock_.Advance(Seconds{5});
  Pass();
  ASSERT_EQ(Starts(Beat(n1)).size(), 1u);
  Beat(n1, {Task(id, 2, 0, TASK_STATE_RUNNING, {0, 1}, {}, 1010.0)});
  clock_.Advance(Seconds{5});
  v1::TaskStatus done = Task(id, 2, 0, TASK_STATE_EXITED, {0, 1}, 0, 1010.0);
  done.set_end_time(1015.0);
  Beat(n1, {done});
  EXPECT_THAT(Events(id),
              ElementsAre(Pair("submitted", testing::_),
                          Pair("started", "attempt 1 on n1 GPUs 0,1"),
                          Pair("requeued", "by user"),
                          Pair("preempted", "attempt 1 on n1 GPUs 0,1"),
                          Pair("resumed", "attempt 2 on n1 GPUs 0,1"),
                          Pair("finished", testing::_)));
}

// Attempt 1 is requeued while it is still starting (its task never
// reported running): the preemption says it had not run, and attempt 2,
// the job's first run, is "started", not "resumed".
TEST_F(MasterEventsTest, ALaunchPreemptedWhileStartingSaysItNeverRan) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  ASSERT_EQ(Starts(Beat(n1)).size(), 1u);  // sent, not yet reported
  clock_.Advance(Seconds{1});
  Requeue(id);
  v1::TaskStatus stopped = Task(id, 1, 0, TASK_STATE_PREEMPTED, {0}, 143);
  stopped.set_stop_reason(v1::STOP_REASON_PREEMPT);
  Beat(n1, {stopped});
  clock_.Advance(Seconds{1});
  Pass();
  ASSERT_EQ(Starts(Beat(n1)).size(), 1u);
  Beat(n1, {Task(id, 2, 0, TASK_STATE_RUNNING, {0}, {}, 1002.0)});
  EXPECT_THAT(
      Events(id),
      ElementsAre(Pair("submitted", testing::_), Pair("requeued", "by user"),
                  Pair("preempted",
                       "attempt 1 on n1 GPUs 0 (while starting: it had not "
                       "run yet)"),
                  Pair("started", "attempt 2 on n1 GPUs 0")));
}

// The node of a launch still starting goes silent: the system's stop says
// the launch never ran, and the run on the other node is the job's first
// start.
TEST_F(MasterEventsTest, ALaunchLostWhileStartingSaysItNeverRan) {
  options_.node_timeout = Seconds{30};
  Open();
  const int64_t n1 = Register("n1", 1);
  const int64_t n2 = Register("n2", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  auto s1 = Starts(Beat(n1));
  auto s2 = Starts(Beat(n2));
  ASSERT_EQ(s1.size() + s2.size(), 1u);
  const int64_t other = s1.empty() ? n1 : n2;
  const std::string first_name = s1.empty() ? "n2" : "n1";
  const std::string other_name = s1.empty() ? "n1" : "n2";
  clock_.Advance(Seconds{20});
  Beat(other);
  clock_.Advance(Seconds{15});
  Beat(other);
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  Pass();
  ASSERT_EQ(Starts(Beat(other)).size(), 1u);
  Beat(other, {Task(id, 2, 0, TASK_STATE_RUNNING, {0}, {}, 1036.0)});
  const auto events = Events(id);
  ASSERT_EQ(events.size(), 4u) << testing::PrintToString(events);
  EXPECT_EQ(events[1].first, "node_down");
  EXPECT_EQ(events[2].first, "preempted");
  EXPECT_THAT(events[2].second,
              testing::StartsWith("attempt 1 on " + first_name +
                                  " GPUs 0 (while starting: it had not run "
                                  "yet); stopped by the system: node " +
                                  first_name + " lost"));
  EXPECT_EQ(events[3],
            std::make_pair(std::string("started"),
                           "attempt 2 on " + other_name + " GPUs 0"));
}

}  // namespace
}  // namespace tiresias
