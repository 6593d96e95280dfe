// The master's metrics: MasterState::SnapshotMetrics driven through a job's
// life (fake clock, real SQLite), the Prometheus rendering, and /metrics and
// /healthz served over real HTTP on loopback.
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/http_server.h"
#include "master/metrics.h"
#include "master/state_dir_lead.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;
using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_PREEMPTED;
using v1::TASK_STATE_RUNNING;

class MasterMetricsTest : public MasterFixture {
 protected:
  MasterState::Metrics Snapshot() {
    auto m = master_->SnapshotMetrics();
    EXPECT_TRUE(m.ok()) << m.status();
    return m.value_or(MasterState::Metrics{});
  }
  static int64_t Jobs(const MasterState::Metrics& m, JobRecordState s) {
    auto it = m.jobs_by_state.find(s);
    return it == m.jobs_by_state.end() ? -1 : it->second;
  }
};

TEST_F(MasterMetricsTest, FollowJobsThroughTheirLives) {
  Open();
  MasterState::Metrics m = Snapshot();
  EXPECT_EQ(m.jobs_by_state.size(), 8u);  // every state, zeros included
  EXPECT_EQ(m.jobs_submitted, 0);
  EXPECT_EQ(m.nodes_up, 0);

  const int64_t node = Register("n1", 2);
  const JobId a = Submit(Spec(1));
  const JobId b = Submit(Spec(1));
  Submit(Spec(2));  // waits behind them
  Pass();
  Beat(node);  // takes the two StartTasks
  m = Snapshot();
  EXPECT_EQ(m.jobs_submitted, 3);
  EXPECT_EQ(Jobs(m, JobRecordState::kStarting), 2);
  EXPECT_EQ(Jobs(m, JobRecordState::kPending), 1);
  EXPECT_EQ(m.waiting_by_queue, (std::map<int, int64_t>{{0, 1}}));
  EXPECT_EQ(m.nodes_up, 1);
  EXPECT_EQ(m.gpus_up, 2);
  EXPECT_EQ(m.gpus_busy, 2);
  EXPECT_GE(m.passes, 1);

  Beat(node, {Task(a, 1, 0, TASK_STATE_RUNNING, {0}),
              Task(b, 1, 0, TASK_STATE_RUNNING, {1})});
  m = Snapshot();
  EXPECT_EQ(Jobs(m, JobRecordState::kRunning), 2);
  EXPECT_EQ(Jobs(m, JobRecordState::kStarting), 0);

  const MasterState::CommitStats before = m.commits;
  Beat(node, {Task(a, 1, 0, TASK_STATE_EXITED, {0}, 0),
              Task(b, 1, 0, TASK_STATE_EXITED, {1}, 3)});
  m = Snapshot();
  // The two ends were written in one transaction the heartbeat led, and
  // answered after it.
  EXPECT_EQ(m.commits.writes, before.writes + 1);
  EXPECT_GE(m.commits.write_seconds, before.write_seconds);
  EXPECT_EQ(m.commits.reports, before.reports + 1);
  EXPECT_EQ(m.commits.report_commits, before.report_commits + 1);
  EXPECT_EQ(Jobs(m, JobRecordState::kFinished), 1);
  EXPECT_EQ(Jobs(m, JobRecordState::kFailed), 1);
  EXPECT_EQ(Jobs(m, JobRecordState::kRunning), 0);
  EXPECT_EQ(m.gpus_busy, 0);
  EXPECT_GT(m.last_event_sequence, 0);
}

