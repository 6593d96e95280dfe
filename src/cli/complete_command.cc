// `tiresias __complete jobs|nodes` (hidden): the words the shell
// completion (shell_help.h) offers where a command takes job ids or node
// names: the ids of the jobs not yet ended, or every node's name, one per
// line. Quiet and quick by design: it waits at most 2 s for the master and
// prints nothing (exit 0) when it cannot reach it, so a completion never
// hangs a shell nor prints errors into it.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"

namespace tiresias {
namespace {

constexpr auto kDeadline = std::chrono::seconds(2);

void PrintJobIds(cli::MasterClient& client) {
  v1::ListJobsRequest req;
  for (v1::JobState state : {v1::JOB_STATE_PENDING, v1::JOB_STATE_STARTING,
                             v1::JOB_STATE_RUNNING, v1::JOB_STATE_PREEMPTED}) {
    req.add_states(state);
  }
  req.set_page_size(5000);  // the master's most; one page is plenty here
  std::unique_ptr<grpc::ClientContext> ctx = client.StreamContext();
  ctx->set_deadline(std::chrono::system_clock::now() + kDeadline);
  v1::ListJobsResponse resp;
  if (!client.stub().ListJobs(ctx.get(), req, &resp).ok()) return;
  for (const v1::Job& job : resp.jobs()) {
    std::printf("%lld\n", static_cast<long long>(job.id()));
  }
}

void PrintNodeNames(cli::MasterClient& client) {
  std::unique_ptr<grpc::ClientContext> ctx = client.StreamContext();
  ctx->set_deadline(std::chrono::system_clock::now() + kDeadline);
  v1::ListNodesResponse resp;
  if (!client.stub().ListNodes(ctx.get(), {}, &resp).ok()) return;
  for (const v1::Node& node : resp.nodes()) {
    // Only names made of what no shell expands (the completion reads them
    // as data, but a terminal may not).
    if (node.name().empty() ||
        node.name().find_first_not_of(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
            "._:@+-") != std::string::npos) {
      continue;
    }
    std::printf("%s\n", node.name().c_str());
  }
}

}  // namespace

void AddCompleteCommand(CLI::App& app, int* exit_code) {
  auto kind = std::make_shared<std::string>();
  auto master = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "__complete", "Words for shell completion: jobs or nodes");
  cmd->group("");  // hidden: the completion script's, not a user's
  cli::AddMasterFlag(cmd, master.get());
  cmd->add_option("kind", *kind, "jobs or nodes")
      ->required()
      ->check(CLI::IsMember({"jobs", "nodes"}));
  cmd->callback([kind, master, exit_code] {
    cli::MasterClient client(*master);
    if (*kind == "jobs") {
      PrintJobIds(client);
    } else {
      PrintNodeNames(client);
    }
    *exit_code = 0;
  });
}

}  // namespace tiresias
