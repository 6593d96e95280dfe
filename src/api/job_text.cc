#include "api/job_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tiresias {

std::string FormatJobProfile(const v1::Job& job) {
  if (!job.has_profile()) return "not measured yet (placed as skewed)";
  const v1::TrafficProfile& p = job.profile();
  const std::string from =
      p.measured_job_id() != 0 && p.measured_job_id() != job.id()
          ? absl::StrCat(" (from job ", p.measured_job_id(), ")")
          : "";
  if (!p.periodic()) return absl::StrCat("not periodic: no skew", from);
  return absl::StrFormat(
      "tensor skew %.4f, iteration %s, %s bytes per iteration, periodic%s",
      p.tensor_skew(),
      p.has_iteration_s() ? absl::StrFormat("%.4f s", p.iteration_s()) : "-",
      p.has_bytes_per_iteration()
          ? absl::StrFormat("%.0f", p.bytes_per_iteration())
          : "-",
      from);
}

}  // namespace tiresias