TEST(PrometheusTest, RendersEveryFamilyWithHelpAndType) {
  MasterState::Metrics m;
  m.jobs_by_state = {{JobRecordState::kPending, 2},
                     {JobRecordState::kRunning, 1}};
  m.jobs_submitted = 9;
  m.preemptions = 4;
  m.waiting_by_queue = {{0, 1}, {1, 1}};
  m.nodes_up = 2;
  m.nodes_down = 1;
  m.gpus_up = 8;
  m.gpus_busy = 3;
  m.passes = 5;
  m.pass_seconds = 0.25;
  m.commits = {
      .writes = 90, .write_seconds = 0.5, .reports = 120, .report_commits = 60};
  m.last_event_sequence = 40;
  m.placement = "profiled";
  m.pack_limit = 0.25;
  m.pack_limit_learning = true;
  m.pack_limit_fit = "fitted";
  m.pack_limit_runs = 6;
  m.pack_limit_samples = 4;
  const std::string text = RenderPrometheusMetrics(m);
  for (const char* line :
       {"# TYPE tiresias_jobs gauge\n",
        "tiresias_jobs{state=\"pending\"} 2\n",
        "tiresias_jobs{state=\"running\"} 1\n",
        "# TYPE tiresias_jobs_submitted_total counter\n",
        "tiresias_jobs_submitted_total 9\n",
        "tiresias_job_preemptions_total 4\n",
        "tiresias_waiting_jobs{queue=\"1\"} 1\n",
        "tiresias_nodes{state=\"down\"} 1\n",
        "tiresias_gpus{state=\"busy\"} 3\n",
        "tiresias_gpus{state=\"free\"} 5\n",
        "tiresias_scheduling_passes_total 5\n",
        "tiresias_scheduling_pass_seconds_total 0.25\n",
        "tiresias_events_total 40\n",
        "# TYPE tiresias_store_commits_total counter\n",
        "tiresias_store_commits_total 90\n",
        "tiresias_store_commit_seconds_total 0.5\n",
        "tiresias_heartbeats_committed_total 120\n",
        "tiresias_heartbeat_commits_total 60\n",
        "tiresias_pack_limit{placement=\"profiled\",learning=\"true\","
        "fit=\"fitted\"} 0.25\n",
        "tiresias_pack_limit_runs 6\n",
        "tiresias_pack_limit_samples 4\n"}) {
    EXPECT_THAT(text, HasSubstr(line));
  }
  // Every sample belongs to a family announced before it.
  std::string family;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# TYPE ")) {
      family = std::string(line.substr(7, line.find(' ', 7) - 7));
    } else if (!absl::StartsWith(line, "# HELP ")) {
      EXPECT_TRUE(absl::StartsWith(line, family)) << line;
    }
  }
}

TEST(PrometheusTest, RendersEachUsersStreams) {
  // Both families even with no user; a user with none open or none
  // refused is left out of that family; names are quoted.
  EXPECT_EQ(RenderUserStreams({}),
            "# HELP tiresias_user_streams Streams a user holds open on the "
            "master (event watches and attached sessions), against "
            "--max-streams-per-user.\n"
            "# TYPE tiresias_user_streams gauge\n"
            "# HELP tiresias_user_streams_refused_total Streams refused "
            "because their user held --max-streams-per-user.\n"
            "# TYPE tiresias_user_streams_refused_total counter\n");
  const std::string page =
      RenderUserStreams({{"alice", {.open = 2}},
                         {"bob", {.open = 0, .refused = 5}},
                         {"we\"ird", {.open = 1, .refused = 1}}});
  EXPECT_THAT(page, HasSubstr("gauge\n"
                              "tiresias_user_streams{user=\"alice\"} 2\n"
                              "tiresias_user_streams{user=\"we\\\"ird\"} 1\n"
                              "# HELP"));
  EXPECT_TRUE(absl::EndsWith(
      page,
      "counter\n"
      "tiresias_user_streams_refused_total{user=\"bob\"} 5\n"
      "tiresias_user_streams_refused_total{user=\"we\\\"ird\"} 1\n"));
}

// A master that leads its state dir (StateDirLead) puts its epoch in every
// answer to agents, and shows it with the standbys in the metrics.
TEST_F(MasterMetricsTest, TheLeadAndItsEpochAreAnsweredAndExported) {
  ASSERT_TRUE(std::filesystem::create_directories(options_.state_dir));
  {  // an earlier lead: this one's epoch is 2
    auto first = StateDirLead::Join(options_.state_dir);
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_TRUE(*(*first)->TryLead());
  }
  auto lead = StateDirLead::Join(options_.state_dir);
  ASSERT_TRUE(lead.ok()) << lead.status();
  auto led = (*lead)->TryLead();
  ASSERT_TRUE(led.ok() && *led);
  options_.lead = std::shared_ptr<StateDirLead>(std::move(*lead));
  Open();
  EXPECT_EQ(master_->epoch(), 2u);
  v1::RegisterResponse registered;
  const int64_t node = Register("n1", 2, {}, &registered);
  EXPECT_EQ(registered.epoch(), 2u);
  EXPECT_EQ(Beat(node).epoch(), 2u);
  const MasterState::Metrics m = Snapshot();
  ASSERT_TRUE(m.leader.has_value());
  EXPECT_EQ(m.leader->epoch, 2u);
  EXPECT_EQ(m.leader->pid, getpid());
  EXPECT_TRUE(m.standbys.empty());
  const std::string text = RenderPrometheusMetrics(m);
  EXPECT_THAT(text, HasSubstr("\ntiresias_master_leader 1\n"));
  EXPECT_THAT(text, HasSubstr("\ntiresias_master_epoch 2\n"));
  EXPECT_THAT(text, HasSubstr("\ntiresias_master_standbys 0\n"));
}

