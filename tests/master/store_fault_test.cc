// A store that fails on purpose (issue 22). A scenario of submits, a
// scheduling pass releasing launches, task ends reported by heartbeats, a
// cancel, a drain with preemption, a resume and a master restart is run
// once with no fault, counting the store writes it makes; then once per
// write with that write failed (FaultStore, as a full disk would). For each
// failure:
//   - the call whose write failed answers with the store's error;
//   - whatever the master acknowledges (a job id, a task end in a
//     heartbeat answer, a cancel, a drain) is in the store at that moment,
//     and no start enters a node's desired state before its launch is;
//   - a crash right after the failure leaves exactly what the writes
//     before it stored (or, for a lost acknowledgement, those and it);
//   - clients and agents that retry the failed call end with the same
//     store as the run with no fault.
// MasterState with a fake clock and a real SQLite file; agents simulated by
// hand (they start what their desired state says, stop what it stops, and
// report ends until acknowledged).
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/fault_store.h"
#include "master/master_state.h"
#include "master/sqlite_store.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;
using Effect = StoreFaults::Effect;
using TaskKey = std::tuple<JobId, int, int>;

std::string OptSeconds(const std::optional<Seconds>& t) {
  return t ? absl::StrCat(t->count()) : "-";
}

// Everything the store holds that the master wrote, as text (the cluster id
// aside: each state dir has its own).
std::string Dump(const Store& store) {
  std::string out;
  auto page = store.QueryJobs({});
  if (!page.ok()) return absl::StrCat("QueryJobs: ", page.status().ToString());
  for (const JobRecord& j : page->jobs) {
    absl::StrAppend(
        &out, "job ", j.id, " ", j.spec.name, " ",
        std::string(JobRecordStateName(j.state)), " q", j.queue, " att",
        j.attempt, " nodes[", absl::StrJoin(j.nodes, ","), "] exit",
        j.exit_code ? absl::StrCat(*j.exit_code) : "-", " pre", j.preemptions,
        " re", j.restarts, " fs", j.failed_starts, " cancel",
        j.cancel_requested, " held", j.held, " exec", j.executed.count(),
        " total", j.total_executed.count(), " first",
        OptSeconds(j.first_start_time), " end", OptSeconds(j.end_time), " stop",
        j.last_stop_time.count(), " att_gpu_s", j.attained_gpu_seconds, "\n");
    for (int a = 1; a <= j.attempt; ++a) {
      auto nodes = store.LaunchNodes(j.id, a);
      absl::StrAppend(
          &out, "  launch ", a, " [",
          nodes.ok() ? absl::StrJoin(*nodes, ",") : nodes.status().ToString(),
          "]\n");
    }
  }
  auto events = store.EventsAfter(0, 100000);
  if (!events.ok()) return absl::StrCat("Events: ", events.status().ToString());
  for (const JobEvent& e : *events) {
    absl::StrAppend(&out, "event ", e.sequence, " job ", e.job_id, " ",
                    e.time.count(), " ", e.kind, ": ", e.detail, "\n");
  }
  auto nodes = store.ListNodes();
  if (!nodes.ok()) return absl::StrCat("Nodes: ", nodes.status().ToString());
  for (const NodeRecord& n : *nodes) {
    absl::StrAppend(&out, "node ", n.id, " ", n.name, " ", n.gpus, " ",
                    std::string(NodeStateName(n.state)), " hb",
                    n.last_heartbeat.count(), " drained", n.drained, " ",
                    n.drain_reason, "\n");
  }
  auto totals = store.Totals();
  if (totals.ok()) absl::StrAppend(&out, "max id ", totals->max_id, "\n");
  return out;
}

std::string DumpStateDir(const std::string& state_dir) {
  auto store = SqliteStore::Open(state_dir + "/state.db");
  if (!store.ok()) return absl::StrCat("Open: ", store.status().ToString());
  return Dump(**store);
}

// One node's agent, simulated: its tasks as it reports them.
struct Agent {
  std::string name;
  int gpus = 0;
  int64_t id = 0;
  uint64_t session = 0;
  std::map<TaskKey, v1::TaskStatus> tasks;
};

// What to do in one run of the scenario.
struct RunOptions {
  std::optional<int64_t> fail_write;  // the write (1-based) to fail
  Effect effect = Effect::kNotApplied;
  // At the failure: stop there (a crash) rather than retry the call.
  bool crash_at_fault = false;
  // Dump the store after every write (the run with no fault).
  bool record = false;
};

