#include "master/commit_queue.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

JobEvent Ev(JobId id, const std::string& kind) {
  return JobEvent{id, 0, Seconds{1}, kind, ""};
}

JobRecord Rec(JobId id) {
  JobRecord rec;
  rec.id = id;
  return rec;
}

std::vector<std::string> Kinds(const std::vector<JobEvent>& events) {
  std::vector<std::string> kinds;
  for (const JobEvent& e : events) kinds.push_back(e.kind);
  return kinds;
}

// The master's part of a write: the records of queued jobs still in memory
// (`gone` are not), and the nodes the queue names.
StoreWrite TakeWrite(CommitQueue& q, std::vector<int64_t>* nodes,
                     std::set<JobId> gone = {}) {
  StoreWrite write;
  for (JobId id : q.jobs()) {
    if (!gone.contains(id)) write.jobs.push_back(Rec(id));
  }
  *nodes = q.Take(&write);
  for (int64_t id : *nodes) {
    NodeRecord node;
    node.id = id;
    write.nodes.push_back(node);
  }
  return write;
}

TEST(CommitQueueTest, AWriteTakesEverythingQueuedOnceButTheReleasedLaunches) {
  CommitQueue q;
  EXPECT_TRUE(q.empty());
  q.Job(9);
  q.Job(4);
  q.Job(9);
  q.Respecified(6);  // a changed request is a changed job too
  q.Node(2);
  q.Event(Ev(9, "started"));
  q.Event(Ev(4, "preempted"));
  q.Launch(LaunchRecord{9, 1, {"n1"}});
  q.Released({9, 1});
  EXPECT_THAT(q.jobs(), ElementsAre(4, 6, 9));
  std::vector<int64_t> nodes;
  StoreWrite write = TakeWrite(q, &nodes);
  EXPECT_THAT(nodes, ElementsAre(2));
  EXPECT_THAT(write.new_specs, ElementsAre(6));
  EXPECT_THAT(Kinds(write.events), ElementsAre("started", "preempted"));
  ASSERT_EQ(write.launches.size(), 1u);
  EXPECT_EQ(write.launches[0].job_id, 9);
  EXPECT_THAT(q.jobs(), IsEmpty());
  EXPECT_FALSE(q.empty());  // the release waits for the write's success
  EXPECT_THAT(q.TakeReleased(), ElementsAre(LaunchKey{9, 1}));
  EXPECT_TRUE(q.empty());
  // The next write holds only what came since: job 6 changed again, its
  // request did not.
  q.Event(Ev(4, "resumed"));
  q.Job(6);
  write = TakeWrite(q, &nodes);
  EXPECT_THAT(Kinds(write.events), ElementsAre("resumed"));
  EXPECT_THAT(write.new_specs, IsEmpty());
  EXPECT_THAT(nodes, IsEmpty());
}

TEST(CommitQueueTest, AFailedWriteIsQueuedAgainAheadOfWhatCameSince) {
  CommitQueue q;
  q.Respecified(3);
  q.Job(5);
  q.Node(7);
  q.Event(Ev(3, "modified"));
  q.Launch(LaunchRecord{5, 2, {"a"}});
  q.Released({5, 2});
  std::vector<int64_t> nodes;
  StoreWrite failed = TakeWrite(q, &nodes);
  // Queued before the put-back: Commit never does this (its mutex is held
  // through the write), but the queue allows it.
  q.Event(Ev(5, "finished"));
  q.Launch(LaunchRecord{8, 1, {"b"}});
  q.Respecified(8);
  q.PutBack(std::move(failed));
  EXPECT_THAT(q.jobs(), ElementsAre(3, 5, 8));
  StoreWrite retry = TakeWrite(q, &nodes);
  EXPECT_THAT(Kinds(retry.events), ElementsAre("modified", "finished"));
  ASSERT_EQ(retry.launches.size(), 2u);
  EXPECT_EQ(retry.launches[0].job_id, 5);
  EXPECT_EQ(retry.launches[1].job_id, 8);
  EXPECT_THAT(retry.new_specs, ElementsAre(3, 8));  // both new requests
  EXPECT_THAT(nodes, ElementsAre(7));
  // It fails again, and more comes: still all there, in order.
  q.Released({8, 1});
  q.PutBack(std::move(retry));
  q.Event(Ev(8, "started"));
  // Job 3's record left memory before the third try: its spec is not
  // asked of the store (which refuses one for a job not written).
  StoreWrite third = TakeWrite(q, &nodes, /*gone=*/{3});
  EXPECT_THAT(Kinds(third.events),
              ElementsAre("modified", "finished", "started"));
  EXPECT_THAT(third.new_specs, ElementsAre(8));
  // Still waiting after the failed writes, in the order released.
  EXPECT_THAT(q.TakeReleased(), ElementsAre(LaunchKey{5, 2}, LaunchKey{8, 1}));
}

TEST(CommitQueueTest, ARequestChangeOfAJobNoLongerInMemoryIsNotWritten) {
  CommitQueue q;
  q.Respecified(3);
  q.Respecified(4);
  std::vector<int64_t> nodes;
  // Job 4's record left memory (ended, written): only 3 is written, and a
  // spec is never asked of a job the write does not hold (the store
  // refuses that).
  StoreWrite write = TakeWrite(q, &nodes, /*gone=*/{4});
  EXPECT_THAT(write.new_specs, ElementsAre(3));
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace tiresias
