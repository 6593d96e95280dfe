// `tiresias dashboard`: serves the web dashboard (src/dashboard) for a
// master, until SIGINT or SIGTERM.
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/master_flags.h"
#include "dashboard/dashboard_server.h"

namespace tiresias {
namespace {

struct DashboardFlags {
  std::string master;
  std::string listen = "127.0.0.1:8080";
  double refresh_seconds = 2;
};

int RunDashboard(const DashboardFlags& f) {
  if (!(f.refresh_seconds >= 0.1 && f.refresh_seconds <= 3600)) {
    return cli::Fail(absl::StrCat("--refresh ", f.refresh_seconds,
                                  ": expected seconds between 0.1 and 3600"));
  }
  BlockStopSignals();
  DashboardOptions options;
  options.master_address = f.master;
  options.listen = f.listen;
  options.refresh_ms = static_cast<int>(f.refresh_seconds * 1000);
  absl::StatusOr<std::unique_ptr<DashboardServer>> server =
      DashboardServer::Start(options);
  if (!server.ok()) {
    return cli::Fail(absl::StrCat("dashboard: --listen ", f.listen, ": ",
                                  server.status().message()));
  }
  std::printf("tiresias dashboard: http://%s/ (master %s)\n",
              BoundAddress(f.listen, (*server)->port()).c_str(),
              f.master.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "tiresias dashboard: %s received, stopping\n",
               WaitForStopSignal());
  (*server)->Shutdown();
  return 0;
}

}  // namespace

void AddDashboardCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<DashboardFlags>();
  CLI::App* cmd = app.add_subcommand(
      "dashboard",
      "Serve the web dashboard of a master (jobs, nodes, queues, GPU use) "
      "until SIGINT or SIGTERM.");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("--listen", f->listen,
                  "host:port to serve on (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--refresh", f->refresh_seconds,
                  "Seconds between the page's updates")
      ->capture_default_str();
  cmd->callback([f, exit_code] { *exit_code = RunDashboard(*f); });
}

}  // namespace tiresias
