// `tiresias nodes`: the nodes the master knows, like sinfo. Node names come
// from agents: printed through cli::Printable. `tiresias status`: the
// cluster at a glance, PACKLIMIT included.
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/printable.h"

namespace tiresias {
namespace {

int ListNodes(const std::string& master, bool json) {
  cli::MasterClient client(master);
  v1::ListNodesResponse resp;
  grpc::Status status =
      client.stub().ListNodes(client.Context().get(), {}, &resp);
  if (!status.ok()) {
    return cli::Fail(cli::DescribeRpcError(status, master, "nodes"));
  }
  if (json) {
    std::printf("%s\n", cli::ToJson(resp).c_str());
    return 0;
  }
  std::printf("%-20s %-6s %4s %4s %s\n", "NODE", "STATE", "GPUS", "FREE",
              "JOBS");
  for (const v1::Node& node : resp.nodes()) {
    const std::string jobs =
        node.job_ids().empty() ? "-" : absl::StrJoin(node.job_ids(), ",");
    std::printf("%-20s %-6s %4d %4d %s\n", cli::Printable(node.name()).c_str(),
                cli::NodeStateName(node.state()).c_str(), node.gpus(),
                node.gpus_free(), jobs.c_str());
  }
  return 0;
}

// What PACKLIMIT is and why, in words.
std::string DescribePackLimit(const v1::ClusterStatus& s) {
  const v1::PackLimitStatus& p = s.pack_limit();
  const std::string runs = absl::StrCat(
      p.runs(), p.runs() == 1 ? " run" : " runs", " measured");
  if (s.placement() != "profiled") {
    return absl::StrFormat("%.4f, not used (placement %s); %s", p.value(),
                           s.placement(), runs);
  }
  if (!p.learning()) {
    return absl::StrFormat("%.4f, fixed (--fixed-pack-limit); %s", p.value(),
                           runs);
  }
  if (p.fit() == "fitted") {
    return absl::StrFormat("%.4f, learnt from %d samples (%s)", p.value(),
                           p.samples(), runs);
  }
  std::string why = p.fit();
  if (p.fit() == "too_few_samples") why = "too few samples";
  if (p.fit() == "one_class") why = "every sample costly, or none";
  if (p.fit() == "no_trend") why = "no trend with skew";
  return absl::StrFormat("%.4f, start value (%d samples: %s; %s)", p.value(),
                         p.samples(), why, runs);
}

int ShowStatus(const std::string& master, bool json) {
  cli::MasterClient client(master);
  v1::ClusterStatus resp;
  grpc::Status status =
      client.stub().GetClusterStatus(client.Context().get(), {}, &resp);
  if (!status.ok()) {
    return cli::Fail(cli::DescribeRpcError(status, master, "status"));
  }
  if (json) {
    std::printf("%s\n", cli::ToJson(resp).c_str());
    return 0;
  }
  std::vector<std::string> jobs;
  for (const char* state : {"pending", "starting", "running", "preempted",
                            "finished", "failed", "cancelled", "timeout"}) {
    auto it = resp.jobs().find(state);
    jobs.push_back(absl::StrCat(it == resp.jobs().end() ? 0 : it->second,
                                " ", state));
  }
  std::printf("policy     %s\n", resp.policy().c_str());
  std::printf("placement  %s\n", resp.placement().c_str());
  std::printf("nodes      %lld up, %lld down\n",
              static_cast<long long>(resp.nodes_up()),
              static_cast<long long>(resp.nodes_down()));
  std::printf("GPUs       %lld busy of %lld\n",
              static_cast<long long>(resp.gpus_busy()),
              static_cast<long long>(resp.gpus()));
  std::printf("jobs       %s\n", absl::StrJoin(jobs, ", ").c_str());
  std::printf("PACKLIMIT  %s\n", DescribePackLimit(resp).c_str());
  return 0;
}

struct NodesFlags {
  std::string master;
  bool json = false;
};

}  // namespace

void AddNodesCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<NodesFlags>();
  CLI::App* cmd = app.add_subcommand("nodes", "List nodes, like sinfo");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_flag("--json", f->json, "Print the list as JSON");
  cmd->callback([f, exit_code] { *exit_code = ListNodes(f->master, f->json); });
}

void AddStatusCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<NodesFlags>();
  CLI::App* cmd = app.add_subcommand(
      "status",
      "The cluster at a glance: policy and placement, nodes, GPUs, jobs by "
      "state, and PACKLIMIT (its value, whether it is learnt, and from how "
      "many measured runs)");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_flag("--json", f->json, "Print the status as JSON");
  cmd->callback(
      [f, exit_code] { *exit_code = ShowStatus(f->master, f->json); });
}

}  // namespace tiresias
