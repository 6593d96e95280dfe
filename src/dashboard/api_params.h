// The query parameters of the dashboard's /api endpoints that take some
// (dashboard_server.h): /api/jobs (filters and paging), /api/history (a time
// window) and /api/jobs/ID/log (where to read from), checked before the
// master is asked. A bad value is an InvalidArgument that names the
// parameter and says what was expected; the server answers it with 400.
// Pure.
#ifndef TIRESIAS_DASHBOARD_API_PARAMS_H_
#define TIRESIAS_DASHBOARD_API_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

// A request's query parameters in order, decoded (repeats kept).
using QueryParams = std::vector<std::pair<std::string, std::string>>;

// /api/jobs?state=&user=&name=&vc=&page_size=&page_token=
struct JobsParams {
  // Lower-case state as the JSON shows it ("pending", ..., "timeout"); empty:
  // any.
  std::string state;
  std::string user;  // exactly; empty: any
  std::string name;  // exactly; empty: any
  std::string vc;    // its virtual cluster, exactly; empty: any
  int page_size = 50;  // 1 .. 500
  std::string page_token;  // the previous answer's next_page_token; "" first
};
absl::StatusOr<JobsParams> ParseJobsParams(const QueryParams& params);

// /api/history?since=&until=&max_points= (Unix seconds).
struct HistoryParams {
  std::optional<double> since;  // absent: an hour before until
  std::optional<double> until;  // absent: now
  int max_points = 500;         // 1 .. 10000
};
absl::StatusOr<HistoryParams> ParseHistoryParams(const QueryParams& params);

// /api/jobs/ID/log?offset=&attempt=&rank=
struct LogParams {
  int64_t offset = 0;  // >= 0
  int attempt = 0;     // 0: the current launch
  int rank = 0;        // >= 0
};
absl::StatusOr<LogParams> ParseLogParams(const QueryParams& params);

// The job states /api/jobs?state= takes, in the order the page lists them.
const std::vector<std::string>& JobStateNames();

}  // namespace tiresias

#endif  // TIRESIAS_DASHBOARD_API_PARAMS_H_
