#include "api/job_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/node_filter.h"

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

std::string NodeFilterText(const v1::JobSpec& spec) {
  NodeFilter filter;
  filter.gpu_type = spec.gpu_type();
  // Only its text is shown: no need to parse it.
  filter.constraint_text = spec.constraint();
  if (!spec.constraint().empty()) filter.constraint = {{spec.constraint()}};
  filter.nodelist.assign(spec.nodelist().begin(), spec.nodelist().end());
  filter.exclude.assign(spec.exclude().begin(), spec.exclude().end());
  filter.cpus_per_gpu = spec.cpus_per_gpu();
  filter.mem_per_gpu_mib = spec.mem_per_gpu_mib();
  return filter.Describe();
}

}  // namespace tiresias
