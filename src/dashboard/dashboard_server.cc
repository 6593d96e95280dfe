#include "dashboard/dashboard_server.h"

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "dashboard/dashboard_assets.h"
#include "nlohmann/json.hpp"
#include "proto/tiresias.grpc.pb.h"
#include "report/embedded_assets.h"
#include "report/html_format.h"

namespace tiresias {
namespace {

using nlohmann::json;

constexpr std::chrono::seconds kMasterDeadline{5};
// Jobs asked for per ListJobs call (the master's most).
constexpr int kJobsPageSize = 5000;

// "pending", "running", ... (the proto enum without its prefix).
std::string StateName(v1::JobState state) {
  std::string name = v1::JobState_Name(state);
  const std::string prefix = "JOB_STATE_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(c));
  return name;
}

json JobJson(const v1::Job& j, bool with_details) {
  json out = {
      {"id", j.id()},
      {"name", j.spec().name()},
      {"user", j.spec().user()},
      {"gpus", j.spec().gpus()},
      {"state", StateName(j.state())},
      {"queue", j.queue()},
      {"attained_gpu_seconds", j.attained_gpu_seconds()},
      {"executed_seconds", j.executed_seconds()},
      {"total_executed_seconds", j.total_executed_seconds()},
      {"submit_time", j.submit_time()},
      {"last_stop_time", j.last_stop_time()},
      {"first_start_time",
       j.has_first_start_time() ? json(j.first_start_time()) : json(nullptr)},
      {"end_time", j.has_end_time() ? json(j.end_time()) : json(nullptr)},
      {"preemptions", j.preemptions()},
      {"promotions", j.promotions()},
      {"restarts", j.restarts()},
      {"attempt", j.attempt()},
      {"nodes", std::vector<std::string>(j.nodes().begin(), j.nodes().end())},
      {"exit_code", j.has_exit_code() ? json(j.exit_code()) : json(nullptr)},
  };
  if (with_details) {
    out["command"] = std::vector<std::string>(j.spec().command().begin(),
                                              j.spec().command().end());
    json events = json::array();
    for (const v1::JobEvent& e : j.events()) {
      events.push_back({{"sequence", e.sequence()},
                        {"time", e.time()},
                        {"kind", e.kind()},
                        {"detail", e.detail()}});
    }
    out["events"] = std::move(events);
  }
  return out;
}

json NodeJson(const v1::Node& n) {
  return {{"id", n.id()},
          {"name", n.name()},
          {"address", n.address()},
          {"state", n.state() == v1::NODE_STATE_UP ? "up" : "down"},
          {"gpus", n.gpus()},
          {"gpus_free", n.gpus_free()},
          {"last_heartbeat_time", n.last_heartbeat_time()},
          {"job_ids",
           std::vector<int64_t>(n.job_ids().begin(), n.job_ids().end())}};
}

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& what) {
  SendJson(res, status, json{{"error", what}});
}

double NowUnixSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct DashboardServer::Backend {
  std::string master_address;
  std::unique_ptr<v1::Tiresias::Stub> stub;
  std::string page;

  std::unique_ptr<grpc::ClientContext> Context() const {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + kMasterDeadline);
    return ctx;
  }

  std::string Failure(const grpc::Status& s) const {
    return absl::StrCat("the master at ", master_address, " answered ",
                        static_cast<int>(s.error_code()), ": ",
                        s.error_message());
  }

  // Every job, page by page (ListJobs answers at most a page at a time).
  grpc::Status AllJobs(json* out) const {
    v1::ListJobsRequest req;
    req.set_page_size(kJobsPageSize);
    while (true) {
      v1::ListJobsResponse page;
      grpc::Status s = stub->ListJobs(Context().get(), req, &page);
      if (!s.ok()) return s;
      for (const v1::Job& j : page.jobs()) out->push_back(JobJson(j, false));
      if (page.next_page_token().empty()) return grpc::Status::OK;
      req.set_page_token(page.next_page_token());
    }
  }

  void State(httplib::Response& res) const {
    json jobs = json::array();
    grpc::Status s = AllJobs(&jobs);
    if (!s.ok()) return SendError(res, 502, Failure(s));
    v1::ListNodesResponse nodes;
    s = stub->ListNodes(Context().get(), v1::ListNodesRequest(), &nodes);
    if (!s.ok()) return SendError(res, 502, Failure(s));
    json out = {{"now", NowUnixSeconds()},
                {"master", master_address},
                {"jobs", std::move(jobs)},
                {"nodes", json::array()}};
    for (const v1::Node& n : nodes.nodes()) out["nodes"].push_back(NodeJson(n));
    SendJson(res, 200, out);
  }

