// TiresiasService::GetClusterHistory: the cluster's history as the master
// sampled and stored it (MasterState::ClusterHistory).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "master/service.h"
#include "security/rpc_status.h"

namespace tiresias {
namespace {

constexpr double kDefaultWindowSeconds = 3600;

absl::Status CheckTime(const char* field, double value) {
  if (std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": expected a finite time in Unix seconds"));
}

}  // namespace

grpc::Status TiresiasService::GetClusterHistory(
    grpc::ServerContext* ctx, const v1::GetClusterHistoryRequest* req,
    v1::GetClusterHistoryResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "GetClusterHistory");
  if (!who.ok()) return security::ToGrpc(who.status());
  const double until =
      req->has_until() ? req->until() : state_->NowForHistory().count();
  const double since =
      req->has_since() ? req->since() : until - kDefaultWindowSeconds;
  absl::Status bad = CheckTime("since", since);
  if (bad.ok()) bad = CheckTime("until", until);
  if (bad.ok() && since > until) {
    bad = absl::InvalidArgumentError(absl::StrCat(
        "since: expected at most until (", until, "), got ", since));
  }
  if (bad.ok() &&
      (req->max_points() < 0 || req->max_points() > kMaxHistoryPoints)) {
    bad = absl::InvalidArgumentError(
        absl::StrCat("max_points: expected 0 (the default, ",
                     kDefaultHistoryPoints, ") up to ", kMaxHistoryPoints,
                     ", got ", req->max_points()));
  }
  if (!bad.ok()) return security::ToGrpc(bad);
  const int max_points =
      req->max_points() == 0 ? kDefaultHistoryPoints : req->max_points();
  absl::StatusOr<std::vector<ClusterSample>> samples =
      state_->ClusterHistory(Seconds{since}, Seconds{until}, max_points);
  if (!samples.ok()) return security::ToGrpc(samples.status());
  for (const ClusterSample& s : *samples) {
    v1::ClusterHistoryPoint* p = resp->add_points();
    p->set_time(s.time.count());
    p->set_gpus_busy(s.gpus_busy);
    p->set_gpus_total(s.gpus_total);
    p->set_jobs_waiting(s.jobs_waiting);
    p->set_jobs_running(s.jobs_running);
  }
  resp->set_interval_s(
      std::max(0.0, state_->options().history_interval.count()));
  return grpc::Status::OK;
}

}  // namespace tiresias
