// The agent protocol's table on its own: no SQLite, no MasterState, no
// gRPC. Each case builds launches and nodes by hand, applies what an agent
// would report, and checks what the table says the job must undergo.
#include "master/launch_table.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"

namespace tiresias {
namespace {

using EndKind = LaunchTable::EndKind;
using Kind = LaunchTable::Applied::Kind;

v1::TaskStatus Report(JobId job, int attempt, int rank, v1::TaskState state) {
  v1::TaskStatus task;
  task.mutable_task()->set_job_id(job);
  task.mutable_task()->set_attempt(attempt);
  task.mutable_task()->set_rank(rank);
  task.set_state(state);
  return task;
}

v1::TaskStatus Exited(JobId job, int attempt, int rank, int code,
                      double end = 50) {
  v1::TaskStatus task = Report(job, attempt, rank, v1::TASK_STATE_EXITED);
  task.set_exit_code(code);
  task.set_start_time(10);
  task.set_end_time(end);
  return task;
}

v1::TaskStatus Stopped(JobId job, int attempt, int rank, v1::StopReason reason,
                       double end = 60) {
  v1::TaskStatus task = Report(job, attempt, rank, v1::TASK_STATE_PREEMPTED);
  task.set_stop_reason(reason);
  task.set_end_time(end);
  return task;
}

class LaunchTableTest : public ::testing::Test {
 protected:
  // Nodes 1 and 2 (node-a, node-b), 4 GPUs each, registered.
  void SetUp() override {
    for (int64_t id : {1, 2}) {
      const std::string name = id == 1 ? "node-a" : "node-b";
      LaunchTable::Node& node = table_.NodeAt(id, name);
      node.record.id = id;
      node.record.name = name;
      node.record.gpus = 4;
      node.SetLife(NodeLife::kUp);
    }
    table_.TakeDesiredChanged();
  }

  // A released launch of `job` with one rank per node in `nodes`, GPUs 0,1.
  LaunchTable::Launch& Released(JobId job, int attempt,
                                std::vector<int64_t> nodes) {
    LaunchTable::Launch launch;
    launch.job = job;
    launch.attempt = attempt;
    for (int64_t node : nodes) {
      LaunchTable::Part part;
      part.node_id = node;
      part.local_gpus = {0, 1};
      launch.parts.push_back(part);
    }
    LaunchTable::Launch& added = table_.Add(std::move(launch));
    added.SetPhase(LaunchPhase::kActive);
    added.durable = true;
    return added;
  }

  void RunAll(JobId job, int attempt, int ranks) {
    for (int rank = 0; rank < ranks; ++rank) {
      v1::TaskStatus running =
          Report(job, attempt, rank, v1::TASK_STATE_RUNNING);
      running.set_start_time(10);
      const LaunchTable::Applied applied =
          table_.Apply(rank + 1, running, Seconds{11});
      ASSERT_EQ(applied.kind, Kind::kProgress);
      ASSERT_TRUE(applied.started);
      // Reported again: no new start.
      ASSERT_FALSE(table_.Apply(rank + 1, running, Seconds{12}).started);
    }
  }