TEST(StoreMetricsTest, EachEtcdMemberIsUpOnlyInAQuorum) {
  MasterState::Metrics m;
  m.leader = LeaderRecord{.epoch = 900, .pid = 1, .host = "h"};
  m.store.kind = "sqlite";
  EXPECT_THAT(RenderPrometheusMetrics(m),
              ::testing::Not(HasSubstr("tiresias_store_log_index")));
  m.store.kind = "etcd";
  m.store.log_index = 41;
  m.store.members = {
      {.endpoint = "a:1",
       .in_use = true,
       .db_size = 4096,
       .raft_leader = true,
       .has_leader = true},
      {.endpoint = "b:2", .error = "connection refused"},
      {.endpoint = "c\"3", .db_size = 8192, .has_leader = false},
      {.endpoint = "d:4", .has_leader = true, .alarms = {"NOSPACE"}}};
  const std::string text = RenderPrometheusMetrics(m);
  EXPECT_THAT(text, HasSubstr("\ntiresias_master_epoch 900\n"));
  EXPECT_THAT(text, HasSubstr("\ntiresias_store_log_index 41\n"));
  EXPECT_THAT(text,
              HasSubstr("\ntiresias_store_member_up{member=\"a:1\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("\ntiresias_store_member_up{member=\"b:2\"} 0\n"));
  // Answering without a quorum is not up; the label is quoted.
  EXPECT_THAT(text,
              HasSubstr("\ntiresias_store_member_up{member=\"c\\\"3\"} 0\n"));
  EXPECT_THAT(
      text,
      HasSubstr("\ntiresias_store_member_db_bytes{member=\"a:1\"} 4096\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("db_bytes{member=\"b:2\"}")));
  // A member raising an alarm (its disk full) is not up either.
  EXPECT_THAT(text,
              HasSubstr("\ntiresias_store_member_up{member=\"d:4\"} 0\n"));
}

TEST_F(MasterMetricsTest, AMasterWithoutALeadAnswersEpochZero) {
  Open();
  v1::RegisterResponse registered;
  Register("n1", 2, {}, &registered);
  EXPECT_EQ(registered.epoch(), 0u);
  const MasterState::Metrics m = Snapshot();
  EXPECT_FALSE(m.leader.has_value());
  EXPECT_THAT(RenderPrometheusMetrics(m),
              ::testing::Not(HasSubstr("tiresias_master_epoch")));
}

TEST_F(MasterMetricsTest, ServedOverHttp) {
  Open();
  Submit(Spec(1));
  ASSERT_TRUE(
      master_
          ->SetVc(VcRecord{.name = "vision", .quota = "1x1", .members = {"*"}},
                  true)
          .ok());
  // What the state does not hold (the gRPC service's streams) is added.
  auto http = MasterHttpServer::Start(
      master_.get(), "127.0.0.1:0",
      {.more_metrics = [] { return std::string("tiresias_more 1\n"); }});
  ASSERT_TRUE(http.ok()) << http.status();
  httplib::Client client("127.0.0.1", (*http)->port());
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->get_header_value("Content-Type"),
              HasSubstr("version=0.0.4"));
  EXPECT_THAT(res->body, HasSubstr("tiresias_jobs{state=\"pending\"} 1\n"));
  EXPECT_THAT(res->body,
              HasSubstr("tiresias_vc_quota_gpus{vc=\"vision\"} 1\n"));
  EXPECT_TRUE(absl::EndsWith(res->body, "\ntiresias_more 1\n"));
  res = client.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  // The fixture's master runs without authentication (--insecure).
  EXPECT_EQ(res->body, "ok (insecure: no TLS, no authentication)\n");
  res = client.Get("/nothing-here");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(client.Get("/metrics")->status, 200);  // still serving

  // A second server on the same port, and a malformed address, are errors.
  auto clash = MasterHttpServer::Start(
      master_.get(), absl::StrCat("127.0.0.1:", (*http)->port()));
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(MasterHttpServer::Start(master_.get(), "no-port").status().code(),
            absl::StatusCode::kInvalidArgument);
  (*http)->Shutdown();
  EXPECT_FALSE(client.Get("/metrics"));  // gone
}

