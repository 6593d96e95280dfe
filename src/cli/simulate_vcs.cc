#include "cli/simulate_vcs.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/progress.h"
#include "core/status_macros.h"
#include "report/files.h"
#include "report/html_format.h"
#include "report/summary_output.h"
#include "report/vc_report.h"
#include "sim/vc_runs.h"

namespace tiresias {
namespace {

struct Runs {
  // Per policy: without VCs, shared, and per VC alone (absent: no quota).
  struct ForPolicy {
    std::string policy;
    absl::StatusOr<SimResult> flat = absl::UnknownError("not run");
    absl::StatusOr<SimResult> shared = absl::UnknownError("not run");
    std::vector<std::unique_ptr<absl::StatusOr<SimResult>>> privates;
  };
  std::vector<ForPolicy> policies;
};

absl::Status CheckTenants(const std::vector<JobSpec>& jobs,
                          const std::vector<VcSpec>& vcs,
                          const std::string& file) {
  absl::flat_hash_set<std::string> known;
  for (const VcSpec& vc : vcs) known.insert(vc.name);
  std::map<std::string, int64_t> unknown;
  for (const JobSpec& job : jobs) {
    if (!job.vc.empty() && !known.contains(job.vc)) ++unknown[job.vc];
  }
  if (unknown.empty()) return absl::OkStatus();
  std::vector<std::string> parts;
  for (const auto& [name, n] : unknown) {
    parts.push_back(absl::StrCat(name, " (", n, " jobs)"));
    if (parts.size() == 5) break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      file, ": the trace's tenants ", absl::StrJoin(parts, ", "),
      unknown.size() > 5 ? ", ..." : "", " have no virtual cluster there"));
}

std::string Hours(double seconds) {
  return absl::StrFormat("%.2f h", seconds / 3600);
}

std::string FormatVcTable(const std::vector<VcRow>& rows) {
  int name_w = 2, cells_w = 5;
  for (const VcRow& r : rows) {
    name_w = std::max(name_w, static_cast<int>(r.name.size()));
    cells_w = std::max(cells_w, static_cast<int>(r.cells.size()));
  }
  std::string out = absl::StrFormat(
      "%-*s %-*s %5s %6s %7s | %-37s | %s\n", name_w, "VC", cells_w, "quota",
      "GPUs", "share", "jobs", "avg queueing: shared (-private)  private",
      "avg JCT: shared  private");
  for (const VcRow& r : rows) {
    std::string priv = "-", anomaly = "no quota", priv_jct = "-";
    if (r.has_private) {
      priv = Hours(r.private_avg_queueing_s);
      priv_jct = Hours(r.private_avg_jct_s);
      anomaly =
          absl::StrFormat("%s%+.2f h", r.anomaly_s() > 0 ? "ANOMALY " : "",
                          r.anomaly_s() / 3600);
    }
    absl::StrAppendFormat(
        &out, "%-*s %-*s %5d %5.1f%% %7d | %9s (%-15s) %9s | %9s %9s\n", name_w,
        r.name, cells_w, r.cells.empty() ? "-" : r.cells, r.quota_gpus,
        100 * r.demand_share, r.jobs, Hours(r.shared_avg_queueing_s), anomaly,
        priv, Hours(r.shared_avg_jct_s), priv_jct);
  }
  out +=
      "(shared: every job of the VC; private, and the difference in "
      "parentheses: the jobs that fit its private cluster, shared minus "
      "private over those same jobs)\n";
  return out;
}

std::string VcCsv(const std::vector<std::pair<std::string, VcRow>>& rows) {
  std::string out =
      "policy,vc,cells,quota_gpus,demand_share,jobs,shared_avg_jct_s,"
      "shared_avg_queueing_s,private_jobs,private_avg_jct_s,"
      "private_avg_queueing_s,shared_same_avg_queueing_s,anomaly_s\n";
  for (const auto& [policy, r] : rows) {
    absl::StrAppend(&out, policy, ",", r.name, ",\"", r.cells, "\",",
                    r.quota_gpus, ",", r.demand_share, ",", r.jobs, ",",
                    r.shared_avg_jct_s, ",", r.shared_avg_queueing_s, ",");
    if (r.has_private) {
      absl::StrAppend(&out, r.private_jobs, ",", r.private_avg_jct_s, ",",
                      r.private_avg_queueing_s, ",",
                      r.shared_same_avg_queueing_s, ",", r.anomaly_s(), "\n");
    } else {
      out += ",,,,\n";
    }
  }
  return out;
}

}  // namespace