  LaunchTable table_;
};

TEST(LaunchTableMoves, EveryLegalMoveAndSomeIllegalOnes) {
  EXPECT_TRUE(LegalMove(PartState::kPlaced, PartState::kRunning));
  EXPECT_TRUE(LegalMove(PartState::kPlaced, PartState::kEnded));
  EXPECT_TRUE(LegalMove(PartState::kRunning, PartState::kEnded));
  EXPECT_FALSE(LegalMove(PartState::kEnded, PartState::kRunning));
  EXPECT_FALSE(LegalMove(PartState::kRunning, PartState::kPlaced));
  EXPECT_FALSE(LegalMove(PartState::kEnded, PartState::kEnded));

  EXPECT_TRUE(LegalMove(LaunchPhase::kDeferred, LaunchPhase::kActive));
  EXPECT_TRUE(LegalMove(LaunchPhase::kActive, LaunchPhase::kStopping));
  EXPECT_TRUE(LegalMove(LaunchPhase::kStopping, LaunchPhase::kStopping));
  EXPECT_FALSE(LegalMove(LaunchPhase::kDeferred, LaunchPhase::kStopping));
  EXPECT_FALSE(LegalMove(LaunchPhase::kStopping, LaunchPhase::kActive));
  EXPECT_FALSE(LegalMove(LaunchPhase::kActive, LaunchPhase::kDeferred));

  EXPECT_TRUE(LegalMove(NodeLife::kKnown, NodeLife::kUp));
  EXPECT_TRUE(LegalMove(NodeLife::kKnown, NodeLife::kDown));
  EXPECT_TRUE(LegalMove(NodeLife::kUp, NodeLife::kLeaving));
  EXPECT_TRUE(LegalMove(NodeLife::kLeaving, NodeLife::kDown));
  EXPECT_TRUE(LegalMove(NodeLife::kDown, NodeLife::kUp));
  EXPECT_FALSE(LegalMove(NodeLife::kDown, NodeLife::kLeaving));
  EXPECT_FALSE(LegalMove(NodeLife::kKnown, NodeLife::kLeaving));
  EXPECT_FALSE(LegalMove(NodeLife::kDown, NodeLife::kDown));
  EXPECT_FALSE(LegalMove(NodeLife::kUp, NodeLife::kKnown));
}

TEST(LaunchTableMoves, AnIllegalMoveIsAnErrorAndChangesNothing) {
  PartState part = PartState::kEnded;
  absl::Status moved = Move(part, PartState::kRunning, "job 7 rank 0");
  EXPECT_EQ(moved.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(moved.message(), "job 7 rank 0: illegal move ended -> running");
  EXPECT_EQ(part, PartState::kEnded);

  LaunchPhase phase = LaunchPhase::kDeferred;
  EXPECT_FALSE(Move(phase, LaunchPhase::kStopping, "launch 7/1").ok());
  EXPECT_EQ(phase, LaunchPhase::kDeferred);
  EXPECT_TRUE(Move(phase, LaunchPhase::kActive, "launch 7/1").ok());
  EXPECT_EQ(phase, LaunchPhase::kActive);

  NodeLife life = NodeLife::kDown;
  absl::Status node = Move(life, NodeLife::kLeaving, "node node-a");
  EXPECT_TRUE(absl::StrContains(node.message(), "down -> leaving"));
  EXPECT_EQ(life, NodeLife::kDown);
}

TEST(LaunchTableMoves, AnIllegalMoveInsideTheMasterStopsIt) {
  LaunchTable::Launch launch;
  launch.job = 7;
  launch.attempt = 1;
  EXPECT_DEATH(launch.SetPhase(LaunchPhase::kStopping),
               "invariant: launch 7/1: illegal move deferred -> stopping");
}

// The deferred launches, in key order, less those released or erased
// since (a released launch is never deferred again).
TEST_F(LaunchTableTest, DeferredLaunchesAreTheOnesNotYetReleased) {
  auto deferred = [&](JobId job) -> LaunchTable::Launch& {
    LaunchTable::Launch launch;
    launch.job = job;
    launch.attempt = 1;
    launch.parts.resize(1);
    launch.parts[0].node_id = 1;
    return table_.Add(std::move(launch));
  };
  deferred(9);
  LaunchTable::Launch& later = deferred(4);
  deferred(6);
  Released(5, 1, {1});
  EXPECT_EQ(table_.DeferredLaunches(),
            (std::vector<LaunchKey>{{4, 1}, {6, 1}, {9, 1}}));
  later.SetPhase(LaunchPhase::kActive);
  table_.Erase({9, 1});
  EXPECT_EQ(table_.DeferredLaunches(), (std::vector<LaunchKey>{{6, 1}}));
  deferred(9);
  EXPECT_EQ(table_.DeferredLaunches(),
            (std::vector<LaunchKey>{{6, 1}, {9, 1}}));
}

TEST_F(LaunchTableTest, GangFailureWaitsForEveryRankThenFails) {
  LaunchTable::Launch& launch = Released(5, 1, {1, 2});
  RunAll(5, 1, 2);
  // Rank 0 exits 3 while rank 1 runs: the others are stopped first.
  const v1::TaskStatus failed = Exited(5, 1, 0, 3);
  LaunchTable::Applied applied = table_.Apply(1, failed, Seconds{50});
  ASSERT_EQ(applied.kind, Kind::kEnded);
  EXPECT_TRUE(applied.ack);
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, failed, true, false),
            EndKind::kRankFailed);
  launch.first_failure = {0, 3};
  table_.Stop(launch, v1::STOP_REASON_PREEMPT);
  EXPECT_TRUE(table_.TakeDesiredChanged());
  // Rank 1 is stopped by us: every rank has ended, none by the system: the
  // job failed with rank 0's code.
  const v1::TaskStatus stopped = Stopped(5, 1, 1, v1::STOP_REASON_PREEMPT);
  ASSERT_EQ(table_.Apply(2, stopped, Seconds{60}).kind, Kind::kEnded);
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, stopped, true, false),
            EndKind::kGangDecided);
  EXPECT_FALSE(launch.system_stopped);
  EXPECT_TRUE(launch.AllEnded());
  EXPECT_FALSE(table_.AnyLive(5));
  // Reported again (the ack was lost): already ended, acknowledged again.
  applied = table_.Apply(2, stopped, Seconds{61});
  EXPECT_EQ(applied.kind, Kind::kAlreadyEnded);
  EXPECT_TRUE(applied.ack);
}

