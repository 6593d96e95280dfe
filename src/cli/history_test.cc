#include "cli/history.h"

#include <stdlib.h>
#include <time.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tiresias::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
    // Job 7: submitted at 1000, started at 1060, ran 100 s in all, ended at
    // 1300 (so it waited 200 s), exit 3 on two nodes; job 8: cancelled
    // before it started, its name with a comma and a quote.
    v1::Job a;
    a.set_id(7);
    a.mutable_spec()->set_name("train");
    a.mutable_spec()->set_user("alice");
    a.mutable_spec()->set_gpus(4);
    a.set_state(v1::JOB_STATE_FAILED);
    a.set_exit_code(3);
    a.set_submit_time(1000);
    a.set_first_start_time(1060);
    a.set_end_time(1300);
    a.set_total_executed_seconds(100);
    a.set_preemptions(1);
    a.add_nodes("n1");
    a.add_nodes("n2");
    v1::Job b;
    b.set_id(8);
    b.mutable_spec()->set_name("a,\"b\"");
    b.mutable_spec()->set_user("bob");
    b.mutable_spec()->set_gpus(1);
    b.set_state(v1::JOB_STATE_CANCELLED);
    b.set_submit_time(1100);
    b.set_end_time(1150);
    jobs_ = {a, b};
  }
  std::vector<v1::Job> jobs_;
};

TEST_F(HistoryTest, CsvQuotesAndComputesWaitAndRun) {
  auto fields = ParseHistoryFields("id,name,state,exit,start,end,wait,run,nodes");
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_EQ(FormatHistory(jobs_, *fields, HistoryFormat::kCsv),
            "JOBID,NAME,STATE,EXIT,START,END,WAIT,RUN,NODES\n"
            "7,train,failed,3,1970-01-01 00:17:40,1970-01-01 00:21:40,"
            "0:03:20,0:01:40,\"n1,n2\"\n"
            "8,\"a,\"\"b\"\"\",cancelled,-,-,1970-01-01 00:19:10,0:00:50,"
            "0:00:00,-\n");
}

// Each field under its key in the job's JSON (docs/json.md), with the
// value `tiresias job --json` shows.
TEST_F(HistoryTest, JsonHasTheJobJsonKeysRawNumbersAndNulls) {
  auto fields = ParseHistoryFields("id,state,exit,start,wait,run,nodes");
  ASSERT_TRUE(fields.ok());
  const auto doc = nlohmann::json::parse(
      FormatHistory(jobs_, *fields, HistoryFormat::kJson));
  ASSERT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(doc["jobs"][0],
            nlohmann::json::parse(R"({"id": 7, "state": "failed",
              "exit_code": 3, "first_start_time": 1060.0, "wait_s": 200.0,
              "total_executed_s": 100.0, "nodes": ["n1", "n2"]})"));
  EXPECT_TRUE(doc["jobs"][1]["exit_code"].is_null());
  EXPECT_TRUE(doc["jobs"][1]["first_start_time"].is_null());
  EXPECT_EQ(doc["jobs"][1]["wait_s"], 50.0);  // 1150 - 1100, never ran
}

TEST_F(HistoryTest, TableColumnsAlignAndTextIsPrintable) {
  jobs_[1].mutable_spec()->set_name("evil\x1b[2Jname");
  auto fields = ParseHistoryFields("id,name,gpus");
  ASSERT_TRUE(fields.ok());
  const std::string table = FormatHistory(jobs_, *fields, HistoryFormat::kTable);
  EXPECT_THAT(table, HasSubstr("JOBID  NAME"));
  EXPECT_THAT(table, HasSubstr("7      train"));
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
}

TEST_F(HistoryTest, TheWindowAndStatesSelect) {
  const std::vector<v1::JobState> any;
  EXPECT_TRUE(InHistory(jobs_[0], 1300, 1301, any));   // ended at 1300
  EXPECT_FALSE(InHistory(jobs_[0], 1000, 1300, any));  // until is open
  EXPECT_FALSE(InHistory(jobs_[0], 0, 2000, {v1::JOB_STATE_FINISHED}));
  EXPECT_TRUE(InHistory(jobs_[1], 0, 2000,
                        {v1::JOB_STATE_FINISHED, v1::JOB_STATE_CANCELLED}));
  v1::Job running = jobs_[0];
  running.set_state(v1::JOB_STATE_RUNNING);
  EXPECT_FALSE(InHistory(running, 0, 2000, any));
}

// `jobs --format` lists unfinished jobs: a waiting job's wait runs to
// `now`, its reason is shown, and a job of an array names it. Job 9:
// submitted at 2000, ran 30 s, waits at 2100 for GPUs, so it has waited
// 2100 - 2000 - 30 = 70 s; index 4 of array 5. The ended job 7 keeps its
// 200 s whatever the clock.
TEST_F(HistoryTest, UnfinishedJobsWaitUntilNowAndShowTheirReason) {
  v1::Job c;
  c.set_id(9);
  c.set_state(v1::JOB_STATE_PREEMPTED);
  c.set_submit_time(2000);
  c.set_total_executed_seconds(30);
  c.set_pending_reason("needs 4 GPUs on one server, largest free block is 3");
  c.set_array_id(5);
  c.set_array_index(4);
  c.set_held(true);
  const std::vector<v1::Job> jobs = {jobs_[0], c};
  auto fields = ParseHistoryFields("id,state,held,wait,array,index,reason");
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_EQ(FormatHistory(jobs, *fields, HistoryFormat::kCsv, 2100.0),
            "JOBID,STATE,HELD,WAIT,ARRAY,INDEX,REASON\n"
            "7,failed,no,0:03:20,-,-,-\n"
            "9,preempted,yes,0:01:10,5,4,"
            "\"needs 4 GPUs on one server, largest free block is 3\"\n");
  const auto doc = nlohmann::json::parse(
      FormatHistory(jobs, *fields, HistoryFormat::kJson, 2100.0));
  EXPECT_EQ(doc["jobs"][1]["wait_s"], 70.0);
  EXPECT_EQ(doc["jobs"][1]["array_id"], 5);
  EXPECT_EQ(doc["jobs"][1]["array_index"], 4);
  EXPECT_TRUE(doc["jobs"][1]["held"].get<bool>());
  EXPECT_TRUE(doc["jobs"][0]["array_id"].is_null());
  EXPECT_TRUE(doc["jobs"][0]["pending_reason"].is_null());
  EXPECT_EQ(doc["jobs"][0]["wait_s"], 200.0);
}

TEST_F(HistoryTest, AnUnknownFieldIsNamedWithTheKnownOnes) {
  auto fields = ParseHistoryFields("id,stat");
  ASSERT_FALSE(fields.ok());
  EXPECT_THAT(std::string(fields.status().message()),
              HasSubstr("--format: unknown field \"stat\"; expected some of "
                        "id,name,user,state,"));
  EXPECT_THAT(*ParseHistoryFields(kDefaultHistoryFields),
              ElementsAre("id", "name", "user", "state", "exit", "gpus",
                          "submit", "end", "wait", "run", "preemptions"));
}

}  // namespace
}  // namespace tiresias::cli