// --metrics-token-required: /metrics answers any valid token, and only a
// valid one (a revoked one no longer); /healthz stays open for probes.
TEST_F(MasterMetricsTest, MetricsNeedAValidTokenWhenRequired) {
  options_.require_auth = true;
  Open();
  Submit(Spec(1));
  auto token =
      master_->CreateToken("carol", /*admin=*/false, std::nullopt, "scraper");
  ASSERT_TRUE(token.ok()) << token.status();
  auto http = MasterHttpServer::Start(master_.get(), "127.0.0.1:0",
                                      {.metrics_token_required = true});
  ASSERT_TRUE(http.ok()) << http.status();
  httplib::Client client("127.0.0.1", (*http)->port());
  for (const httplib::Headers& headers :
       {httplib::Headers{},
        httplib::Headers{{"Authorization", "Bearer tsk_1_nothex"}},
        httplib::Headers{{"Authorization", "Token " + token->text}}}) {
    auto res = client.Get("/metrics", headers);
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 401);
    EXPECT_EQ(res->get_header_value("WWW-Authenticate"),
              "Bearer realm=\"tiresias\"");
    EXPECT_THAT(res->body, ::testing::Not(HasSubstr("tiresias_jobs")));
  }
  auto res =
      client.Get("/metrics", {{"Authorization", "bearer " + token->text}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->body, HasSubstr("tiresias_jobs{state=\"pending\"} 1\n"));
  ASSERT_TRUE(master_->RevokeToken(token->id).ok());
  res = client.Get("/metrics", {{"Authorization", "Bearer " + token->text}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_THAT(res->body, HasSubstr("was revoked"));
  EXPECT_THAT(res->body, ::testing::Not(HasSubstr(token->text)));
  res = client.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "ok\n");
}

TEST_F(MasterMetricsTest, ShutdownRightAfterStartReturns) {
  Open();
  for (int i = 0; i < 20; ++i) {  // cpp-httplib ignored an early stop()
    auto http = MasterHttpServer::Start(master_.get(), "127.0.0.1:0");
    ASSERT_TRUE(http.ok()) << http.status();
    (*http)->Shutdown();
  }
}

TEST_F(MasterMetricsTest, CountsSurviveARestart) {
  Open();
  const int64_t node = Register("n1", 1);
  const JobId a = Submit(Spec(1));
  Submit(Spec(1));
  Pass();
  Beat(node);
  Beat(node, {Task(a, 1, 0, TASK_STATE_EXITED, {0}, 0)});
  MasterState::Metrics before = Snapshot();
  EXPECT_EQ(Jobs(before, JobRecordState::kFinished), 1);
  EXPECT_EQ(Jobs(before, JobRecordState::kPending) +
                Jobs(before, JobRecordState::kStarting),
            1);
  master_.reset();
  Open();
  MasterState::Metrics after = Snapshot();
  EXPECT_EQ(after.jobs_submitted, 2);
  EXPECT_EQ(Jobs(after, JobRecordState::kFinished), 1);
  EXPECT_EQ(Jobs(after, JobRecordState::kPending), 1);
  EXPECT_EQ(after.preemptions, before.preemptions);
}

// Ended jobs' counts come from the store at start-up, unfinished ones from
// memory: a job preempted once and still waiting is counted once, not in
// both.
TEST_F(MasterMetricsTest, PreemptionsOfAWaitingJobCountOnceAfterARestart) {
  options_.policy = "las";
  Open();
  const int64_t node = Register("n1", 1);
  const JobId a = Submit(Spec(1));
  Pass();
  Beat(node);  // a's StartTask
  Beat(node, {Task(a, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  clock_.Advance(Seconds{10});
  const JobId b = Submit(Spec(1));
  Pass();  // a preempted for b
  Beat(node, {Task(a, 1, 0, TASK_STATE_PREEMPTED, {0}, 143)});  // b starts
  Beat(node, {Task(b, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1010.0)});
  Beat(node, {Task(b, 1, 0, TASK_STATE_EXITED, {0}, 0)});
  const MasterState::Metrics before = Snapshot();
  EXPECT_EQ(Jobs(before, JobRecordState::kFinished), 1);
  EXPECT_EQ(Jobs(before, JobRecordState::kPreempted), 1);
  EXPECT_EQ(before.preemptions, 1);
  master_.reset();
  Open();
  const MasterState::Metrics after = Snapshot();
  EXPECT_EQ(after.jobs_submitted, 2);
  EXPECT_EQ(Jobs(after, JobRecordState::kFinished), 1);
  EXPECT_EQ(Jobs(after, JobRecordState::kPreempted), 1);
  EXPECT_EQ(after.preemptions, 1);
}

}  // namespace
}  // namespace tiresias::master_testing