class Scenario {
 public:
  Scenario(std::string state_dir, RunOptions run)
      : run_(run), faults_(std::make_shared<StoreFaults>()) {
    options_.state_dir = std::move(state_dir);
    options_.policy = "fifo";
    if (run_.fail_write) faults_->FailNth(*run_.fail_write, run_.effect);
    if (run_.record) {
      faults_->SetAfterWrite([this](int64_t n, StoreWriteKind) {
        snapshots_[n] = Dump(store_->inner());
      });
    }
  }

  // Runs the scenario to its end, or to the failure if crash_at_fault;
  // then the master stops (as a crash: nothing more is written).
  void Run() {
    RunSteps();
    master_.reset();
    store_ = nullptr;
  }

  StoreFaults& faults() { return *faults_; }
  const std::map<int64_t, std::string>& snapshots() const { return snapshots_; }
  // The failed call, and what it answered.
  const std::string& fault_op() const { return fault_op_; }
  const absl::Status& fault_status() const { return fault_status_; }

 private:
  void RunSteps() {
    if (!Open()) return;
    if (run_.record) snapshots_[0] = Dump(store_->inner());
    for (const char* name : {"n1", "n2"}) agents_.push_back({name, 2});
    for (Agent& agent : agents_) {
      if (!RegisterAgent(agent)) return;
    }
    // Three jobs; a pass starts them all (a and c on one node, b on the
    // other); the agents start them and report them running.
    for (auto [name, gpus] : {std::pair{"a", 1}, {"b", 2}, {"c", 1}}) {
      if (!Submit(name, gpus)) return;
    }
    if (!Pass() || !BeatAll() || !BeatAll()) return;
    // a exits 0 on its own: finished once its end is acknowledged.
    Tick();
    EndTask(jobs_.at("a"), 0);
    if (!BeatAll()) return;
    // c is cancelled: stopped, then cancelled.
    Tick();
    if (!Cancel(jobs_.at("c")) || !BeatAll() || !BeatAll()) return;
    // b's node is drained with preemption: b is stopped and requeued; d
    // comes; a pass starts what fits on the other node.
    Tick();
    const std::string b_node = NodeOf(jobs_.at("b"));
    if (!Drain(b_node) || !BeatAll() || !BeatAll()) return;
    if (!Submit("d", 1) || !Pass() || !BeatAll() || !BeatAll()) return;
    Tick();
    if (!Resume(b_node) || !Pass() || !BeatAll() || !BeatAll()) return;
    // The master restarts; the agents come back with their tasks.
    Tick();
    master_.reset();
    store_ = nullptr;
    if (!Open()) return;
    for (Agent& agent : agents_) {
      if (!RegisterAgent(agent)) return;
    }
    if (!Pass() || !BeatAll() || !BeatAll()) return;
    // Whatever runs ends well.
    Tick();
    for (Agent& agent : agents_) {
      for (auto& [key, task] : agent.tasks) {
        if (task.state() == v1::TASK_STATE_RUNNING) {
          EndTask(std::get<0>(key), 0);
        }
      }
    }
    if (!BeatAll() || !Pass() || !BeatAll()) return;
  }

  bool Open() {
    std::filesystem::create_directories(options_.state_dir);
    auto sqlite = SqliteStore::Open(options_.state_dir + "/state.db");
    EXPECT_TRUE(sqlite.ok()) << sqlite.status();
    if (!sqlite.ok()) return false;
    auto store = std::make_unique<FaultStore>(*std::move(sqlite), faults_);
    store_ = store.get();
    auto master = MasterState::Open(options_, &clock_, std::move(store));
    EXPECT_TRUE(master.ok()) << master.status();
    if (!master.ok()) return false;
    master_ = *std::move(master);
    for (Agent& agent : agents_) agent.session = 0;
    return true;
  }

  void Tick() { clock_.Advance(Seconds{1}); }

  // Runs `call` (one request to the master, which checks what it
  // acknowledged when it answers OK). If the request made the failing
  // write: checks it answered with that error, then stops (a crash) or
  // retries it as a client or agent would. False: stop the scenario.
  bool Do(const std::string& op, const std::function<absl::Status()>& call) {
    const int64_t failures = faults_->failures();
    absl::Status status = call();
    CheckDesiredDurable(op);
    if (faults_->failures() > failures) {
      fault_op_ = op;
      fault_status_ = status;
      EXPECT_FALSE(status.ok())
          << op << " answered OK although its store write failed";
      EXPECT_THAT(status.message(), HasSubstr("injected fault")) << op;
      if (run_.crash_at_fault) return false;
      for (int i = 0; i < 3 && !status.ok(); ++i) {
        status = call();
        CheckDesiredDurable(op);
      }
    }
    EXPECT_TRUE(status.ok()) << op << ": " << status;
    return status.ok();
  }

