#include "api/api_json.h"

#include "api/job_text.h"
#include "gtest/gtest.h"

namespace tiresias::api {
namespace {

using nlohmann::json;

// Job 42, 2 GPUs: submitted at 1000, ran 1010..1040 (attempt 1), was
// preempted, resumed 1070..1100 (attempt 2) and finished at 1100 with exit
// code 0. Executed 30 + 30 = 60 s, so its wait is 1100 - 1000 - 60 = 40 s
// and its JCT 100 s, whatever the clock says afterwards.
v1::Job FinishedJob() {
  v1::Job job;
  job.set_id(42);
  job.mutable_spec()->set_name("resnet");
  job.mutable_spec()->set_user("alice");
  job.mutable_spec()->set_gpus(2);
  job.mutable_spec()->add_command("/usr/bin/python3");
  job.mutable_spec()->add_command("train.py");
  v1::EnvVar* var = job.mutable_spec()->add_env();
  var->set_key("SEED");
  var->set_value("7");
  v1::JobDependency* dep = job.mutable_spec()->add_dependencies();
  dep->set_kind(v1::DEPENDENCY_KIND_AFTER_NOT_OK);
  dep->set_job_id(41);
  job.set_state(v1::JOB_STATE_FINISHED);
  job.set_attempt(2);
  job.set_restarts(1);
  job.set_preemptions(1);
  job.set_attained_gpu_seconds(120);
  job.set_executed_seconds(60);
  job.set_total_executed_seconds(60);
  job.set_submit_time(1000);
  job.set_first_start_time(1010);
  job.set_end_time(1100);
  job.set_last_stop_time(1040);
  job.add_nodes("node-1");
  job.set_exit_code(0);
  auto event = [&job](int64_t seq, double t, const char* kind,
                      const char* detail) {
    v1::JobEvent* e = job.add_events();
    e->set_job_id(42);
    e->set_sequence(seq);
    e->set_time(t);
    e->set_kind(kind);
    e->set_detail(detail);
  };
  event(1, 1000, "submitted", "");
  event(2, 1010, "started", "attempt 1 on node-1 GPUs 0,1");
  event(3, 1040, "preempted", "attempt 1 on node-1 GPUs 0,1");
  event(4, 1070, "resumed", "attempt 12 on node-2 GPUs 1");
  event(5, 1100, "finished", "rank 0 exit code 0");
  return job;
}

TEST(ApiJsonTest, AFinishedJobHasNumbersWordsSecondsAndKeepsItsWait) {
  const json j = JobJson(FinishedJob(), JobView::kDetail, /*now=*/5000);
  EXPECT_EQ(j["id"], 42);
  EXPECT_TRUE(j["id"].is_number_integer());
  EXPECT_EQ(j["state"], "finished");
  EXPECT_EQ(j["name"], "resnet");
  EXPECT_EQ(j["user"], "alice");
  EXPECT_EQ(j["gpus"], 2);
  EXPECT_EQ(j["command"], json({"/usr/bin/python3", "train.py"}));
  EXPECT_EQ(j["env"], json({{"SEED", "7"}}));
  EXPECT_EQ(j["dependencies"],
            json::parse(R"([{"kind": "afternotok", "job_id": 41}])"));
  EXPECT_EQ(j["wait_s"], 40.0);  // not 5000 - 1000 - 60: it ended
  EXPECT_EQ(j["jct_s"], 100.0);
  EXPECT_EQ(j["executed_s"], 60.0);
  EXPECT_EQ(j["total_executed_s"], 60.0);
  EXPECT_EQ(j["attained_gpu_s"], 120.0);
  EXPECT_EQ(j["submit_time"], 1000.0);
  EXPECT_EQ(j["first_start_time"], 1010.0);
  EXPECT_EQ(j["end_time"], 1100.0);
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["time_limit_s"], nullptr);
  EXPECT_EQ(j["pending_reason"], nullptr);
  EXPECT_EQ(j["pending_reason_kind"], nullptr);
  EXPECT_EQ(j["profile"], nullptr);
  EXPECT_EQ(j["attempt"], 2);
  // No field of the old proto3 JSON survives.
  for (const char* old : {"spec", "attained_gpu_seconds", "executed_seconds",
                          "total_executed_seconds"}) {
    EXPECT_FALSE(j.contains(old)) << old;
  }
  ASSERT_EQ(j["events"].size(), 5u);
  EXPECT_EQ(j["events"][0]["attempt"], nullptr);  // "submitted"
  EXPECT_EQ(j["events"][1]["kind"], "started");
  EXPECT_EQ(j["events"][1]["attempt"], 1);
  EXPECT_EQ(j["events"][1]["job_id"], 42);
  EXPECT_EQ(j["events"][1]["sequence"], 2);
  EXPECT_EQ(j["events"][1]["time"], 1010.0);
  EXPECT_EQ(j["events"][1]["detail"], "attempt 1 on node-1 GPUs 0,1");
  EXPECT_EQ(j["events"][2]["attempt"], 1);
  EXPECT_EQ(j["events"][3]["attempt"], 12);
  EXPECT_EQ(j["events"][4]["attempt"], nullptr);
}

TEST(ApiJsonTest, AListingLeavesOutEnvironmentAndEvents) {
  const json j = JobJson(FinishedJob(), JobView::kList, 5000);
  EXPECT_FALSE(j.contains("env"));
  EXPECT_FALSE(j.contains("events"));
  EXPECT_EQ(j["wait_s"], 40.0);
  v1::ListJobsResponse page;
  *page.add_jobs() = FinishedJob();
  const json list = JobListJson(page.jobs(), 5000);
  ASSERT_EQ(list["jobs"].size(), 1u);
  EXPECT_EQ(list["jobs"][0], j);
}

// Job 7, 4 GPUs, submitted at 2000: pending at 2030 (waited 30 s), then
// running since 2030 and seen at 2050 having run 20 s (wait still 30 s).
TEST(ApiJsonTest, AnUnfinishedJobWaitsUntilNowLessWhatItRan) {
  v1::Job job;
  job.set_id(7);
  job.mutable_spec()->set_gpus(4);
  job.mutable_spec()->set_time_limit_seconds(3600);
  job.set_state(v1::JOB_STATE_PENDING);
  job.set_submit_time(2000);
  job.set_last_stop_time(2000);
  job.set_pending_reason("needs 4 GPUs, 2 free");
  job.set_pending_reason_kind(v1::PENDING_REASON_KIND_RESOURCES);
  json j = JobJson(job, JobView::kList, 2030);
  EXPECT_EQ(j["state"], "pending");
  EXPECT_EQ(j["wait_s"], 30.0);
  EXPECT_EQ(j["first_start_time"], nullptr);
  EXPECT_EQ(j["end_time"], nullptr);
  EXPECT_EQ(j["jct_s"], nullptr);
  EXPECT_EQ(j["exit_code"], nullptr);
  EXPECT_EQ(j["time_limit_s"], 3600.0);
  EXPECT_EQ(j["pending_reason"], "needs 4 GPUs, 2 free");
  EXPECT_EQ(j["pending_reason_kind"], "resources");

  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_first_start_time(2030);
  job.set_total_executed_seconds(20);
  job.clear_pending_reason();
  job.clear_pending_reason_kind();
  j = JobJson(job, JobView::kList, 2050);
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["wait_s"], 30.0);
  EXPECT_EQ(JobWaitSeconds(job, 2050), 30.0);
  // A clock behind the master's never makes a wait negative.
  EXPECT_EQ(JobWaitSeconds(job, 2010), 0.0);
}

