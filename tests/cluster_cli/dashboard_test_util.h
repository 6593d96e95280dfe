// What the dashboard's tests against real masters and headless Chromium
// share: the dashboard started in-process against a master, plain GETs,
// the CLI against an --insecure master, and the page's readiness checks.
#ifndef TIRESIAS_TESTS_CLUSTER_CLI_DASHBOARD_TEST_UTIL_H_
#define TIRESIAS_TESTS_CLUSTER_CLI_DASHBOARD_TEST_UTIL_H_

#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dashboard/dashboard_server.h"
#include "gtest/gtest.h"
#include "headless_browser.h"
#include "proto/tiresias.grpc.pb.h"
#include "security/tls.h"
#include "security/tokens.h"
#include "subprocess.h"

namespace tiresias::cluster_test {

namespace fs = std::filesystem;
using cli_test::ProcessResult;
using cli_test::RunProcess;

inline bool HaveChromium() { return access(ChromiumPath().c_str(), X_OK) == 0; }

inline std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// GET `path` from 127.0.0.1:port: (status, body).
inline std::pair<int, std::string> Get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);
  auto res = client.Get(path.c_str());
  if (!res) return {-1, httplib::to_string(res.error())};
  return {res->status, res->body};
}

// `tiresias args...` against `master` (an --insecure one).
inline ProcessResult Cli(const std::string& master,
                         std::vector<std::string> args) {
  std::vector<std::string> argv = {TIRESIAS_BINARY, args[0], "--master",
                                   master};
  argv.insert(argv.end(), args.begin() + 1, args.end());
  ProcessResult r = RunProcess(argv);
  EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
  return r;
}

// Whether the master's ListJobs shows job `id` held (an --insecure
// master); nullopt if it does not list it.
inline std::optional<bool> HeldOnMaster(
    const std::string& master, int64_t id,
    const security::TlsConfig& tls = security::InsecureTlsConfig(),
    const std::string& token = "") {
  auto stub = v1::Tiresias::NewStub(security::Dial(master, tls));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (!token.empty()) security::AttachToken(&ctx, token);
  v1::ListJobsRequest req;
  v1::ListJobsResponse resp;
  grpc::Status s = stub->ListJobs(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  for (const v1::Job& j : resp.jobs()) {
    if (j.id() == id) return j.held();
  }
  return std::nullopt;
}

inline std::unique_ptr<DashboardServer> StartDashboard(
    const std::string& master,
    security::TlsConfig tls = security::InsecureTlsConfig()) {
  DashboardOptions options;
  options.master_address = master;
  options.listen = "127.0.0.1:0";
  options.refresh_ms = 300;
  options.tls = std::move(tls);
  auto server = DashboardServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

inline std::string Url(int port, const std::string& path = "/") {
  return "http://127.0.0.1:" + std::to_string(port) + path;
}

constexpr char kReady[] = "document.body.dataset.dashboardReady === '1'";
// Reloads the page, marking the old document so that kReloaded (a prefix
// of a WaitFor condition) holds only in the new one.
constexpr char kReload[] =
    "window.beforeReload = true; location.reload(); true";
constexpr char kReloaded[] = "window.beforeReload === undefined && ";
// The job ids of the jobs table's rows, top to bottom.
constexpr char kRowIds[] =
    "Array.from(document.querySelectorAll('#jobs tbody tr'))"
    ".map(tr => Number(tr.dataset.jobId))";

}  // namespace tiresias::cluster_test

#endif  // TIRESIAS_TESTS_CLUSTER_CLI_DASHBOARD_TEST_UTIL_H_
