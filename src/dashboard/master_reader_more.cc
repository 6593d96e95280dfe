// MasterReader: the cluster's history, a job's log, and the job actions
// (hold, release, cancel) the dashboard offers (master_reader.h).
#include <algorithm>
#include <chrono>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/api_json.h"
#include "dashboard/master_reader.h"
#include "security/tokens.h"

namespace tiresias {
namespace {

using nlohmann::json;

// Bytes of log one /api/jobs/ID/log answer carries at most: a page's worth
// of lines; the page asks again from next_offset.
constexpr int kLogBytesPerRead = 64 * 1024;

// The job id in a path, or the 400 answer for a malformed one.
std::optional<ApiAnswer> ParseJobId(const std::string& text, int64_t* id) {
  if (absl::SimpleAtoi(text, id) && *id > 0) return std::nullopt;
  return ApiAnswer{
      .status = 400,
      .body = json{{"error", absl::StrCat("job id: expected a positive "
                                          "number, got \"",
                                          text, "\"")}}};
}

}  // namespace

ApiAnswer MasterReader::Refused(const grpc::Status& s) const {
  int status = 0;
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      status = 400;
      break;
    case grpc::StatusCode::NOT_FOUND:
      status = 404;
      break;
    case grpc::StatusCode::PERMISSION_DENIED:
      status = 403;
      break;
    case grpc::StatusCode::FAILED_PRECONDITION:
      status = 409;
      break;
    default:
      return Failed(s);
  }
  return ApiAnswer{
      .status = status,
      .body = json{{"error", security::RedactTokens(s.error_message())}}};
}

ApiAnswer MasterReader::RefusedAction(const grpc::Status& s) const {
  ApiAnswer answer = Refused(s);
  if (answer.status == 400 || answer.status == 403 || answer.status == 404 ||
      answer.status == 409) {
    answer.body["error"] =
        absl::StrCat("refused: ", answer.body.value("error", ""));
  }
  return answer;
}

ApiAnswer MasterReader::History(const std::string& token,
                                const HistoryParams& params) const {
  v1::GetClusterHistoryRequest req;
  if (params.since) req.set_since(*params.since);
  if (params.until) req.set_until(*params.until);
  req.set_max_points(params.max_points);
  v1::GetClusterHistoryResponse resp;
  grpc::Status s = stub_->GetClusterHistory(Context(token).get(), req, &resp);
  if (!s.ok()) return Refused(s);
  json points = json::array();
  for (const v1::ClusterHistoryPoint& p : resp.points()) {
    points.push_back({{"sample_time", p.time()},
                      {"gpus_busy", p.gpus_busy()},
                      {"gpus_total", p.gpus_total()},
                      {"jobs_waiting", p.jobs_waiting()},
                      {"jobs_running", p.jobs_running()}});
  }
  return ApiAnswer{.status = 200,
                   .body = json{{"points", std::move(points)},
                                {"interval_s", resp.interval_s()}}};
}

ApiAnswer MasterReader::JobLog(const std::string& token,
                               const std::string& id_text,
                               const LogParams& params) const {
  int64_t id = 0;
  if (auto bad = ParseJobId(id_text, &id)) return *bad;
  v1::ReadJobLogRequest req;
  req.set_job_id(id);
  req.set_attempt(params.attempt);
  req.set_rank(params.rank);
  req.set_offset(params.offset);
  req.set_max_bytes(kLogBytesPerRead);
  v1::ReadJobLogResponse resp;
  grpc::Status s = stub_->ReadJobLog(Context(token).get(), req, &resp);
  if (!s.ok()) return Refused(s);
  // A read may end inside a multi-byte character: stop before it, so that
  // the next read starts with the whole character.
  std::string data = resp.data();
  int64_t next_offset = resp.next_offset();
  size_t cut = data.size();
  for (size_t back = 1; back <= std::min<size_t>(3, data.size()); ++back) {
    const unsigned char c = data[data.size() - back];
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need > back) cut = data.size() - back;
    break;
  }
  if (cut < data.size() && !resp.complete()) {
    next_offset -= static_cast<int64_t>(data.size() - cut);
    data.resize(cut);
  }
  return ApiAnswer{.status = 200,
                   .body = json{{"data", std::move(data)},
                                {"offset", params.offset},
                                {"next_offset", next_offset},
                                {"attempt", resp.attempt()},
                                {"current_attempt", resp.current_attempt()},
                                {"complete", resp.complete()},
                                {"job_state", api::JobStateWord(resp.job_state())},
                                {"node", resp.node()}}};
}

ApiAnswer MasterReader::Act(const std::string& token,
                            const std::string& id_text,
                            const std::string& action) const {
  int64_t id = 0;
  if (auto bad = ParseJobId(id_text, &id)) return *bad;
  v1::UpdateJobsRequest req;
  if (action == "hold") {
    req.set_action(v1::JOB_ACTION_HOLD);
  } else if (action == "release") {
    req.set_action(v1::JOB_ACTION_RELEASE);
  } else if (action == "cancel") {
    req.set_action(v1::JOB_ACTION_CANCEL);
  } else {
    return ApiAnswer{
        .status = 400,
        .body = json{{"error", absl::StrCat("action: expected hold, release "
                                            "or cancel, got \"",
                                            action, "\"")}}};
  }
  req.add_job_ids(id);
  v1::UpdateJobsResponse resp;
  grpc::Status s = stub_->UpdateJobs(Context(token).get(), req, &resp);
  if (!s.ok()) return RefusedAction(s);
  if (resp.results_size() != 1) {
    return ApiAnswer{.status = 502,
                     .body = json{{"error",
                                   absl::StrCat("the master at ",
                                                master_address_,
                                                " answered no result for job ",
                                                id)}}};
  }
  const v1::JobActionResult& r = resp.results(0);
  if (r.code() != 0) {
    return RefusedAction(
        grpc::Status(static_cast<grpc::StatusCode>(r.code()), r.error()));
  }
  return ApiAnswer{.status = 200,
                   .body = json{{"job_id", id},
                                {"action", action},
                                {"outcome", r.unchanged() ? "unchanged" : "done"},
                                {"state", api::JobStateWord(r.state())},
                                {"held", r.held()}}};
}

}  // namespace tiresias