  // No node's desired state asks for a task whose launch is not stored
  // (its job's attempt, its node at that rank).
  void CheckDesiredDurable(const std::string& op) {
    if (master_ == nullptr) return;
    for (const Agent& agent : agents_) {
      if (agent.session == 0) continue;
      auto desired = master_->DesiredStateAfter(agent.id, agent.session, 0);
      if (!desired.ok() || !desired->has_value()) continue;
      for (const v1::StartTask& start : (*desired)->run()) {
        const v1::TaskRef& t = start.task();
        auto stored = store_->inner().GetJob(t.job_id());
        auto nodes = store_->inner().LaunchNodes(t.job_id(), t.attempt());
        ASSERT_TRUE(stored.ok() && nodes.ok()) << op;
        EXPECT_GE(stored->attempt, t.attempt())
            << op << ": job " << t.job_id() << " sent before its launch "
            << t.attempt() << " was stored";
        ASSERT_LT(t.rank(), static_cast<int>(nodes->size()))
            << op << ": launch " << t.attempt() << " of job " << t.job_id()
            << " sent to " << agent.name << " before it was stored";
        EXPECT_EQ((*nodes)[t.rank()], agent.name) << op;
      }
    }
  }

  bool RegisterAgent(Agent& agent) {
    return Do("register " + agent.name, [&]() -> absl::Status {
      v1::RegisterRequest req;
      req.set_name(agent.name);
      req.set_address(agent.name + ".local");
      req.set_gpus(agent.gpus);
      req.set_agent_token(TokenFor(agent.name));
      req.set_grace_seconds(1);
      req.set_boot_id("test-boot");
      req.set_report_seq(++seq_);
      for (const auto& [key, task] : agent.tasks) *req.add_tasks() = task;
      auto resp = master_->Register(req);
      if (!resp.ok()) return resp.status();
      auto nodes = store_->inner().ListNodes();
      EXPECT_TRUE(nodes.ok());
      bool stored = false;
      for (const NodeRecord& n : nodes.value_or(std::vector<NodeRecord>{})) {
        stored |= n.name == agent.name && n.state == NodeState::kUp;
      }
      EXPECT_TRUE(stored) << agent.name << " registered, not stored up";
      agent.id = resp->node_id();
      agent.session = resp->session();
      Apply(agent, resp->acknowledged(), resp->desired());
      return absl::OkStatus();
    });
  }

  bool BeatAll() {
    for (Agent& agent : agents_) {
      const bool ok = Do("heartbeat " + agent.name, [&]() -> absl::Status {
        v1::HeartbeatRequest req;
        req.set_node_id(agent.id);
        req.set_session(agent.session);
        req.set_boot_id("test-boot");
        req.set_report_seq(++seq_);
        for (const auto& [key, task] : agent.tasks) *req.add_tasks() = task;
        auto resp = master_->Heartbeat(req);
        if (!resp.ok()) return resp.status();
        Apply(agent, resp->acknowledged(), resp->desired());
        return absl::OkStatus();
      });
      if (!ok) return false;
    }
    return true;
  }

  // An agent's part of an answer: forgets the acknowledged ends (checking
  // each is stored), starts what it is asked to, stops what it is told to.
  void Apply(Agent& agent,
             const google::protobuf::RepeatedPtrField<v1::TaskRef>& acked,
             const v1::DesiredState& desired) {
    for (const v1::TaskRef& ref : acked) {
      const TaskKey key{ref.job_id(), ref.attempt(), ref.rank()};
      auto it = agent.tasks.find(key);
      if (it == agent.tasks.end()) continue;
      auto stored = store_->inner().GetJob(ref.job_id());
      ASSERT_TRUE(stored.ok()) << stored.status();
      EXPECT_FALSE(stored->state == JobRecordState::kRunning &&
                   stored->attempt == ref.attempt())
          << "end of job " << ref.job_id() << " acknowledged, not stored";
      if (it->second.state() == v1::TASK_STATE_EXITED) {
        EXPECT_TRUE(IsFinal(stored->state))
            << "exit of job " << ref.job_id() << " acknowledged, not stored";
      }
      agent.tasks.erase(it);
    }
    for (const v1::StartTask& start : desired.run()) {
      const v1::TaskRef& t = start.task();
      const TaskKey key{t.job_id(), t.attempt(), t.rank()};
      if (agent.tasks.contains(key)) continue;
      std::vector<int> gpus(start.gpu_indexes().begin(),
                            start.gpu_indexes().end());
      agent.tasks[key] =
          Task(t.job_id(), t.attempt(), t.rank(), v1::TASK_STATE_RUNNING, gpus,
               {}, clock_.NowUnixSeconds().count());
    }
    for (const v1::StopTask& stop : desired.stop()) {
      for (auto& [key, task] : agent.tasks) {
        if (std::get<0>(key) != stop.job_id() ||
            std::get<1>(key) != stop.attempt() ||
            task.state() != v1::TASK_STATE_RUNNING) {
          continue;
        }
        task.set_state(v1::TASK_STATE_PREEMPTED);
        task.set_exit_code(143);
        task.set_stop_reason(stop.reason());
        task.set_end_time(clock_.NowUnixSeconds().count());
      }
    }
  }

