// The one job-spec conversion: every field of a JobRequest survives the
// wire and back, so the CLI sends exactly what the master reads.
#include "api/job_spec.h"

#include <gtest/gtest.h>

namespace tiresias {
namespace {

JobRequest Full() {
  JobRequest spec;
  spec.name = "train";
  spec.user = "alice";
  spec.num_gpus = 4;
  spec.command = {"/usr/bin/python3", "train.py", "--lr", "0.1"};
  spec.env = {{"A", "1"}, {"B", "two"}};
  spec.checkpoint_dir = "/ckpt";
  spec.model = "resnet50";
  spec.workdir = "/home/alice";
  spec.output = "out-%j.txt";
  spec.error = "err-%j.txt";
  spec.time_limit = Seconds{3600};
  spec.no_preempt = true;
  spec.hold = true;
  spec.dependencies = {{DependencyKind::kAfterOk, 7},
                       {DependencyKind::kAfterAny, 9}};
  spec.array.indices = "0-9%2";
  spec.array.max_running = 2;
  spec.nodes = 2;
  spec.gpus_per_node = 2;
  spec.tasks_per_node = 3;
  spec.warn = {.signal = 10, .seconds = 60};
  spec.gpu_type = "a100";
  spec.constraint = "ib&nvme|big";
  spec.nodelist = {"n1", "n2"};
  spec.exclude = {"n3"};
  spec.cpus_per_gpu = 6;
  spec.mem_per_gpu_mib = 24576;
  spec.exclusive = true;
  spec.vc = "vision";
  spec.qos = "high";
  spec.io = kIoPty;
  spec.io_grace_seconds = 30;
  return spec;
}

// Whole-struct equality (JobRequest's defaulted operator==), so that a
// field added later and forgotten by the conversion fails here.
void ExpectSame(const JobRequest& a, const JobRequest& b) {
  EXPECT_TRUE(a == b) << "the spec changed through the wire";
  // The fields that tell most, by name, when it fails.
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.env, b.env);
  EXPECT_EQ(a.array, b.array);
}

TEST(JobSpecTest, EveryFieldSurvivesTheWireAndBack) {
  const JobRequest spec = Full();
  v1::JobSpec wire;
  JobSpecToProto(spec, &wire);
  ExpectSame(JobSpecFromProto(wire), spec);
  // And through the bytes the CLI sends.
  v1::JobSpec parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire.SerializeAsString()));
  ExpectSame(JobSpecFromProto(parsed), spec);
}

TEST(JobSpecTest, ConvertingReplacesWhatTheMessageHeld) {
  v1::JobSpec wire;
  JobSpecToProto(Full(), &wire);
  JobRequest plain;
  plain.num_gpus = 1;
  plain.command = {"true"};
  JobSpecToProto(plain, &wire);
  EXPECT_EQ(wire.env_size(), 0);
  EXPECT_EQ(wire.dependencies_size(), 0);
  EXPECT_FALSE(wire.has_array());
  ExpectSame(JobSpecFromProto(wire), plain);
}

// The CLI's own copy of this conversion (submit_command.cc) sent an array
// only when it had indices, the master's also for a running limit alone:
// the two had drifted apart. With one conversion the wire carries the
// limit, and the master's check (ValidateJobRequest: "no indices, but a
// running limit") sees what the user asked.
TEST(JobSpecTest, ARunningLimitWithoutIndicesIsSent) {
  JobRequest spec;
  spec.num_gpus = 1;
  spec.command = {"true"};
  spec.array.max_running = 3;
  v1::JobSpec wire;
  JobSpecToProto(spec, &wire);
  ASSERT_TRUE(wire.has_array());
  EXPECT_EQ(wire.array().max_running(), 3);
  EXPECT_EQ(JobSpecFromProto(wire).array.max_running, 3);
}

}  // namespace
}  // namespace tiresias