TEST_F(LaunchTableTest, GangFailureAfterASystemStopIsAPreemption) {
  LaunchTable::Launch& launch = Released(5, 1, {1, 2});
  RunAll(5, 1, 2);
  launch.first_failure = {0, 3};
  ASSERT_EQ(table_.Apply(1, Exited(5, 1, 0, 3), Seconds{50}).kind,
            Kind::kEnded);
  // Rank 1's agent shut down under it: a system stop.
  const v1::TaskStatus shutdown = Stopped(5, 1, 1, v1::STOP_REASON_SHUTDOWN);
  ASSERT_EQ(table_.Apply(2, shutdown, Seconds{60}).kind, Kind::kEnded);
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, shutdown, true, false),
            EndKind::kGangDecided);
  EXPECT_TRUE(launch.system_stopped);
}

TEST_F(LaunchTableTest, AFencedTaskIsASystemStop) {
  LaunchTable::Launch& launch = Released(6, 2, {1});
  RunAll(6, 2, 1);
  // The agent's lease lapsed: its shim stopped the task.
  const v1::TaskStatus fenced = Stopped(6, 2, 0, v1::STOP_REASON_FENCED);
  EXPECT_TRUE(LaunchTable::IsSystemStop(fenced));
  ASSERT_EQ(table_.Apply(1, fenced, Seconds{70}).kind, Kind::kEnded);
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, fenced, true, false),
            EndKind::kSystemStop);
  EXPECT_TRUE(launch.system_stopped);
  EXPECT_FALSE(launch.parts[0].own_end);
  // Our own preemption and an orphan's stop are not system stops.
  EXPECT_FALSE(
      LaunchTable::IsSystemStop(Stopped(6, 2, 0, v1::STOP_REASON_PREEMPT)));
  EXPECT_FALSE(
      LaunchTable::IsSystemStop(Stopped(6, 2, 0, v1::STOP_REASON_ORPHAN)));
  // An exit whose code was lost is one.
  EXPECT_TRUE(
      LaunchTable::IsSystemStop(Report(6, 2, 0, v1::TASK_STATE_EXITED)));
}

