#include "dashboard/master_reader.h"

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "api/api_json.h"
#include "security/tls.h"
#include "security/tokens.h"

namespace tiresias {
namespace {

using nlohmann::json;

constexpr std::chrono::seconds kMasterDeadline{5};

double NowUnixSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

MasterReader::MasterReader(std::string master_address,
                           std::shared_ptr<grpc::Channel> channel)
    : master_address_(std::move(master_address)),
      stub_(v1::Tiresias::NewStub(std::move(channel))) {}

std::unique_ptr<grpc::ClientContext> MasterReader::Context(
    const std::string& token) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + kMasterDeadline);
  if (!token.empty()) security::AttachToken(ctx.get(), token);
  return ctx;
}

std::string MasterReader::Failure(const grpc::Status& s) const {
  std::string line =
      absl::StrCat("the master at ", master_address_, " answered ",
                   static_cast<int>(s.error_code()), ": ",
                   absl::StrReplaceAll(s.error_message(), {{"\n", " "}}));
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    absl::StrAppend(&line,
                    " (is it running? A master with TLS needs the "
                    "dashboard's --ca; one started with --insecure needs "
                    "it left out)");
  }
  return security::RedactTokens(line);
}

ApiAnswer MasterReader::Failed(const grpc::Status& s) const {
  const bool unauthenticated =
      s.error_code() == grpc::StatusCode::UNAUTHENTICATED;
  return ApiAnswer{.status = unauthenticated ? 401 : 502,
                   .body = json{{"error", Failure(s)}},
                   .unauthenticated = unauthenticated};
}

grpc::Status MasterReader::WhoAmI(const std::string& token,
                                  v1::WhoAmIResponse* out) const {
  return stub_->WhoAmI(Context(token).get(), v1::WhoAmIRequest(), out);
}

ApiAnswer MasterReader::State(const std::string& token) const {
  v1::WhoAmIResponse who;
  grpc::Status s = WhoAmI(token, &who);
  if (!s.ok()) return Failed(s);
  // The master's counts (O(1) to send, whatever it holds): a listing of
  // every job here cost 26 MB and 2.4 s per poll at 30,000 jobs.
  v1::ClusterStatus status;
  s = stub_->GetClusterStatus(Context(token).get(),
                              v1::GetClusterStatusRequest(), &status);
  if (!s.ok()) return Failed(s);
  v1::ListNodesResponse nodes;
  s = stub_->ListNodes(Context(token).get(), v1::ListNodesRequest(), &nodes);
  if (!s.ok()) return Failed(s);
  // A master from before VCs answers UNIMPLEMENTED: it has none.
  v1::ListVcsResponse vcs;
  s = stub_->ListVcs(Context(token).get(), v1::ListVcsRequest(), &vcs);
  if (!s.ok() && s.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
    return Failed(s);
  }
  json out = {{"now", NowUnixSeconds()},
              {"master", master_address_},
              {"viewer",
               {{"user", who.user()},
                {"admin", who.admin()},
                {"insecure", who.insecure()}}},
              {"jobs", api::ClusterStatusJson(status)["jobs"]},
              {"tuning", api::ClusterStatusJson(status)["tuning"]},
              {"nodes", api::NodeListJson(nodes)["nodes"]},
              {"vcs", api::VcListJson(vcs)["vcs"]}};
  return ApiAnswer{.status = 200, .body = std::move(out)};
}

ApiAnswer MasterReader::Job(const std::string& token,
                            const std::string& id_text) const {
  int64_t id = 0;
  if (!absl::SimpleAtoi(id_text, &id) || id <= 0) {
    return ApiAnswer{
        .status = 400,
        .body = json{
            {"error", absl::StrCat("job id: expected a positive number, got \"",
                                   id_text, "\"")}}};
  }
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  grpc::Status s = stub_->GetJob(Context(token).get(), req, &resp);
  if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
    return ApiAnswer{
        .status = 404,
        .body = json{{"error", absl::StrCat("job ", id, ": not found")}}};
  }
  if (!s.ok()) return Failed(s);
  return ApiAnswer{.status = 200,
                   .body = api::JobJson(resp.job(), api::JobView::kDetail,
                                        NowUnixSeconds())};
}

ApiAnswer MasterReader::JobsPage(const std::string& token,
                                 const JobsParams& params) const {
  v1::ListJobsRequest req;
  req.set_page_size(params.page_size);
  req.set_page_token(params.page_token);
  req.set_user(params.user);
  req.set_name(params.name);
  req.set_vc(params.vc);
  // Checked by ParseJobsParams: a state word or empty (any state).
  if (v1::JobState state; api::ParseJobStateWord(params.state, &state)) {
    req.set_state(state);
  }
  v1::ListJobsResponse page;
  grpc::Status s = stub_->ListJobs(Context(token).get(), req, &page);
  if (!s.ok()) return Refused(s);
  const double now = NowUnixSeconds();
  json jobs = json::array();
  for (const v1::Job& j : page.jobs()) {
    jobs.push_back(api::JobJson(j, api::JobView::kList, now));
  }
  return ApiAnswer{.status = 200,
                   .body = json{{"jobs", std::move(jobs)},
                                {"next_page_token", page.next_page_token()},
                                {"page_size", params.page_size}}};
}

}  // namespace tiresias