TEST(ApiJsonTest, ANodeFilterIsAnObjectOrNull) {
  v1::Job job = FinishedJob();
  EXPECT_TRUE(JobJson(job, JobView::kList, 5000)["node_filter"].is_null());
  job.mutable_spec()->set_gpu_type("a100");
  job.mutable_spec()->add_exclude("n3");
  EXPECT_EQ(JobJson(job, JobView::kList, 5000)["node_filter"],
            json::parse(R"({"gpu_type": "a100", "constraint": null,
                            "nodelist": [], "exclude": ["n3"]})"));
  EXPECT_EQ(NodeFilterText(job.spec()), "GPU type a100, not n3");
  EXPECT_TRUE(JobJson(job, JobView::kList, 5000)["cpus_per_gpu"].is_null());
  job.mutable_spec()->set_cpus_per_gpu(4);
  job.mutable_spec()->set_mem_per_gpu_mib(1536);
  EXPECT_EQ(JobJson(job, JobView::kList, 5000)["mem_per_gpu_mib"], 1536);
  EXPECT_EQ(NodeFilterText(job.spec()),
            "GPU type a100, not n3, 4 CPUs per GPU, 1536M memory per GPU");
  EXPECT_EQ(NodeFilterText(v1::JobSpec()), "");
}

TEST(ApiJsonTest, EveryStateIsALowerCaseWord) {
  EXPECT_EQ(JobStateWord(v1::JOB_STATE_STARTING), "starting");
  EXPECT_EQ(JobStateWord(v1::JOB_STATE_PREEMPTED), "preempted");
  EXPECT_EQ(JobStateWord(v1::JOB_STATE_TIMEOUT), "timeout");
  EXPECT_EQ(JobStateWord(v1::JOB_STATE_CANCELLED), "cancelled");
  EXPECT_EQ(JobStateWord(static_cast<v1::JobState>(99)), "state 99");
  EXPECT_EQ(NodeStateWord(v1::NODE_STATE_DOWN), "down");
  EXPECT_EQ(PendingReasonWord(v1::PENDING_REASON_KIND_NEXT_PASS), "next_pass");
  EXPECT_EQ(PendingReasonWord(v1::PENDING_REASON_KIND_UNSPECIFIED), "");
}

