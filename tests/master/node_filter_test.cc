// Jobs that may run only on some nodes (`submit --gpu-type`, `--constraint`,
// `--nodelist`, `--exclude`): what agents register, what the master starts
// where, and what it says while none can take them. MasterState with a
// fake clock and real SQLite, agents as messages.
#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "master/job_validation.h"
#include "master_test_util.h"
#include "sched/pending_reason.h"

namespace tiresias {
namespace {

using namespace master_testing;  // NOLINT: the fixture's own helpers

class NodeFilterTest : public MasterFixture {
 protected:
  int64_t RegisterTyped(const std::string& name, int gpus,
                        const std::string& model,
                        std::vector<std::string> features, int cpus = 0,
                        int64_t memory_mib = 0) {
    v1::RegisterRequest req = RegisterRequest(name, gpus);
    req.set_gpu_model(model);
    req.set_cpus(cpus);
    req.set_memory_mib(memory_mib);
    for (const std::string& f : features) req.add_features(f);
    auto resp = master_->Register(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (!resp.ok()) return 0;
    sessions_[resp->node_id()] = resp->session();
    return resp->node_id();
  }
  // The jobs a node was told to run.
  std::vector<JobId> JobsOn(int64_t node) {
    std::vector<JobId> out;
    for (const v1::StartTask& s : Starts(Beat(node))) {
      out.push_back(s.task().job_id());
    }
    return out;
  }
};

TEST_F(NodeFilterTest, JobsLandOnlyOnMatchingNodesAndWaitNamingThem) {
  Open();
  const int64_t a100 = RegisterTyped("a", 2, "NVIDIA A100-SXM4-80GB", {"ib"});
  const int64_t h200 = RegisterTyped("h", 2, "NVIDIA H200", {"ib", "nvme"});
  JobRequest on_h200 = Spec(2);
  on_h200.gpu_type = "h200";
  const JobId first = Submit(on_h200);
  JobRequest nvme = Spec(1);
  nvme.constraint = "nvme";
  const JobId second = Submit(nvme);  // only h has it, and h is full
  JobRequest v100 = Spec(1);
  v100.gpu_type = "v100";
  const JobId never = Submit(v100);
  JobRequest not_h = Spec(1);
  not_h.constraint = "ib";
  not_h.exclude = {"h"};
  const JobId third = Submit(not_h);
  Pass();
  EXPECT_EQ(JobsOn(h200), (std::vector<JobId>{first}));
  EXPECT_EQ(JobsOn(a100), (std::vector<JobId>{third}));
  EXPECT_EQ(Get(second).pending_reason,
            "needs 1 GPU, only 0 free (on the node matching features nvme: "
            "h)");
  EXPECT_EQ(Get(never).pending_reason,
            "no up node matches GPU type v100: waiting for one that does");
  EXPECT_EQ(Get(never).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kNoMatch));
  // The filter is stored with the job and survives a restart.
  master_.reset();
  Open();
  EXPECT_EQ(Get(never).spec.gpu_type, "v100");
  EXPECT_EQ(Get(third).spec.exclude, (std::vector<std::string>{"h"}));
}

TEST_F(NodeFilterTest, ANodeComingUpWithTheModelTakesTheWaitingJob) {
  Open();
  const int64_t plain = RegisterTyped("p", 4, "Emulated GPU", {});
  JobRequest want = Spec(1);
  want.gpu_type = "a100";
  want.nodelist = {"p", "q"};
  const JobId id = Submit(want);
  Pass();
  EXPECT_TRUE(JobsOn(plain).empty());
  EXPECT_EQ(Get(id).pending_reason,
            "no up node matches GPU type a100, nodes p,q: waiting for one "
            "that does");
  const int64_t q = RegisterTyped("q", 1, "NVIDIA A100", {});
  Pass();
  EXPECT_EQ(JobsOn(q), (std::vector<JobId>{id}));
}

// "small" gives each GPU 2 CPUs and 8G, "large" 8 CPUs and 64G: a job
// asking 4 CPUs per GPU goes to large alone, with its numbers in its
// StartTask for the agent to bind and limit; one asking 16 waits saying so.
TEST_F(NodeFilterTest, CpusAndMemoryPerGpuPickNodesWhoseSlicesHoldThem) {
  Open();
  const int64_t small = RegisterTyped("small", 4, "", {}, 8, 4 * 8192);
  const int64_t large = RegisterTyped("large", 2, "", {}, 16, 2 * 65536);
  JobRequest four = Spec(2);
  four.cpus_per_gpu = 4;
  four.mem_per_gpu_mib = 16384;
  const JobId fits = Submit(four);
  JobRequest sixteen = Spec(1);
  sixteen.cpus_per_gpu = 16;
  const JobId never = Submit(sixteen);
  JobRequest plain = Spec(1);
  const JobId anywhere = Submit(plain);
  Pass();
  EXPECT_EQ(JobsOn(small), (std::vector<JobId>{anywhere}));
  const auto starts = Starts(Beat(large));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), fits);
  EXPECT_EQ(starts[0].cpus_per_gpu(), 4);
  EXPECT_EQ(starts[0].mem_per_gpu_mib(), 16384);
  EXPECT_EQ(Get(never).pending_reason,
            "no up node matches 16 CPUs per GPU: waiting for one that does");
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  for (const v1::Node& n : *nodes) {
    EXPECT_EQ(n.cpus(), n.name() == "small" ? 8 : 16);
    EXPECT_EQ(n.memory_mib(), n.name() == "small" ? 32768 : 131072);
  }
}