absl::Status SimulateVcs(VcSimulation sim) {
  std::vector<VcSpec> vcs;
  if (sim.vcs == "from-trace") {
    ASSIGN_OR_RETURN(vcs, VcsFromTrace(&sim.jobs, sim.topology));
  } else {
    ASSIGN_OR_RETURN(vcs, ReadVcFile(sim.vcs));
    RETURN_IF_ERROR(CheckTenants(sim.jobs, vcs, sim.vcs));
    RETURN_IF_ERROR(CheckVcsFit(vcs, sim.topology));
  }
  // Each VC's private cluster and the jobs of it that fit there.
  std::vector<std::optional<Topology>> own(vcs.size());
  std::vector<std::vector<JobSpec>> own_jobs(vcs.size());
  for (size_t v = 0; v < vcs.size(); ++v) {
    if (vcs[v].cells.empty()) continue;
    ASSIGN_OR_RETURN(own[v], PrivateTopology(vcs[v]));
    own_jobs[v] = JobsOf(sim.jobs, vcs[v].name);
    if (v == 0) {
      // Jobs without a tenant belong to the first VC.
      for (const JobSpec& job : sim.jobs) {
        if (job.vc.empty()) own_jobs[v].push_back(job);
      }
    }
    RemoveUnfittable(&own_jobs[v], *own[v]);
  }
  Runs runs;
  std::vector<std::function<void()>> tasks;
  runs.policies.resize(sim.policies.size());
  for (size_t p = 0; p < sim.policies.size(); ++p) {
    Runs::ForPolicy& r = runs.policies[p];
    r.policy = sim.policies[p];
    SimConfig config = sim.base;
    config.policy = r.policy;
    tasks.push_back([&sim, &r, config] {
      r.flat = Simulate(sim.jobs, sim.topology, config);
    });
    tasks.push_back([&sim, &r, config, &vcs] {
      SimConfig shared = config;
      shared.vcs = vcs;
      r.shared = Simulate(sim.jobs, sim.topology, shared);
    });
    for (size_t v = 0; v < vcs.size(); ++v) {
      r.privates.push_back(
          std::make_unique<absl::StatusOr<SimResult>>(absl::UnknownError("")));
      if (!own[v]) continue;
      absl::StatusOr<SimResult>* slot = r.privates.back().get();
      tasks.push_back([slot, config, &own, &own_jobs, v] {
        *slot = Simulate(own_jobs[v], *own[v], config);
      });
    }
  }
  std::atomic<size_t> next{0};
  std::atomic<int> done{0};
  {
    ProgressLine line([&] {
      return absl::StrFormat(
          "simulating: %d of %d runs done (shared, "
          "without VCs, each VC alone)",
          done.load(), tasks.size());
    });
    auto worker = [&] {
      for (size_t i = next++; i < tasks.size(); i = next++) {
        tasks[i]();
        ++done;
      }
    };
    std::vector<std::thread> pool;
    const int threads =
        std::max(1, std::min<int>(sim.threads, static_cast<int>(tasks.size())));
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  }

  std::vector<Summary> summaries;
  std::vector<std::pair<std::string, VcRow>> csv_rows;
  nlohmann::json doc = {{"trace", sim.trace},
                        {"cluster", sim.topology.Describe()},
                        {"vcs_source", sim.vcs}};
  for (const VcSpec& vc : vcs) {
    doc["vcs"].push_back({{"name", vc.name},
                          {"cells", CellsText(vc.cells)},
                          {"quota_gpus", vc.quota_gpus()},
                          {"weight", vc.weight}});
  }
  std::string text = absl::StrFormat(
      "trace %s: %s jobs; cluster %s; %d virtual clusters (%s)\n", sim.trace,
      FormatCount(sim.jobs.size()), sim.topology.Describe(), vcs.size(),
      sim.vcs == "from-trace" ? "quotas from each tenant's share of the "
                                "trace's GPU time"
                              : sim.vcs);
  for (Runs::ForPolicy& r : runs.policies) {
    if (!r.flat.ok()) return r.flat.status();
    if (!r.shared.ok()) return r.shared.status();
    std::vector<const SimResult*> privates;
    for (size_t v = 0; v < vcs.size(); ++v) {
      if (!own[v]) {
        privates.push_back(nullptr);
        continue;
      }
      if (!r.privates[v]->ok()) return r.privates[v]->status();
      privates.push_back(&**r.privates[v]);
    }
    int quota = 0;
    for (const VcSpec& vc : vcs) quota += vc.quota_gpus();
    SimResult merged =
        MergeResults(privates, absl::StrCat(r.policy, "/static"), quota);
    r.shared->policy = absl::StrCat(r.policy, "+vcs");
    std::vector<Summary> three = {Summarize(*r.flat, sim.bins, sim.warmup_s),
                                  Summarize(*r.shared, sim.bins, sim.warmup_s),
                                  Summarize(merged, sim.bins, sim.warmup_s)};
    const std::vector<VcRow> rows =
        CompareVcs(vcs, sim.jobs, *r.shared, privates);
    int anomalies = 0;
    for (const VcRow& row : rows) {
      anomalies += row.has_private && row.anomaly_s() > 0;
      csv_rows.push_back({r.policy, row});
    }
    nlohmann::json& entry = doc["policies"][r.policy];
    for (const Summary& s : three) entry["summaries"].push_back(PolicyJson(s));
    for (const VcRow& row : rows) {
      nlohmann::json j = {{"name", row.name},
                          {"cells", row.cells},
                          {"quota_gpus", row.quota_gpus},
                          {"demand_share", row.demand_share},
                          {"jobs", row.jobs},
                          {"shared_avg_jct_s", row.shared_avg_jct_s},
                          {"shared_avg_queueing_s", row.shared_avg_queueing_s}};
      if (row.has_private) {
        j["private_jobs"] = row.private_jobs;
        j["private_avg_jct_s"] = row.private_avg_jct_s;
        j["private_avg_queueing_s"] = row.private_avg_queueing_s;
        j["shared_same_avg_queueing_s"] = row.shared_same_avg_queueing_s;
        j["anomaly_s"] = row.anomaly_s();
      }
      entry["vcs"].push_back(std::move(j));
    }
    entry["vcs_with_anomaly"] = anomalies;
    absl::StrAppend(&text, "\n", r.policy,
                    ": without VCs, shared by VCs (+vcs), and each VC alone "
                    "on its quota (/static)\n",
                    FormatSummaryTable(three, r.policy), "\n",
                    FormatVcTable(rows),
                    absl::StrFormat("%d of %d VCs wait longer shared than "
                                    "alone on their quota\n",
                                    anomalies, vcs.size()));
    summaries.insert(summaries.end(), three.begin(), three.end());
  }
  if (!sim.out.empty()) {
    RETURN_IF_ERROR(EnsureFolder(sim.out));
    RETURN_IF_ERROR(WriteFileAtomically(sim.out + "/vcs.csv", VcCsv(csv_rows)));
    RETURN_IF_ERROR(
        WriteFileAtomically(sim.out + "/summary.csv", SummaryCsv(summaries)));
    RETURN_IF_ERROR(
        WriteFileAtomically(sim.out + "/vcs.json", doc.dump(2) + "\n"));
    RETURN_IF_ERROR(
        WriteFileAtomically(sim.out + "/vcs.html", VcReportHtml(doc)));
  }
  std::fputs(sim.json ? (doc.dump(2) + "\n").c_str() : text.c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace tiresias