TEST_F(LaunchTableTest, ALostNodeEndsItsPartsOnlyAndFreesItsGpus) {
  Released(5, 1, {1, 2});
  Released(6, 1, {2});
  LaunchTable::Launch deferred;
  deferred.job = 7;
  deferred.attempt = 1;
  deferred.parts.push_back({.node_id = 1, .local_gpus = {2, 3}});
  table_.Add(std::move(deferred));
  RunAll(5, 1, 2);
  EXPECT_EQ(table_.BusyGpus(1),
            (std::vector<LaunchKey>{{5, 1}, {5, 1}, {0, 0}, {0, 0}}));
  const uint64_t version = table_.FindNode(1)->version;

  const std::vector<LaunchKey> lost = table_.LosePartsOn(1, Seconds{90});
  // Job 5 had a rank there; job 6 did not; job 7's launch was never sent.
  EXPECT_EQ(lost, (std::vector<LaunchKey>{{5, 1}}));
  const LaunchTable::Launch* five = table_.Find({5, 1});
  EXPECT_TRUE(five->parts[0].ended());
  EXPECT_EQ(five->parts[0].end_time, Seconds{90});
  EXPECT_FALSE(five->parts[1].ended());
  EXPECT_TRUE(five->system_stopped);
  EXPECT_FALSE(table_.Find({6, 1})->system_stopped);
  EXPECT_FALSE(table_.Find({7, 1})->parts[0].ended());
  EXPECT_EQ(table_.BusyGpus(1), (std::vector<LaunchKey>(4, LaunchKey{0, 0})));
  EXPECT_GT(table_.FindNode(1)->version, version);
  // Job 5 still runs on node 2.
  EXPECT_TRUE(table_.AnyLive(5));
}

TEST_F(LaunchTableTest, EraseUpNodesKeepsTheNodesNotUp) {
  LaunchTable::Node& c = table_.NodeAt(3, "node-c");  // known, not heard from
  c.record.id = 3;
  c.record.name = "node-c";
  table_.FindNode(2)->SetLife(NodeLife::kLeaving);  // up, shutting down
  std::set<std::string> names = {"node-a", "node-b", "node-c", "node-gone"};
  table_.EraseUpNodes(&names);
  EXPECT_EQ(names, (std::set<std::string>{"node-c", "node-gone"}));
  table_.FindNode(1)->SetLife(NodeLife::kDown);
  names = {"node-a"};
  table_.EraseUpNodes(&names);
  EXPECT_EQ(names, std::set<std::string>{"node-a"});
}

TEST_F(LaunchTableTest, AReportFromAnotherNodeIsNotAPart) {
  Released(5, 1, {1});
  const v1::TaskStatus running = Report(5, 1, 0, v1::TASK_STATE_RUNNING);
  LaunchTable::Applied applied = table_.Apply(2, running, Seconds{5});
  EXPECT_EQ(applied.kind, Kind::kNotAPart);
  EXPECT_FALSE(applied.ack);
  EXPECT_EQ(table_.Find({5, 1})->parts[0].state, PartState::kPlaced);
  // Its end is acknowledged (an orphan's end is done with), and changes
  // nothing.
  applied = table_.Apply(2, Exited(5, 1, 0, 0), Seconds{6});
  EXPECT_EQ(applied.kind, Kind::kNotAPart);
  EXPECT_TRUE(applied.ack);
  EXPECT_FALSE(table_.Find({5, 1})->parts[0].ended());
}

TEST_F(LaunchTableTest, AShortRunIsMarkedRunningAtItsStartThenEnded) {
  LaunchTable::Launch& launch = Released(8, 1, {1});
  const v1::TaskStatus done = Exited(8, 1, 0, 0, 12);
  const LaunchTable::Applied applied = table_.Apply(1, done, Seconds{20});
  ASSERT_EQ(applied.kind, Kind::kEnded);
  EXPECT_TRUE(applied.started);  // MasterState marks the job running first
  EXPECT_TRUE(launch.parts[0].running());
  EXPECT_EQ(launch.parts[0].start_time, Seconds{10});
  EXPECT_TRUE(launch.parts[0].own_end);
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, done, true, false),
            EndKind::kFinished);
}