  void Job(const std::string& id_text, httplib::Response& res) const {
    int64_t id = 0;
    if (!absl::SimpleAtoi(id_text, &id) || id <= 0) {
      return SendError(
          res, 400,
          absl::StrCat("job id: expected a positive number, got \"", id_text,
                       "\""));
    }
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::GetJobResponse resp;
    grpc::Status s = stub->GetJob(Context().get(), req, &resp);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
      return SendError(res, 404, absl::StrCat("job ", id, ": not found"));
    }
    if (!s.ok()) return SendError(res, 502, Failure(s));
    SendJson(res, 200, JobJson(resp.job(), true));
  }
};

std::string DashboardPage(const std::string& master_address, int refresh_ms) {
  const std::string master = EscapeHtml(master_address);
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\">"
      "<title>Tiresias \xe2\x80\x94 ",
      master, "</title><style>", ToAbsl(DashboardCss()),
      "</style></head>\n<body data-refresh-ms=\"", refresh_ms,
      "\" data-master=\"", master,
      "\">"
      "<header><h1>Tiresias</h1><span class=\"sub\">master ",
      master,
      "</span><span class=\"sub\" id=\"updated\"></span></header><main>"
      "<div id=\"error\"></div><div id=\"cards\"></div>"
      "<section class=\"panel\"><h2>Busy GPUs and waiting jobs</h2>"
      "<div id=\"history-box\"><canvas id=\"history\" role=\"img\" "
      "aria-label=\"Busy GPUs and waiting jobs over time\"></canvas></div>"
      "</section>"
      "<section class=\"panel\"><h2>Jobs</h2><table id=\"jobs\"><thead><tr>"
      "<th class=\"num\">ID</th><th>Name</th><th>User</th><th>State</th>"
      "<th class=\"num\">Queue</th><th class=\"num\">GPUs</th>"
      "<th class=\"num\">Attained (GPU-s)</th><th class=\"num\">Wait</th>"
      "<th class=\"num\">Run</th><th class=\"num\">Preempted</th>"
      "<th>Nodes</th></tr></thead><tbody></tbody></table>"
      "<p id=\"jobs-empty\" class=\"muted\">No jobs yet.</p></section>"
      "<section class=\"panel\" id=\"job-detail\"><h2 id=\"job-title\"></h2>"
      "<code id=\"job-command\"></code><table id=\"events\"><thead><tr>"
      "<th>Time</th><th>Event</th><th>Detail</th></tr></thead><tbody>"
      "</tbody></table></section>"
      "<section class=\"panel\"><h2>Nodes</h2><table id=\"nodes\"><thead><tr>"
      "<th>Node</th><th>State</th><th class=\"num\">GPUs</th>"
      "<th class=\"num\">Free</th><th>Jobs</th><th>Last heartbeat</th></tr>"
      "</thead><tbody></tbody></table>"
      "<p id=\"nodes-empty\" class=\"muted\">No nodes yet.</p></section>"
      "</main><script>",
      ToAbsl(ChartJs()), "</script><script>", ToAbsl(DashboardJs()),
      "</script></body></html>\n");
}

DashboardServer::DashboardServer() : backend_(std::make_unique<Backend>()) {}

absl::StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(
    const DashboardOptions& options) {
  std::unique_ptr<DashboardServer> server(new DashboardServer());
  Backend& backend = *server->backend_;
  backend.master_address = options.master_address;
  backend.stub = v1::Tiresias::NewStub(grpc::CreateChannel(
      options.master_address, grpc::InsecureChannelCredentials()));
  backend.page = DashboardPage(options.master_address, options.refresh_ms);
  const Backend* b = &backend;
  auto routes = [b](httplib::Server& http, int) {
    http.Get("/", [b](const httplib::Request&, httplib::Response& res) {
      res.set_content(b->page, "text/html; charset=utf-8");
    });
    http.Get("/api/state", [b](const httplib::Request&,
                               httplib::Response& res) { b->State(res); });
    http.Get(R"(/api/jobs/([^/]+))",
             [b](const httplib::Request& req, httplib::Response& res) {
               b->Job(req.matches[1], res);
             });
  };
  ASSIGN_OR_RETURN(server->listener_,
                   HttpListener::Start(options.listen, routes));
  return server;
}

DashboardServer::~DashboardServer() { Shutdown(); }

}  // namespace tiresias