  // The job's running task exits with `code` (reported at the next beat).
  void EndTask(JobId job, int code) {
    for (Agent& agent : agents_) {
      for (auto& [key, task] : agent.tasks) {
        if (std::get<0>(key) != job || task.state() != v1::TASK_STATE_RUNNING) {
          continue;
        }
        task.set_state(v1::TASK_STATE_EXITED);
        task.set_exit_code(code);
        task.set_end_time(clock_.NowUnixSeconds().count());
      }
    }
  }

  std::string NodeOf(JobId job) const {
    for (const Agent& agent : agents_) {
      for (const auto& [key, task] : agent.tasks) {
        if (std::get<0>(key) == job) return agent.name;
      }
    }
    ADD_FAILURE() << "job " << job << " runs nowhere";
    return "";
  }

  bool Submit(const std::string& name, int gpus) {
    return Do("submit " + name, [&]() -> absl::Status {
      JobRequest spec = Spec(gpus);
      spec.name = name;
      auto result = master_->SubmitJob(spec, "request-" + name);
      if (!result.ok()) return result.status();
      auto stored = store_->inner().GetJob(result->id);
      EXPECT_TRUE(stored.ok() && stored->spec == spec)
          << "job " << result->id << " acknowledged, not stored";
      jobs_[name] = result->id;
      return absl::OkStatus();
    });
  }

  bool Pass() {
    return Do("pass", [&] { return master_->RunPass(); });
  }

  bool Cancel(JobId job) {
    return Do(absl::StrCat("cancel ", job), [&]() -> absl::Status {
      auto result = master_->CancelJob(job);
      if (!result.ok()) return result.status();
      auto stored = store_->inner().GetJob(job);
      EXPECT_TRUE(stored.ok() && (stored->cancel_requested ||
                                  stored->state == JobRecordState::kCancelled))
          << "cancel of job " << job << " acknowledged, not stored";
      return absl::OkStatus();
    });
  }

  bool Drain(const std::string& node) {
    return Do("drain " + node, [&]() -> absl::Status {
      auto result = master_->DrainNode(node, "fan", /*preempt=*/true);
      if (!result.ok()) return result.status();
      EXPECT_TRUE(StoredDrain(node)) << "drain acknowledged, not stored";
      for (JobId job : result->preempted) {
        auto stored = store_->inner().GetJob(job);
        EXPECT_TRUE(stored.ok() && stored->state != JobRecordState::kRunning)
            << "preemption of job " << job << " acknowledged, not stored";
      }
      return absl::OkStatus();
    });
  }

  bool Resume(const std::string& node) {
    return Do("resume " + node, [&]() -> absl::Status {
      auto result = master_->ResumeNode(node);
      if (!result.ok()) return result.status();
      EXPECT_FALSE(StoredDrain(node)) << "resume acknowledged, not stored";
      return absl::OkStatus();
    });
  }

  bool StoredDrain(const std::string& node) {
    auto nodes = store_->inner().ListNodes();
    for (const NodeRecord& n : nodes.value_or(std::vector<NodeRecord>{})) {
      if (n.name == node) return n.drained;
    }
    return false;
  }

  RunOptions run_;
  std::shared_ptr<StoreFaults> faults_;
  MasterOptions options_;
  master::FakeClock clock_{Seconds{1000}};
  std::unique_ptr<MasterState> master_;
  FaultStore* store_ = nullptr;  // owned by master_
  std::vector<Agent> agents_;
  std::map<std::string, JobId> jobs_;
  uint64_t seq_ = 0;
  std::map<int64_t, std::string> snapshots_;
  std::string fault_op_;
  absl::Status fault_status_;
};