TEST_F(LaunchTableTest, AFailedSpawnNeverRan) {
  LaunchTable::Launch& launch = Released(9, 1, {1, 2});
  const v1::TaskStatus spawn =
      Exited(9, 1, 1, LaunchTable::kStartFailedExitCode);
  ASSERT_EQ(table_.Apply(2, spawn, Seconds{20}).kind, Kind::kEnded);
  EXPECT_FALSE(launch.parts[1].running());
  EXPECT_FALSE(launch.parts[1].own_end);
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, spawn, true, false),
            EndKind::kStartFailed);
}

TEST_F(LaunchTableTest, OwnEndsWhileStoppingWinOverTheStop) {
  LaunchTable::Launch& launch = Released(4, 1, {1, 2});
  RunAll(4, 1, 2);
  table_.Stop(launch, v1::STOP_REASON_PREEMPT);
  const v1::TaskStatus first = Exited(4, 1, 0, 0);
  ASSERT_EQ(table_.Apply(1, first, Seconds{50}).kind, Kind::kEnded);
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, first, true, false),
            EndKind::kStopWaits);
  const v1::TaskStatus second = Exited(4, 1, 1, 2);
  ASSERT_EQ(table_.Apply(2, second, Seconds{51}).kind, Kind::kEnded);
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, second, true, false),
            EndKind::kOwnEndWhileStopping);
  // The same ends for a job that already ended, or is being re-adopted:
  // just the stop's end.
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, second, false, false),
            EndKind::kStopEnded);
  EXPECT_EQ(LaunchTable::ClassifyEnd(launch, second, true, true),
            EndKind::kStopEnded);
}

TEST_F(LaunchTableTest, UnreportedPartsThatRanOrAreStoppingCountAsEnded) {
  Released(5, 1, {1});
  LaunchTable::Launch& stopping = Released(6, 1, {1});
  Released(7, 1, {1});
  RunAll(5, 1, 1);
  table_.Stop(stopping, v1::STOP_REASON_CANCEL);
  // The agent reports only job 7's task (which has not started yet).
  const std::set<TaskKey> present = {{7, 1, 0}};
  EXPECT_EQ(table_.Unreported(1, present),
            (std::vector<std::pair<LaunchKey, int>>{{{5, 1}, 0}, {{6, 1}, 0}}));
  EXPECT_TRUE(table_.Unreported(2, present).empty());
}

TEST_F(LaunchTableTest, OrphansHoldTheirGpusAndBlockTheJobsNextAttempt) {
  LaunchTable::Launch& next = Released(5, 2, {1});
  LaunchTable::Node& node = *table_.FindNode(1);
  table_.SetOrphans(node, {{{5, 1, 0}, {2}}});
  EXPECT_TRUE(table_.HasOrphans(5));
  EXPECT_TRUE(table_.OtherAttemptLive(next));
  EXPECT_EQ(table_.BusyGpus(1)[2], (LaunchKey{5, 1}));
  table_.SetOrphans(node, {});
  EXPECT_FALSE(table_.HasOrphans(5));
  EXPECT_FALSE(table_.OtherAttemptLive(next));
}

TEST_F(LaunchTableTest, PartsOnANodeFollowAddsPlacementsAndErases) {
  Released(5, 1, {1, 2});
  Released(6, 1, {2});
  using Parts = std::set<std::pair<LaunchKey, int>>;
  EXPECT_EQ(table_.PartsOn(1), (Parts{{{5, 1}, 0}}));
  EXPECT_EQ(table_.PartsOn(2), (Parts{{{5, 1}, 1}, {{6, 1}, 0}}));
  // Re-adopted after a restart: its parts get their node as agents report.
  LaunchTable::Launch& adopted = table_.Adopted({7, 3}, 2);
  EXPECT_TRUE(table_.PartsOn(3).empty());
  table_.PlacePart(adopted, 1, 1);
  EXPECT_EQ(table_.PartsOn(1), (Parts{{{5, 1}, 0}, {{7, 3}, 1}}));
  table_.Erase({5, 1});
  EXPECT_EQ(table_.PartsOn(1), (Parts{{{7, 3}, 1}}));
  EXPECT_EQ(table_.PartsOn(2), (Parts{{{6, 1}, 0}}));
  table_.Erase({6, 1});
  EXPECT_TRUE(table_.PartsOn(2).empty());
  EXPECT_EQ(table_.BusyGpus(2), (std::vector<LaunchKey>(4, LaunchKey{0, 0})));
}

