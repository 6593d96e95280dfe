#include "trace/cluster_spec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace/test_files.h"

namespace tiresias {
namespace {

using trace_testing::DataPath;
using trace_testing::ScratchDir;

constexpr char kSpecHeader[] =
    "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n";
constexpr char kMachineHeader[] = "machineId, number of GPUs, single GPU mem\n";

std::string ErrorOf(const absl::StatusOr<Topology>& topology) {
  EXPECT_FALSE(topology.ok());
  return std::string(topology.status().message());
}

TEST(ClusterShapeTest, ServersByGpus) {
  absl::StatusOr<Topology> t = ParseClusterSpec("64x8");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_racks(), 1);
  EXPECT_EQ(t->num_servers(), 64);
  EXPECT_EQ(t->total_gpus(), 512);
  EXPECT_EQ(t->server(63).num_gpus, 8);
  EXPECT_EQ(t->server(63).rack, 0);
}

TEST(ClusterShapeTest, RacksByServersByGpus) {
  absl::StatusOr<Topology> t = ParseClusterSpec("4x16x2");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_racks(), 4);
  EXPECT_EQ(t->num_servers(), 64);
  EXPECT_EQ(t->total_gpus(), 128);
  EXPECT_EQ(t->server(15).rack, 0);
  EXPECT_EQ(t->server(16).rack, 1);
  EXPECT_EQ(t->server(63).rack, 3);
}

TEST(ClusterShapeTest, BadShapes) {
  EXPECT_EQ(ErrorOf(ParseClusterSpec("64y8")),
            "spec \"64y8\": expected NxG, RxNxG or a cluster file");
  EXPECT_EQ(ErrorOf(ParseClusterSpec("")),
            "spec \"\": expected NxG, RxNxG or a cluster file");
  EXPECT_EQ(ErrorOf(ParseClusterSpec("2x3x4x5")),
            "spec \"2x3x4x5\": expected NxG, RxNxG or a cluster file");
  EXPECT_EQ(ErrorOf(ParseClusterSpec("x8")),
            "spec \"x8\": expected NxG, RxNxG or a cluster file");
  EXPECT_EQ(ErrorOf(ParseClusterSpec("0x8")),
            "spec \"0x8\": expected positive integers in NxG or RxNxG, got "
            "\"0\"");
  EXPECT_EQ(ErrorOf(ParseClusterSpec("4x-2x8")),
            "spec \"4x-2x8\": expected positive integers in NxG or RxNxG, got "
            "\"-2\"");
  EXPECT_EQ(ErrorOf(ParseClusterSpec("99999999999x8")),
            "spec \"99999999999x8\": expected positive integers in NxG or "
            "RxNxG, got \"99999999999\"");
  EXPECT_EQ(ErrorOf(ParseClusterSpec("64x80000")),
            "spec \"64x80000\": 5120000 GPUs, more than the 1000000 allowed");
}

TEST(ClusterFileTest, TiresiasSpec) {
  ScratchDir dir;
  std::string path =
      dir.Write("c.csv", absl::StrCat(kSpecHeader, "3,4,2,128,256\r\n\r\n"));
  absl::StatusOr<Topology> t = ParseClusterSpec(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_racks(), 3);
  EXPECT_EQ(t->num_servers(), 12);
  EXPECT_EQ(t->total_gpus(), 24);
  EXPECT_EQ(t->server(4).rack, 1);
}

TEST(ClusterFileTest, PhillyMachineList) {
  ScratchDir dir;
  std::string path = dir.Write(
      "m.csv", absl::StrCat(kMachineHeader, "m0,2, 12GB\nm7, 8, 24GB\n\n"));
  absl::StatusOr<Topology> t = ParseClusterSpec(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_racks(), 1);
  EXPECT_EQ(t->num_servers(), 2);
  EXPECT_EQ(t->total_gpus(), 10);
  EXPECT_EQ(t->server(0).name, "m0");
  EXPECT_EQ(t->server(1).name, "m7");
  EXPECT_EQ(t->server(1).num_gpus, 8);
  EXPECT_EQ(t->server(1).first_gpu, 2);
}

