// `tiresias nodes`: the nodes the master knows, like sinfo. Node names come
// from agents: printed through cli::Printable.
#include <cstdio>
#include <memory>

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

}  // namespace tiresias
