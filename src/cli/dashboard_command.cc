// `tiresias dashboard`: serves the web dashboard (src/dashboard) for a
// master, until SIGINT or SIGTERM.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/master_flags.h"
#include "dashboard/dashboard_server.h"
#include "security/tls.h"

namespace tiresias {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

struct DashboardFlags {
  std::string master;
  std::string listen = "127.0.0.1:8080";
  double refresh_seconds = 2;
  std::string ca = Env("TIRESIAS_CA");
  std::string master_name = Env("TIRESIAS_MASTER_NAME");
  std::vector<std::string> allowed_hosts;
};

bool IsLoopback(const std::string& listen) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(listen);
  return parsed.ok() && (parsed->host == "127.0.0.1" ||
                         parsed->host == "localhost" || parsed->host == "::1");
}

int RunDashboard(const DashboardFlags& f) {
  if (!(f.refresh_seconds >= 0.1 && f.refresh_seconds <= 3600)) {
    return cli::Fail(absl::StrCat("--refresh ", f.refresh_seconds,
                                  ": expected seconds between 0.1 and 3600"));
  }
  DashboardOptions options;
  options.master_address = f.master;
  options.listen = f.listen;
  options.refresh_ms = static_cast<int>(f.refresh_seconds * 1000);
  options.master_name = f.master_name;
  options.allowed_hosts = f.allowed_hosts;
  if (!f.ca.empty()) {
    // The CA alone: the dashboard has no identity of its own, it calls
    // the master with each logged-in user's token.
    absl::StatusOr<security::TlsConfig> tls =
        security::LoadTlsConfig({.ca_path = f.ca});
    if (!tls.ok()) {
      return cli::Fail(absl::StrCat("dashboard: --ca (or $TIRESIAS_CA) ",
                                    tls.status().message()));
    }
    options.tls = *std::move(tls);
  }
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
  };
  BlockStopSignals();
  absl::StatusOr<std::unique_ptr<DashboardServer>> server =
      DashboardServer::Start(options);
  if (!server.ok()) {
    return cli::Fail(absl::StrCat("dashboard: ", server.status().message()));
  }
  std::printf("tiresias dashboard: http://%s/ (master %s, %s)\n",
              BoundAddress(f.listen, (*server)->port()).c_str(),
              f.master.c_str(),
              f.ca.empty() ? "plain text: for a master started with --insecure"
                           : "TLS; log in with a token");
  std::fflush(stdout);
  if (!IsLoopback(f.listen)) {
    std::fprintf(stderr,
                 "tiresias dashboard: WARNING: --listen %s is not loopback: "
                 "the dashboard speaks plain HTTP, so a login's token and the "
                 "session cookie cross the network in the clear; put HTTPS "
                 "in front of it, or keep it on 127.0.0.1 (ssh -L)\n",
                 f.listen.c_str());
  }
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
      "until SIGINT or SIGTERM. With --ca (a master with TLS) the page asks "
      "for a token and reads the master as that user; the dashboard keeps "
      "the token in its memory and gives the browser only a session cookie. "
      "It answers only requests addressed to it by its own names (the "
      "--listen host, localhost, 127.0.0.1, [::1], --allowed-host).");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("--listen", f->listen,
                  "host:port to serve on, plain HTTP (port 0 picks a free "
                  "one); keep it on loopback unless HTTPS is in front")
      ->capture_default_str();
  cmd->add_option("--refresh", f->refresh_seconds,
                  "Seconds between the page's updates")
      ->capture_default_str();
  cmd->add_option("--ca", f->ca,
                  "The cluster CA (ca.pem) to check the master's certificate "
                  "with (default: $TIRESIAS_CA); unset: plain text, for a "
                  "master started with --insecure (no login, a warning on "
                  "every page)");
  cmd->add_option("--master-name", f->master_name,
                  "The name in the master's certificate, when --master is an "
                  "address it does not list (default: $TIRESIAS_MASTER_NAME)");
  cmd->add_option("--allowed-host", f->allowed_hosts,
                  "Another NAME or NAME:PORT browsers reach the dashboard at "
                  "(the port defaults to --listen's); requests with any other "
                  "Host header get 403. Repeatable");
  cmd->callback([f, exit_code] { *exit_code = RunDashboard(*f); });
}

}  // namespace tiresias