// An exclusive job takes a node nobody holds a GPU of, and that node's
// other GPU stays idle while it runs: the next jobs wait rather than share.
TEST_F(NodeFilterTest, AnExclusiveJobsNodeRunsNothingElse) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const int64_t n2 = Register("n2", 2);
  const JobId a = Submit(Spec(1));
  Pass();
  JobRequest alone = Spec(1);
  alone.exclusive = true;
  const JobId e = Submit(alone);
  const JobId b = Submit(Spec(1));
  const JobId c = Submit(Spec(1));
  Pass();
  const std::vector<JobId> on_n1 = JobsOn(n1);
  const std::vector<JobId> on_n2 = JobsOn(n2);
  // a went to one node; e to the other, alone; b beside a.
  const std::vector<JobId>& with_a =
      std::count(on_n1.begin(), on_n1.end(), a) ? on_n1 : on_n2;
  const std::vector<JobId>& with_e = &with_a == &on_n1 ? on_n2 : on_n1;
  EXPECT_EQ(with_e, (std::vector<JobId>{e}));
  EXPECT_EQ(with_a.size(), 2u);
  EXPECT_TRUE(std::count(with_a.begin(), with_a.end(), b));
  EXPECT_EQ(Get(c).pending_reason, "needs 1 GPU, only 0 free");
  EXPECT_TRUE(Get(e).spec.exclusive);
  // e's node has a GPU nobody holds, but none a new job may take.
  const int64_t e_node = &with_e == &on_n1 ? n1 : n2;
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  for (const v1::Node& node : *nodes) {
    EXPECT_EQ(node.gpus_free(), 0) << node.name();
    if (node.id() == e_node) {
      EXPECT_EQ(node.job_ids_size(), 1);
    }
  }
}

// A job with nodes of its own would hold all their GPUs: it may not also
// be unpreemptible where the master limits such jobs' GPUs.
TEST_F(NodeFilterTest, AnExclusiveJobCannotBeUnpreemptibleUnderALimit) {
  options_.max_no_preempt_gpus = 4;
  Open();
  Register("n1", 8);
  JobRequest spec = Spec(1);
  spec.exclusive = true;
  spec.no_preempt = true;
  auto refused = master_->SubmitJob(spec);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("--exclusive"), std::string::npos)
      << refused.status();
  spec.no_preempt = false;
  EXPECT_NE(Submit(spec), 0);
}

TEST_F(NodeFilterTest, NodesListTheirModelAndFeatures) {
  Open();
  RegisterTyped("a", 1, "NVIDIA A100", {"ib", "nvme"});
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].gpu_model(), "NVIDIA A100");
  ASSERT_EQ((*nodes)[0].features_size(), 2);
  EXPECT_EQ((*nodes)[0].features(1), "nvme");
}

TEST_F(NodeFilterTest, BadFiltersAndFeaturesAreRefusedNamingTheField) {
  Open();
  v1::RegisterRequest req = RegisterRequest("a", 1);
  req.add_features("ib");
  req.add_features("ib");
  auto twice = master_->Register(req);
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("features[1]"), std::string::npos)
      << twice.status();
  req = RegisterRequest("a", 1);
  req.add_features("no spaces");
  EXPECT_FALSE(master_->Register(req).ok());
  JobRequest bad = Spec(1);
  bad.constraint = "ib&";
  absl::Status refused = ValidateJobRequest(bad);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("spec.constraint"), std::string::npos)
      << refused;
  req = RegisterRequest("a", 1);
  req.set_cpus(-1);
  EXPECT_NE(master_->Register(req).status().message().find("cpus"),
            std::string::npos);
  bad = Spec(1);
  bad.mem_per_gpu_mib = -5;
  EXPECT_NE(ValidateJobRequest(bad).message().find("spec.mem_per_gpu_mib"),
            std::string::npos);
  bad = Spec(1);
  bad.nodelist = {""};
  EXPECT_NE(ValidateJobRequest(bad).message().find("spec.nodelist[0]"),
            std::string::npos);
}

}  // namespace
}  // namespace tiresias
