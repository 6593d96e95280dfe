// A stored job's state machine (LegalJobMove) and its event words.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "master/job_record.h"

namespace tiresias {
namespace {

using S = JobRecordState;
constexpr S kAll[] = {S::kPending, S::kRunning,   S::kPreempted, S::kFinished,
                      S::kFailed,  S::kCancelled, S::kStarting,  S::kTimeout};

TEST(JobStateMachine, TheTableOfLegalMoves) {
  // Hand-written: from -> the states it may move to.
  const std::set<std::pair<S, S>> legal = {
      {S::kPending, S::kPending},     {S::kPending, S::kRunning},
      {S::kPending, S::kPreempted},   {S::kPending, S::kFinished},
      {S::kPending, S::kFailed},      {S::kPending, S::kCancelled},
      {S::kPending, S::kTimeout},     {S::kRunning, S::kPreempted},
      {S::kRunning, S::kFinished},    {S::kRunning, S::kFailed},
      {S::kRunning, S::kCancelled},   {S::kRunning, S::kTimeout},
      {S::kPreempted, S::kPreempted}, {S::kPreempted, S::kRunning},
      {S::kPreempted, S::kPending},   {S::kPreempted, S::kFinished},
      {S::kPreempted, S::kFailed},    {S::kPreempted, S::kCancelled},
      {S::kPreempted, S::kTimeout},
  };
  for (S from : kAll) {
    for (S to : kAll) {
      EXPECT_EQ(LegalJobMove(from, to), legal.contains({from, to}))
          << JobRecordStateName(from) << " -> " << JobRecordStateName(to);
    }
  }
}

TEST(JobStateMachine, AnEndedJobNeverMovesAgain) {
  for (S end : {S::kFinished, S::kFailed, S::kCancelled, S::kTimeout}) {
    for (S to : kAll) {
      S state = end;
      absl::Status moved = MoveJobState(state, to, 42);
      EXPECT_EQ(moved.code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_EQ(state, end);
    }
  }
  S state = S::kFinished;
  EXPECT_EQ(MoveJobState(state, S::kRunning, 42).message(),
            "job 42: illegal move finished -> running");
}

TEST(JobStateMachine, ALegalMoveMoves) {
  S state = S::kPending;
  ASSERT_TRUE(MoveJobState(state, S::kRunning, 1).ok());
  EXPECT_EQ(state, S::kRunning);
  ASSERT_TRUE(MoveJobState(state, S::kPreempted, 1).ok());
  ASSERT_TRUE(MoveJobState(state, S::kRunning, 1).ok());
  ASSERT_TRUE(MoveJobState(state, S::kFinished, 1).ok());
  EXPECT_EQ(state, S::kFinished);
  // A running job does not go back to waiting as if it never ran.
  S running = S::kRunning;
  EXPECT_FALSE(MoveJobState(running, S::kPending, 1).ok());
}

TEST(EventKinds, OneDistinctLowercaseWordEach) {
  std::set<std::string> words;
  for (int k = 0; k <= static_cast<int>(EventKind::kTimeout); ++k) {
    const std::string word(EventKindName(static_cast<EventKind>(k)));
    EXPECT_NE(word, "?");
    for (char c : word) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '_') << word;
    EXPECT_TRUE(words.insert(word).second) << word;
  }
  EXPECT_EQ(EventKindName(EventKind::kRankFailed), "rank_failed");
  EXPECT_EQ(EventKindName(EventKind::kTimingOut), "timing_out");
  // A job's end event is the word of its final state.
  for (S end : {S::kFinished, S::kFailed, S::kCancelled, S::kTimeout}) {
    EXPECT_EQ(EventKindName(EndEventKind(end)), JobRecordStateName(end));
  }
}

}  // namespace
}  // namespace tiresias