TEST(ApiJsonTest, NodesStatusAndAnswersUseTheSameWords) {
  v1::Node node;
  node.set_id(3);
  node.set_name("node-1");
  node.set_address("10.0.0.1:7000");
  node.set_gpus(4);
  node.set_gpus_free(1);
  node.set_state(v1::NODE_STATE_UP);
  node.set_last_heartbeat_time(1500.5);
  node.add_job_ids(9);
  node.set_gpu_model("NVIDIA H200");
  node.add_features("ib");
  EXPECT_EQ(NodeJson(node), json::parse(R"({"id": 3, "name": "node-1",
              "address": "10.0.0.1:7000", "state": "up", "gpus": 4,
              "gpus_free": 1, "drained": false, "drain_reason": null,
              "gpu_model": "NVIDIA H200", "features": ["ib"],
              "cpus": 0, "memory_mib": 0, "spare_cpus": 0,
              "spare_memory_mib": 0, "spare_cpus_free": 0,
              "spare_memory_mib_free": 0,
              "last_heartbeat_time": 1500.5, "job_ids": [9]})"));
  v1::DrainNodeResponse drain;
  *drain.mutable_node() = node;
  drain.mutable_node()->set_drained(true);
  drain.mutable_node()->set_drain_reason("reboot");
  drain.add_preempted_job_ids(9);
  const json d = DrainNodeJson(drain);
  EXPECT_EQ(d["node"]["drain_reason"], "reboot");
  EXPECT_EQ(d["preempted_job_ids"], json({9}));

  v1::ClusterStatus status;
  status.set_policy("tiresias-l");
  (*status.mutable_jobs())["pending"] = 1;
  status.mutable_pack_limit()->set_value(0.6);
  const json s = ClusterStatusJson(status);
  EXPECT_EQ(s["jobs"]["pending"], 1);  // a number, not "1"
  EXPECT_EQ(s["pack_limit"]["value"], 0.6);
  EXPECT_EQ(s["leader"], nullptr);
  v1::MasterLeader* leader = status.mutable_leader();
  leader->set_epoch(77);
  leader->add_standbys("12@b");
  v1::StoreHealth* store = leader->mutable_store();
  store->set_kind("etcd");
  store->set_where("etcd://a:1,b:2/t/");
  store->set_log_index(40);
  store->set_checked(1500.5);
  v1::StoreMember* up = store->add_members();
  up->set_endpoint("a:1");
  up->set_in_use(true);
  up->set_version("3.4.23");
  up->set_db_size(20480);
  up->set_raft_leader(true);
  up->set_has_leader(true);
  up->set_raft_index(99);
  up->add_alarms("NOSPACE");
  store->add_members()->set_endpoint("b:2");
  store->mutable_members(1)->set_error("connection refused");
  EXPECT_EQ(ClusterStatusJson(status)["leader"]["store"],
            json::parse(R"({"kind": "etcd", "where": "etcd://a:1,b:2/t/",
              "log_index": 40, "checked": 1500.5, "members": [
              {"endpoint": "a:1", "in_use": true, "error": null,
               "version": "3.4.23", "db_size": 20480, "raft_leader": true,
               "has_leader": true, "raft_index": 99, "alarms": ["NOSPACE"]},
              {"endpoint": "b:2", "in_use": false,
               "error": "connection refused", "version": "", "db_size": 0,
               "raft_leader": false, "has_leader": false, "raft_index": 0,
               "alarms": []}]})"));
  EXPECT_EQ(ClusterStatusJson(status)["leader"]["standbys"], json({"12@b"}));

  v1::SubmitJobsResponse submitted;
  submitted.add_job_ids(4);
  submitted.add_job_ids(5);
  EXPECT_EQ(SubmitJson(submitted),
            json::parse(R"({"job_ids": [4, 5], "existing": false})"));
  v1::SubmitJobResponse one;
  one.set_job_id(6);
  EXPECT_EQ(SubmitJson(one),
            json::parse(R"({"job_id": 6, "existing": false})"));

  v1::UpdateJobsResponse update;
  v1::JobActionResult* held = update.add_results();
  held->set_job_id(1);
  held->set_state(v1::JOB_STATE_PENDING);
  held->set_held(true);
  v1::JobActionResult* refused = update.add_results();
  refused->set_job_id(2);
  refused->set_code(9);
  refused->set_error("job 2 is running");
  EXPECT_EQ(UpdateJobsJson(update), json::parse(R"({"results": [
    {"job_id": 1, "ok": true, "code": 0, "error": null, "state": "pending",
     "held": true, "unchanged": false},
    {"job_id": 2, "ok": false, "code": 9, "error": "job 2 is running",
     "state": null, "held": false, "unchanged": false}]})"));
}

TEST(ApiJsonTest, DumpReplacesTextThatIsNotUtf8) {
  EXPECT_EQ(Dump(json{{"name", std::string("a\xff")}}, true),
            "{\"name\":\"a\xEF\xBF\xBD\"}");
}

}  // namespace
}  // namespace tiresias::api
