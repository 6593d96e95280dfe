// `tiresias nodes`: the nodes the master knows, like sinfo. Node names come
// from agents: printed through cli::Printable. `tiresias status`: the
// cluster at a glance, PACKLIMIT included.
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/api_json.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/printable.h"
#include "cli/shell_help.h"
#include "cli/store_text.h"
#include "core/memory_size.h"

namespace tiresias {
namespace {

// up, down; a drained up node is "draining" while jobs still run there and
// "drained" once none do (Slurm's DRAINING / DRAINED); a drained down node
// is "down" (its reason column says it is drained).
std::string NodeStateText(const v1::Node& node) {
  if (node.drained() && node.state() == v1::NODE_STATE_UP) {
    return node.job_ids().empty() ? "drained" : "draining";
  }
  return cli::NodeStateName(node.state());
}

int ListNodes(const std::string& master, bool json) {
  cli::MasterClient client(master);
  v1::ListNodesResponse resp;
  grpc::Status status =
      client.stub().ListNodes(client.Context().get(), {}, &resp);
  if (!status.ok()) {
    return cli::Fail(cli::DescribeRpcError(status, master, "nodes"));
  }
  if (json) {
    std::printf("%s\n", api::Dump(api::NodeListJson(resp)).c_str());
    return 0;
  }
  std::printf("%-20s %-8s %4s %4s %4s %6s %5s %-12s %-16s %-12s %s\n", "NODE",
              "STATE", "GPUS", "FREE", "CPUS", "MEMORY", "SPARE", "JOBS",
              "GPU MODEL", "FEATURES", "REASON");
  for (const v1::Node& node : resp.nodes()) {
    const std::string jobs =
        node.job_ids().empty() ? "-" : absl::StrJoin(node.job_ids(), ",");
    const std::string reason =
        node.drained() ? cli::Printable(node.drain_reason()) : "-";
    const std::string model =
        node.gpu_model().empty() ? "-" : cli::Printable(node.gpu_model());
    const std::string features =
        node.features().empty()
            ? "-"
            : cli::Printable(absl::StrJoin(node.features(), ","));
    const std::string memory =
        node.memory_mib() > 0 ? MemoryText(node.memory_mib()) : "-";
    // Spare CPUs for CPU-only jobs: free/kept.
    const std::string spare =
        node.spare_cpus() > 0
            ? absl::StrCat(node.spare_cpus_free(), "/", node.spare_cpus())
            : "-";
    std::printf("%-20s %-8s %4d %4d %4d %6s %5s %-12s %-16s %-12s %s\n",
                cli::Printable(node.name()).c_str(),
                NodeStateText(node).c_str(), node.gpus(), node.gpus_free(),
                node.cpus(), memory.c_str(), spare.c_str(), jobs.c_str(),
                model.c_str(), features.c_str(), reason.c_str());
  }
  return 0;
}

struct NodeFlags {
  std::string master;
  std::string name;
  std::string reason;
  bool preempt = false;
  bool json = false;
};

void PrintNodeChange(const v1::Node& node, const char* verb) {
  std::printf("node %s %s (%s", cli::Printable(node.name()).c_str(), verb,
              NodeStateText(node).c_str());
  if (!node.job_ids().empty()) {
    std::printf(", jobs %s still running there",
                absl::StrJoin(node.job_ids(), ",").c_str());
  }
  std::printf(")\n");
}

int Drain(const NodeFlags& f) {
  cli::MasterClient client(f.master);
  v1::DrainNodeRequest req;
  req.set_name(f.name);
  req.set_reason(f.reason);
  req.set_preempt(f.preempt);
  v1::DrainNodeResponse resp;
  grpc::Status status =
      client.stub().DrainNode(client.Context().get(), req, &resp);
  if (!status.ok()) {
    return cli::Fail(cli::DescribeRpcError(
        status, f.master, absl::StrCat("drain node ", cli::Printable(f.name))));
  }
  if (f.json) {
    std::printf("%s\n", api::Dump(api::DrainNodeJson(resp)).c_str());
    return 0;
  }
  if (!resp.preempted_job_ids().empty()) {
    std::printf("preempted jobs %s: they resume on other nodes\n",
                absl::StrJoin(resp.preempted_job_ids(), ",").c_str());
  }
  PrintNodeChange(resp.node(), "drained");
  return 0;
}

int Resume(const NodeFlags& f) {
  cli::MasterClient client(f.master);
  v1::ResumeNodeRequest req;
  req.set_name(f.name);
  v1::ResumeNodeResponse resp;
  grpc::Status status =
      client.stub().ResumeNode(client.Context().get(), req, &resp);
  if (!status.ok()) {
    return cli::Fail(cli::DescribeRpcError(
        status, f.master,
        absl::StrCat("resume node ", cli::Printable(f.name))));
  }
  if (f.json) {
    std::printf("%s\n", api::Dump(api::ResumeNodeJson(resp)).c_str());
    return 0;
  }
  PrintNodeChange(resp.node(), "resumed");
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
    std::printf("%s\n", api::Dump(api::ClusterStatusJson(resp)).c_str());
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
  // Drained nodes (up, taking no new job) only when there are some.
  std::printf("nodes      %lld up, %lld down%s\n",
              static_cast<long long>(resp.nodes_up()),
              static_cast<long long>(resp.nodes_down()),
              resp.nodes_drained() > 0
                  ? absl::StrCat(", ", resp.nodes_drained(), " drained").c_str()
                  : "");
  std::printf("GPUs       %lld busy of %lld%s\n",
              static_cast<long long>(resp.gpus_busy()),
              static_cast<long long>(resp.gpus()),
              resp.gpus_drained() > 0
                  ? absl::StrCat(" (", resp.gpus_drained(),
                                 " on drained nodes)")
                        .c_str()
                  : "");
  std::printf("jobs       %s\n", absl::StrJoin(jobs, ", ").c_str());
  std::printf("PACKLIMIT  %s\n", DescribePackLimit(resp).c_str());
  std::printf("tuning     %s\n", cli::DescribeTuning(resp.tuning()).c_str());
  if (resp.has_leader()) {
    const v1::MasterLeader& l = resp.leader();
    const std::string standbys =
        l.standbys_size() == 0
            ? "no standby"
            : absl::StrCat(l.standbys_size(), " standby",
                           l.standbys_size() == 1 ? "" : "s", " (",
                           absl::StrJoin(l.standbys(), ", "), ")");
    std::printf("master     epoch %llu, pid %lld on %s since %s; %s\n",
                static_cast<unsigned long long>(l.epoch()),
                static_cast<long long>(l.pid()), l.host().c_str(),
                cli::FormatTime(l.since()).c_str(), standbys.c_str());
    const std::string store = cli::DescribeStore(l.store());
    if (!store.empty()) std::printf("store      %s\n", store.c_str());
  }
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

void AddNodeCommand(CLI::App& app, int* exit_code) {
  CLI::App* node = app.add_subcommand(
      "node", "Change a node: drain it for maintenance, or resume it (admins)");
  node->require_subcommand(1);
  auto drain = std::make_shared<NodeFlags>();
  CLI::App* d = node->add_subcommand(
      "drain",
      "Drain NODE: no new job starts there; its running jobs finish, or with "
      "--preempt are preempted (checkpointed) and resume on other nodes. "
      "Kept across master restarts until `node resume`");
  cli::AddMasterFlag(d, &drain->master);
  d->add_option("node", drain->name, "Node name (see `tiresias nodes`)")
      ->type_name(cli::kNodeType)
      ->required();
  d->add_option("--reason", drain->reason,
                "Why (shown by `tiresias nodes`), at most 256 bytes")
      ->required();
  d->add_flag("--preempt", drain->preempt,
              "Preempt the jobs running there now instead of letting them "
              "finish");
  d->add_flag("--json", drain->json, "Print the answer as JSON");
  d->callback([drain, exit_code] { *exit_code = Drain(*drain); });

  auto resume = std::make_shared<NodeFlags>();
  CLI::App* r = node->add_subcommand(
      "resume", "Take a drained NODE back into service");
  cli::AddMasterFlag(r, &resume->master);
  r->add_option("node", resume->name, "Node name")
      ->type_name(cli::kNodeType)
      ->required();
  r->add_flag("--json", resume->json, "Print the answer as JSON");
  r->callback([resume, exit_code] { *exit_code = Resume(*resume); });
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