TEST(ClusterFileTest, BadFilesNameThePlace) {
  ScratchDir dir;
  struct Case {
    const char* contents;
    const char* expected;  // after "path"
  };
  const Case kCases[] = {
      {"", ": empty file, expected a header line"},
      {kSpecHeader, ": no data row after the header"},
      {kMachineHeader, ": no machines after the header"},
      {"a,b\n1,2\n",
       ":1: unknown cluster file header \"a,b\"; understood: Tiresias spec "
       "\"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,"
       "mem_p_node\" or Philly machine list \"machineId, number of GPUs, "
       "single GPU mem\""},
      {"num_switch,num_node_p_switch\n1,2\n",
       ":1: Tiresias cluster spec header lacks column 'num_gpu_p_node'"},
      {"machineId,gpus\nm0,2\n",
       ":1: Philly machine list header lacks column 'number of GPUs'"},
      {"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,"
       "mem_p_node\n1,0,4,40,256\n",
       ":2: column 'num_node_p_switch': expected a positive integer, got "
       "\"0\""},
      {"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,"
       "mem_p_node\n1,32,four,40,256\n",
       ":2: column 'num_gpu_p_node': expected a positive integer, got "
       "\"four\""},
      {"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,"
       "mem_p_node\n1,32,4,40\n",
       ":2: expected 5 columns, got 4"},
      {"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,"
       "mem_p_node\n1,32,4,40,256\n2,32,4,40,256\n",
       ":3: expected one data row in a cluster spec, got more"},
      {"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,"
       "mem_p_node\n1000,1000,8,40,256\n",
       ":2: 8000000 GPUs, more than the 1000000 allowed"},
      {"machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm1,-4, 24GB\n",
       ":3: column 'number of GPUs': expected a positive integer, got "
       "\"-4\""},
      {"machineId, number of GPUs, single GPU mem\nm0,2, 12GB\n,8, 24GB\n",
       ":3: column 'machineId': expected a non-empty name, got \"\""},
      {"machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm0,8, 24GB\n",
       ":3: column 'machineId': duplicate machine \"m0\", first on line 2"},
      {"machineId, number of GPUs, single GPU mem\nm0,2\n",
       ":2: expected 3 columns, got 2"},
  };
  int i = 0;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.contents);
    std::string path = dir.Write(absl::StrCat("bad", i++, ".csv"), c.contents);
    absl::StatusOr<Topology> t = ParseClusterSpec(path);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message(), absl::StrCat(path, c.expected));
  }
  std::string missing = dir.Missing("none.csv");
  EXPECT_EQ(ErrorOf(ParseClusterSpec(missing)),
            absl::StrCat("spec \"", missing,
                         "\": expected NxG, RxNxG or a cluster file"));
}

TEST(ShippedClustersTest, PhillyMachineList) {
  absl::StatusOr<Topology> t =
      ParseClusterSpec(DataPath("cluster_machine_list.csv"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_servers(), 552);
  EXPECT_EQ(t->total_gpus(), 2490);
  EXPECT_EQ(t->num_racks(), 1);
  EXPECT_EQ(t->max_gpus_per_server(), 8);
  EXPECT_EQ(t->server(0).name, "m0");
  EXPECT_EQ(t->Describe(), "552 servers (321x2, 231x8), 2490 GPUs, 1 rack");
}

TEST(ShippedClustersTest, TiresiasSpecs) {
  absl::StatusOr<Topology> t = ParseClusterSpec(DataPath("n32g4.csv"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_racks(), 1);
  EXPECT_EQ(t->num_servers(), 32);
  EXPECT_EQ(t->total_gpus(), 128);

  t = ParseClusterSpec(DataPath("n160g8.csv"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_racks(), 5);
  EXPECT_EQ(t->num_servers(), 160);
  EXPECT_EQ(t->total_gpus(), 1280);
}

}  // namespace
}  // namespace tiresias
