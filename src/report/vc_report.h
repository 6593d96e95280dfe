// The page `simulate --vcs --out DIR` writes as DIR/vcs.html: per policy,
// the runs without VCs, shared and static as a table, and per VC a bar
// chart of its average queueing delay shared against alone on its quota
// (HiveD's sharing anomaly: a shared bar longer than the private one).
// Self-contained: inline SVG and CSS, no script.
#ifndef TIRESIAS_REPORT_VC_REPORT_H_
#define TIRESIAS_REPORT_VC_REPORT_H_

#include <string>

#include "nlohmann/json.hpp"

namespace tiresias {

// `doc`: the JSON `simulate --vcs --json` prints (trace, cluster, vcs,
// policies.<name>.summaries and .vcs).
std::string VcReportHtml(const nlohmann::json& doc);

}  // namespace tiresias

#endif  // TIRESIAS_REPORT_VC_REPORT_H_