class StoreFaultTest : public testing::Test {
 protected:
  // The run with no fault: its writes, its store after each, at the end.
  void SetUp() override {
    Scenario clean(dir_.File("clean"), {.record = true});
    clean.Run();
    writes_ = clean.faults().writes();
    snapshots_ = clean.snapshots();
    final_ = DumpStateDir(dir_.File("clean"));
    history_ = clean.faults().history();
  }

  // What each write of the run with no fault was, for traces.
  std::string WriteName(int64_t k) const {
    return absl::StrCat("write ", k, " of ", writes_, " (",
                        std::string(StoreWriteKindName(history_[k - 1])), ")");
  }

  TestDir dir_;
  int64_t writes_ = 0;
  std::map<int64_t, std::string> snapshots_;
  std::string final_;
  std::vector<StoreWriteKind> history_;
};

// The scenario writes through every kind of write the master makes on its
// own (submissions, job changes, nodes, drains), and the run with no fault
// ends as planned.
TEST_F(StoreFaultTest, TheScenarioMakesEveryKindOfWrite) {
  std::map<StoreWriteKind, int> kinds;
  for (StoreWriteKind kind : history_) ++kinds[kind];
  EXPECT_GE(kinds[StoreWriteKind::kCreateJobs], 4);
  EXPECT_GE(kinds[StoreWriteKind::kWrite], 8);
  // Every registration, a node's first included, writes its row with the
  // jobs (kWrite), grouped with others'; a node lost or leaving
  // (UpsertNode) is faulted in store_fault_cases_test.
  EXPECT_EQ(kinds[StoreWriteKind::kUpsertNode], 0);
  EXPECT_EQ(kinds[StoreWriteKind::kSetNodeDrain], 2);
  EXPECT_THAT(final_, HasSubstr(" a finished "));
  EXPECT_THAT(final_, HasSubstr(" b finished "));
  EXPECT_THAT(final_, HasSubstr(" c cancelled "));
  EXPECT_THAT(final_, HasSubstr(" d finished "));
  EXPECT_EQ(snapshots_.size(), static_cast<size_t>(writes_ + 1));
  std::printf("the scenario makes %lld store writes\n",
              static_cast<long long>(writes_));
}

// Each write failed, the master crashed right after: the call answered the
// store's error, and the store holds what the writes before it stored.
TEST_F(StoreFaultTest, EachWriteFailedThenACrashKeepsExactlyWhatWasWritten) {
  for (int64_t k = 1; k <= writes_; ++k) {
    SCOPED_TRACE(WriteName(k));
    const std::string dir = dir_.File(absl::StrCat("crash-", k));
    Scenario run(dir, {.fail_write = k, .crash_at_fault = true});
    run.Run();
    EXPECT_EQ(run.faults().failures(), 1);
    EXPECT_FALSE(run.fault_status().ok()) << run.fault_op();
    EXPECT_EQ(DumpStateDir(dir), snapshots_.at(k - 1)) << run.fault_op();
  }
}

// Each write failed, the call retried (a client submits or cancels again,
// an agent beats again, the next pass comes): the run ends with the same
// store as the run with no fault.
TEST_F(StoreFaultTest, EachWriteFailedThenRetriedEndsAsWithNoFault) {
  for (int64_t k = 1; k <= writes_; ++k) {
    SCOPED_TRACE(WriteName(k));
    const std::string dir = dir_.File(absl::StrCat("retry-", k));
    Scenario run(dir, {.fail_write = k});
    run.Run();
    EXPECT_EQ(run.faults().failures(), 1);
    EXPECT_EQ(DumpStateDir(dir), final_) << run.fault_op();
  }
}

// Each write applied but its acknowledgement lost (the commit reached the
// disk, the call failed), then a crash: the call answered the error, and
// the restarted master's store holds the writes up to and with that one.
TEST_F(StoreFaultTest, EachWriteAppliedButUnacknowledgedThenACrash) {
  for (int64_t k = 1; k <= writes_; ++k) {
    SCOPED_TRACE(WriteName(k));
    const std::string dir = dir_.File(absl::StrCat("lost-ack-", k));
    Scenario run(dir, {.fail_write = k,
                       .effect = Effect::kAppliedThenFailed,
                       .crash_at_fault = true});
    run.Run();
    EXPECT_FALSE(run.fault_status().ok()) << run.fault_op();
    EXPECT_EQ(DumpStateDir(dir), snapshots_.at(k)) << run.fault_op();
  }
}

}  // namespace
}  // namespace tiresias::master_testing