TEST_F(LaunchTableTest, StaleReportsAreRefused) {
  LaunchTable::Node& node = *table_.FindNode(1);
  ASSERT_TRUE(LaunchTable::CheckReportOrder(node, "boot-1", 5).ok());
  EXPECT_EQ(LaunchTable::CheckReportOrder(node, "boot-1", 5).code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(LaunchTable::CheckReportOrder(node, "boot-1", 4).code(),
            absl::StatusCode::kAborted);
  EXPECT_TRUE(LaunchTable::CheckReportOrder(node, "boot-1", 6).ok());
  // A new boot starts its own sequence.
  EXPECT_TRUE(LaunchTable::CheckReportOrder(node, "boot-2", 1).ok());
}

// The desired state of a node, whole and as deltas: a StartTask per live
// part of an active, durable launch (filled by the job side, and only for
// a task the agent does not hold), one StopTask per launch being stopped,
// and in a delta the held tasks no longer wanted. A job the job side no
// longer knows is not wanted.
TEST_F(LaunchTableTest, DesiredStatesAreWholeOrDeltasAgainstWhatWasTold) {
  std::vector<std::pair<JobId, int>> filled;
  std::set<JobId> gone;  // jobs the job side no longer knows
  auto fill = [&](const LaunchTable::Launch& launch, int rank,
                  v1::StartTask* start) {
    if (gone.contains(launch.job)) return false;
    if (start != nullptr) {
      start->mutable_task()->set_job_id(launch.job);
      start->mutable_task()->set_rank(rank);
      filled.emplace_back(launch.job, rank);
    }
    return true;
  };
  Released(7, 1, {1, 2});
  Released(8, 1, {1});
  {  // decided, not released (its GPUs are still held)
    LaunchTable::Launch deferred;
    deferred.job = 9;
    deferred.attempt = 1;
    deferred.parts.resize(1);
    deferred.parts[0].node_id = 1;
    table_.Add(std::move(deferred)).durable = true;
  }

  table_.TouchNode(1);  // as its registration does: version 1 and up
  // Registration: the whole state of node 1, jobs 7 and 8 (not 9, whose
  // launch is not released).
  v1::DesiredState whole = table_.AnswerDesired(1, 0, fill);
  EXPECT_FALSE(whole.delta());
  ASSERT_EQ(whole.run_size(), 2);
  EXPECT_EQ(whole.run(0).task().job_id(), 7);
  EXPECT_EQ(whole.run(1).task().job_id(), 8);
  EXPECT_EQ(filled, (std::vector<std::pair<JobId, int>>{{7, 0}, {8, 0}}));
  const uint64_t told = whole.version();

  // Nothing changed: a delta with nothing in it, and nothing filled.
  filled.clear();
  v1::DesiredState same = table_.AnswerDesired(1, told, fill);
  EXPECT_TRUE(same.delta());
  EXPECT_EQ(same.base_version(), told);
  EXPECT_EQ(same.run_size(), 0);
  EXPECT_EQ(same.removed_size(), 0);
  EXPECT_TRUE(filled.empty());

  // Job 7 is being stopped, job 8 forgotten by the job side, job 9
  // released: the delta starts 9 alone, stops 7 once, removes 7 and 8.
  table_.Stop(*table_.Find({7, 1}), v1::STOP_REASON_PREEMPT);
  gone.insert(8);
  table_.Find({9, 1})->SetPhase(LaunchPhase::kActive);
  table_.TouchNode(1);
  v1::DesiredState delta = table_.AnswerDesired(1, told, fill);
  EXPECT_TRUE(delta.delta());
  EXPECT_GT(delta.version(), told);
  ASSERT_EQ(delta.run_size(), 1);
  EXPECT_EQ(delta.run(0).task().job_id(), 9);
  ASSERT_EQ(delta.stop_size(), 1);
  EXPECT_EQ(delta.stop(0).job_id(), 7);
  EXPECT_EQ(delta.stop(0).reason(), v1::STOP_REASON_PREEMPT);
  std::set<JobId> removed;
  for (const v1::TaskRef& task : delta.removed()) removed.insert(task.job_id());
  EXPECT_EQ(removed, (std::set<JobId>{7, 8}));

  // An agent naming a version it was not last told gets the whole state.
  v1::DesiredState again = table_.AnswerDesired(1, told, fill);
  EXPECT_FALSE(again.delta());
  ASSERT_EQ(again.run_size(), 1);
  EXPECT_EQ(again.run(0).task().job_id(), 9);
  // An unknown node: nothing.
  EXPECT_EQ(table_.AnswerDesired(42, 0, fill).ByteSizeLong(), 0u);
}

}  // namespace
}  // namespace tiresias

namespace tiresias {
namespace {

// Job 1 and job 626 share their default port (29500 + 16 x id + attempt
// mod 10000 = 29517): on one node the second moves past the first's ports;
// on another node, or once the first has ended, it keeps its own.
TEST_F(LaunchTableTest, TwoLaunchesNeverShareAPortOfANode) {
  constexpr int kBase = 29500, kWindow = 10000;
  LaunchTable::Launch& first = Released(1, 1, {1});
  first.first_port = 29517;
  first.port_span = 2;  // two processes: 29517 and 29518
  auto candidate = [](std::vector<int64_t> nodes) {
    LaunchTable::Launch launch;
    launch.job = 626;
    launch.attempt = 1;
    for (int64_t node : nodes) {
      LaunchTable::Part part;
      part.node_id = node;
      launch.parts.push_back(part);
    }
    return launch;
  };
  EXPECT_EQ(table_.ChoosePorts(candidate({1}), 4, 29517, kBase, kWindow),
            29519);
  EXPECT_EQ(table_.ChoosePorts(candidate({2, 1}), 4, 29517, kBase, kWindow),
            29519);
  EXPECT_EQ(table_.ChoosePorts(candidate({2}), 4, 29517, kBase, kWindow),
            29517);
  // A span that would reach into the first's ports from below moves too.
  EXPECT_EQ(table_.ChoosePorts(candidate({1}), 4, 29515, kBase, kWindow),
            29519);
  EXPECT_EQ(table_.ChoosePorts(candidate({1}), 2, 29515, kBase, kWindow),
            29515);
  first.parts[0].state = PartState::kEnded;
  EXPECT_EQ(table_.ChoosePorts(candidate({1}), 4, 29517, kBase, kWindow),
            29517);
}

TEST_F(LaunchTableTest, PortsWrapWithinTheWindowAndGiveUpWhenItIsFull) {
  LaunchTable::Launch& top = Released(1, 1, {1});
  top.first_port = 590;
  top.port_span = 10;  // [590, 600): the window's last ten
  LaunchTable::Launch candidate;
  candidate.job = 2;
  candidate.attempt = 1;
  candidate.parts.resize(1);
  candidate.parts[0].node_id = 1;
  // From 595 it cannot fit below 600: it wraps to the window's start.
  EXPECT_EQ(table_.ChoosePorts(candidate, 3, 595, 500, 100), 500);
  // A span reaching past the window's top counts only up to it: the
  // ports below the preferred one are still tried.
  top.first_port = 520;
  top.port_span = 120;  // [520, 640)
  LaunchTable::Launch& low = Released(3, 1, {1});
  low.first_port = 500;
  low.port_span = 5;  // [500, 505)
  EXPECT_EQ(table_.ChoosePorts(candidate, 3, 520, 500, 100), 505);
  low.parts[0].state = PartState::kEnded;
  // A window the first fills whole: the preferred port, as before.
  top.first_port = 500;
  top.port_span = 100;
  EXPECT_EQ(table_.ChoosePorts(candidate, 1, 530, 500, 100), 530);
}

}  // namespace
}  // namespace tiresias
