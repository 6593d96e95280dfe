// End-to-end tests of `tiresias simulate`'s outputs: the table, the --json
// contract, the --out folder and its determinism, sweeps, jobs larger than
// the cluster, and --original-simulator. All on the 60-job trace, which
// simulates in milliseconds.
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_format.h"
#include "cli_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using json = nlohmann::json;

// The rows of a table printed by `simulate`: the header's words and each
// data row's words. The header is the line whose words include "policy";
// the rows are the non-blank lines after it.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

Table ParseTable(const std::string& out) {
  Table table;
  bool in_table = false;
  for (const std::string& line : Lines(out)) {
    std::vector<std::string> words = Words(line);
    if (!in_table) {
      if (std::find(words.begin(), words.end(), "policy") != words.end()) {
        table.header = std::move(words);
        in_table = true;
      }
      continue;
    }
    if (words.empty()) break;
    table.rows.push_back(std::move(words));
  }
  return table;
}

// Durations in the table hold a blank ("4.1 min"), so a column is found by
// its place from the end of the line; the trailing columns are one word.
int FromEnd(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(header.size() - i);
  }
  return 0;
}

class SimulateOutputTest : public CliTest {};

TEST_F(SimulateOutputTest, TableHasOneRowPerPolicyNormalizedByBaseline) {
  const std::vector<std::string> args = {"simulate",
                                         "--trace",
                                         trace_60_,
                                         "--cluster",
                                         "4x4",
                                         "--policy",
                                         "tiresias-l,yarn-cs,srtf"};
  const ProcessResult run = Tiresias(args);
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_EQ(run.err, "");
  EXPECT_THAT(run.out, HasSubstr("60 jobs"));
  EXPECT_THAT(run.out, HasSubstr("16 GPUs"));

  const Table table = ParseTable(run.out);
  ASSERT_FALSE(table.header.empty()) << "no header row\n" << run.out;
  EXPECT_EQ(table.header[0], "policy");
  const int avg_col = FromEnd(table.header, "avg/yarn-cs");
  ASSERT_GT(avg_col, 0) << "no avg/yarn-cs column\n" << run.out;
  ASSERT_EQ(table.rows.size(), 3u) << run.out;
  std::vector<std::string> names;
  for (const auto& row : table.rows) names.push_back(row[0]);
  EXPECT_THAT(names, ElementsAre("tiresias-l", "yarn-cs", "srtf"));

  // The ratios agree with the JSON numbers they are computed from.
  std::vector<std::string> json_args(args.begin() + 1, args.end());
  json doc = SimulateJson(json_args);
  ASSERT_EQ(doc["policies"].size(), 3u);
  const double base = doc["policies"][1]["avg_jct_s"].get<double>();
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const auto& row = table.rows[i];
    ASSERT_GE(row.size(), static_cast<size_t>(avg_col)) << row[0];
    EXPECT_EQ(row[2], "60") << row[0] << ": jobs column";
    const double ratio = doc["policies"][i]["avg_jct_s"].get<double>() / base;
    EXPECT_EQ(row[row.size() - avg_col], absl::StrFormat("%.2f", ratio))
        << row[0];
  }
  EXPECT_EQ(table.rows[1][table.rows[1].size() - avg_col], "1.00");
}

TEST_F(SimulateOutputTest, JsonHoldsTheContractFields) {
  json doc = SimulateJson({"--trace", trace_60_, "--cluster", "4x4", "--policy",
                           "tiresias-l,tiresias-g,yarn-cs,fifo,sjf,srtf",
                           "--seed", "7"});
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(doc["trace"], trace_60_);
  EXPECT_EQ(doc["cluster"]["servers"], 4);
  EXPECT_EQ(doc["cluster"]["gpus"], 16);
  EXPECT_EQ(doc["seed"], 7);
  EXPECT_EQ(doc["excluded_jobs"], 0);
  ASSERT_TRUE(doc["policies"].is_array());
  ASSERT_EQ(doc["policies"].size(), 6u);

  const std::set<std::string> non_preemptive = {"yarn-cs", "fifo", "sjf"};
  for (json p : doc["policies"]) {
    ASSERT_TRUE(p["name"].is_string()) << p.dump();
    const std::string name = p["name"];
    SCOPED_TRACE(name);
    for (const char* key : {"avg_jct_s", "median_jct_s", "p95_jct_s",
                            "max_jct_s", "avg_queueing_s", "makespan_s",
                            "preemption_overhead_s", "gpu_utilization"}) {
      ASSERT_TRUE(p[key].is_number()) << key << " in " << p.dump();
    }
    ASSERT_TRUE(p["preemptions"].is_number_integer());
    EXPECT_EQ(p["jobs"], 60);
    const double avg = p["avg_jct_s"], median = p["median_jct_s"],
                 p95 = p["p95_jct_s"], max = p["max_jct_s"];
    EXPECT_GT(avg, 0);
    EXPECT_GE(avg, p["avg_queueing_s"].get<double>());
    EXPECT_GE(p["avg_queueing_s"].get<double>(), 0);
    EXPECT_LE(median, p95);
    EXPECT_LE(p95, max);
    EXPECT_LE(avg, max);
    EXPECT_LE(max, p["makespan_s"].get<double>());
    EXPECT_GT(p["gpu_utilization"].get<double>(), 0);
    EXPECT_LE(p["gpu_utilization"].get<double>(), 1);
    EXPECT_GE(p["preemption_overhead_s"].get<double>(), 0);
    if (non_preemptive.contains(name)) {
      EXPECT_EQ(p["preemptions"], 0);
      EXPECT_EQ(p["preemption_overhead_s"], 0);
    }
    int binned = 0;
    for (const char* bin : {"SS", "SL", "LS", "LL"}) {
      ASSERT_TRUE(p["bins"][bin]["jobs"].is_number_integer())
          << bin << " in " << p["bins"].dump();
      binned += p["bins"][bin]["jobs"].get<int>();
    }
    EXPECT_EQ(binned, 60);
  }
}

// --learn-pack-limit: the runs under `profiled` (tiresias-l) report the
// learnt PACKLIMIT, the others (yarn-cs: consolidate) do not; the table
// has a footer line for it. The 60-job trace's models (drawn from the
// built-in table) put it between GoogleNet (0.146) and AlexNet (0.618).
TEST_F(SimulateOutputTest, LearntPackLimitIsInTheJsonAndTheTableFooter) {
  const std::vector<std::string> args = {
      "--trace", trace_60_, "--cluster", "4x4", "--policy",
      "tiresias-l,yarn-cs", "--learn-pack-limit", "--pack-limit", "0.8"};
  json doc = SimulateJson(args);
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(doc["parameters"]["learn_pack_limit"], true);
  EXPECT_EQ(doc["parameters"]["pack_limit"], 0.8);
  json learnt = doc["policies"][0]["pack_limit"];
  ASSERT_TRUE(learnt.is_object()) << doc["policies"][0].dump();
  EXPECT_EQ(learnt["samples"], 60);
  EXPECT_EQ(learnt["fit"], "fitted");
  EXPECT_GT(learnt["learnt"].get<double>(), 0.146);
  EXPECT_LT(learnt["learnt"].get<double>(), 0.618);
  EXPECT_FALSE(doc["policies"][1].contains("pack_limit"));

  std::vector<std::string> table_args = {"simulate"};
  table_args.insert(table_args.end(), args.begin(), args.end());
  const ProcessResult run = Tiresias(table_args);
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_NE(run.out.find("tiresias-l: learnt PACKLIMIT 0."), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("from 60 samples (fitted"), std::string::npos);
}

TEST_F(SimulateOutputTest, OutFolderHoldsReportCsvsAndTheJsonSummary) {
  const fs::path out = dir_ / "out";
  const ProcessResult run = Tiresias(
      {"simulate", "--trace", trace_60_, "--cluster", "4x4", "--policy",
       "tiresias-l,yarn-cs", "--out", out.string(), "--json"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  for (const char* file : {"summary.json", "report.html", "tiresias-l_jobs.csv",
                           "tiresias-l_timeseries.csv", "yarn-cs_jobs.csv",
                           "yarn-cs_timeseries.csv"}) {
    EXPECT_TRUE(fs::is_regular_file(out / file)) << file;
  }
  for (const char* policy : {"tiresias-l", "yarn-cs"}) {
    const std::vector<std::string> jobs =
        Lines(ReadFile(out / (std::string(policy) + "_jobs.csv")));
    ASSERT_EQ(jobs.size(), 61u) << policy << ": a header and one row a job";
    EXPECT_THAT(jobs[0], StartsWith("id,"));
    EXPECT_GE(
        Lines(ReadFile(out / (std::string(policy) + "_timeseries.csv"))).size(),
        2u)
        << policy;
  }
  // --json prints the same summary that --out writes.
  EXPECT_EQ(ReadFile(out / "summary.json"), run.out);
  EXPECT_THAT(ReadFile(out / "report.html"), HasSubstr("<canvas"));
}

TEST_F(SimulateOutputTest, SameCommandGivesIdenticalOutputsAndSeedMatters) {
  // Each run happens in its own folder with the same relative --out, so
  // even the recorded command line is the same.
  auto run_in = [&](const std::string& name, const std::string& seed) {
    const fs::path cwd = MakeDir(name);
    const ProcessResult run =
        Tiresias({"simulate", "--trace", trace_60_, "--cluster", "4x4",
                  "--policy", "tiresias-l,tiresias-g,yarn-cs", "--placement",
                  "random", "--seed", seed, "--out", "out"},
                 cwd);
    EXPECT_EQ(run.exit_code, 0) << Describe(run);
    return cwd / "out";
  };
  const fs::path a = run_in("a", "1");
  const fs::path b = run_in("b", "1");
  const fs::path c = run_in("c", "2");
  const std::string summary = ReadFile(a / "summary.json");
  ASSERT_FALSE(summary.empty());
  EXPECT_EQ(summary, ReadFile(b / "summary.json"));
  for (const char* file : {"tiresias-l_jobs.csv", "tiresias-g_jobs.csv",
                           "yarn-cs_jobs.csv", "yarn-cs_timeseries.csv"}) {
    EXPECT_EQ(ReadFile(a / file), ReadFile(b / file)) << file;
  }
  // Not only the recorded seed: the results themselves differ.
  json one = json::parse(summary);
  json two = json::parse(ReadFile(c / "summary.json"));
  EXPECT_EQ(two["seed"], 2);
  EXPECT_NE(one["policies"], two["policies"]);
}

TEST_F(SimulateOutputTest, SweepRunsEveryCombination) {
  const std::vector<std::string> args = {"--trace",   trace_60_,
                                         "--cluster", "4x4",
                                         "--policy",  "tiresias-l,yarn-cs",
                                         "--sweep",   "knob=inf,2",
                                         "--sweep",   "thresholds=1800,3600"};
  std::vector<std::string> table_args = args;
  table_args.insert(table_args.begin(), "simulate");
  const ProcessResult run = Tiresias(table_args);
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  const Table table = ParseTable(run.out);
  ASSERT_GE(table.header.size(), 3u) << run.out;
  EXPECT_EQ(table.header[0], "promote-knob");  // `knob` is its other name
  EXPECT_EQ(table.header[1], "thresholds");
  // Tiresias-L at each of the 4 points; YARN-CS, which has no queues, once,
  // with "-" for the keys that do not matter to it.
  ASSERT_EQ(table.rows.size(), 5u) << run.out;
  std::set<std::tuple<std::string, std::string, std::string>> points;
  for (const auto& row : table.rows) {
    ASSERT_GE(row.size(), 3u);
    points.insert({row[0], row[1], row[2]});
    if (row[2] == "yarn-cs") {
      EXPECT_EQ(row[0], "-");
      EXPECT_EQ(row[1], "-");
      EXPECT_EQ(row.back(), "1.00");
    }
  }
  EXPECT_EQ(points.size(), 5u) << "a combination is missing or repeated";

  json doc = SimulateJson(args);
  ASSERT_TRUE(doc["sweep"].is_array()) << doc.dump(2);
  ASSERT_EQ(doc["sweep"].size(), 8u);
  std::map<std::string, double> tiresias_avg;  // by thresholds, knob inf
  std::set<double> yarn_avg;
  for (json entry : doc["sweep"]) {
    ASSERT_TRUE(entry["settings"].is_object()) << entry.dump();
    ASSERT_TRUE(entry["summary"].is_object()) << entry.dump();
    json s = entry["summary"];
    EXPECT_EQ(s["jobs"], 60);
    const std::string knob = entry["settings"]["promote-knob"];
    const std::string thresholds = entry["settings"]["thresholds"];
    if (s["name"] == "yarn-cs") yarn_avg.insert(s["avg_jct_s"].get<double>());
    if (s["name"] == "tiresias-l" && knob == "inf") {
      tiresias_avg[thresholds] = s["avg_jct_s"];
    }
  }
  // YARN-CS has no queues, so the settings leave it alone (it ran once, the
  // other three points say which run they are); Tiresias-L's queue bound
  // does change its schedule.
  EXPECT_EQ(yarn_avg.size(), 1u);
  int shared = 0;
  for (const json& entry : doc["sweep"]) shared += !entry["same_as"].is_null();
  EXPECT_EQ(shared, 3);
  ASSERT_EQ(tiresias_avg.size(), 2u);
  EXPECT_NE(tiresias_avg["1800"], tiresias_avg["3600"]);
}

// Seeds and clusters can be swept; --out gets sweep.json, sweep.csv (one
// row per run that ran) and sweep.html (a canvas per metric); a K-queue
// list has one syntax, with colons, and a comma in --thresholds is refused.
TEST_F(SimulateOutputTest, SweepsSeedAndClusterAndWritesPlots) {
  const fs::path out = dir_ / "sweep";
  const ProcessResult run = Tiresias(
      {"simulate", "--trace", trace_60_, "--cluster", "4x4", "--policy",
       "tiresias-l,yarn-cs", "--sweep", "seed=1,2", "--sweep",
       "cluster=4x4,8x4", "--sweep", "thresholds=1800,1800:3600", "--out",
       out.string()});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  // tiresias-l: 2 x 2 x 2 = 8 runs; yarn-cs: 2 x 2 (thresholds ignored).
  const std::vector<std::string> csv = Lines(ReadFile(out / "sweep.csv"));
  ASSERT_EQ(csv.size(), 1u + 8u + 4u) << ReadFile(out / "sweep.csv");
  EXPECT_THAT(csv[0], StartsWith("seed,cluster,thresholds,policy,placement,"));
  json doc = json::parse(ReadFile(out / "sweep.json"));
  ASSERT_EQ(doc["sweep"].size(), 16u);
  std::map<std::string, std::set<double>> yarn_by_cluster;
  for (const json& e : doc["sweep"]) {
    if (e["summary"]["name"] == "yarn-cs" && e["settings"]["seed"] == "1") {
      yarn_by_cluster[e["settings"]["cluster"]].insert(
          e["summary"]["avg_jct_s"].get<double>());
    }
  }
  ASSERT_EQ(yarn_by_cluster.size(), 2u);
  EXPECT_NE(*yarn_by_cluster["4x4"].begin(), *yarn_by_cluster["8x4"].begin())
      << "a larger cluster should change the schedule";
  const std::string html = ReadFile(out / "sweep.html");
  for (int i = 0; i < 8; ++i) {
    EXPECT_THAT(html, HasSubstr("<canvas id=\"sweep-" + std::to_string(i)));
  }
  EXPECT_THAT(html, HasSubstr("mean of 2 seeds"));

  const ProcessResult comma =
      Tiresias({"simulate", "--trace", trace_60_, "--cluster", "4x4",
                "--thresholds", "3250,7200"});
  EXPECT_NE(comma.exit_code, 0);
  EXPECT_THAT(comma.err, HasSubstr("separate a K-queue list's thresholds "
                                   "with ':', e.g. 3250:7200"));
}

// Jobs of data/60_job.csv that need more than `gpus` GPUs, counted here.
int JobsWiderThan(const std::string& trace, int gpus) {
  int count = 0;
  const std::vector<std::string> lines = Lines(ReadFile(trace));
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t a = lines[i].find(',');
    if (a == std::string::npos) continue;
    count += std::stoi(lines[i].substr(a + 1)) > gpus;
  }
  return count;
}

TEST_F(SimulateOutputTest, JobsLargerThanTheClusterAreExcludedAndCounted) {
  const int wide = JobsWiderThan(trace_60_, 4);
  ASSERT_GT(wide, 0) << "the trace should hold jobs of more than 4 GPUs";
  const ProcessResult run = Tiresias(
      {"simulate", "--trace", trace_60_, "--cluster", "1x4", "--json"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_THAT(run.err, StartsWith("tiresias: "));
  EXPECT_THAT(run.err, HasSubstr(std::to_string(wide) + " jobs"));
  EXPECT_THAT(run.err, HasSubstr("excluded"));
  json doc = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << Describe(run);
  EXPECT_EQ(doc["excluded_jobs"], wide);
  EXPECT_EQ(doc["cluster"]["gpus"], 4);
  ASSERT_FALSE(doc["policies"].empty());
  for (json p : doc["policies"]) EXPECT_EQ(p["jobs"], 60 - wide);
}

TEST_F(SimulateOutputTest, OriginalSimulatorUsesItsThresholdsAndPlacement) {
  json doc = SimulateJson(
      {"--trace", trace_60_, "--cluster", "4x4", "--original-simulator"});
  ASSERT_FALSE(doc.empty());
  json params = doc["parameters"];
  EXPECT_EQ(params["thresholds_gpu_s"], json({3250, 7200})) << params.dump();
  EXPECT_EQ(params["placement"], "count");
  EXPECT_EQ(params["preemption_cost"], false);
  EXPECT_EQ(params["placement_slowdown"], false);
  ASSERT_FALSE(doc["policies"].empty());
  for (json p : doc["policies"]) EXPECT_EQ(p["placement"], "count");

  // An explicit flag still wins over the preset.
  json custom = SimulateJson({"--trace", trace_60_, "--cluster", "4x4",
                              "--original-simulator", "--thresholds", "1800"});
  EXPECT_EQ(custom["parameters"]["thresholds_gpu_s"], json({1800}));
  // Without the flag: the paper's single one-hour bound.
  json plain = SimulateJson({"--trace", trace_60_, "--cluster", "4x4"});
  EXPECT_EQ(plain["parameters"]["thresholds_gpu_s"], json({3600}));
}

// Gandiva runs beside the scheduler's policies, with its own placement,
// and on the 60-job trace ends every job when the original simulator's
// gandiva does (simulator/run_sim.py --scheme gandiva --schedule gandiva):
// on 32 servers x 4 GPUs average JCT 11,152 / 60 s, p95 306 s, makespan
// 3,289 s; on 2 x 4 (busy) 47,231 / 60 s, p95 3,465 s, makespan 4,879 s.
TEST_F(SimulateOutputTest, GandivaMatchesTheOriginalOnThe60JobTrace) {
  json doc = SimulateJson({"--trace", trace_60_, "--cluster",
                           DataFile("n32g4.csv"), "--policy",
                           "gandiva,yarn-cs", "--original-simulator"});
  ASSERT_EQ(doc["policies"].size(), 2u) << doc.dump();
  json g = doc["policies"][0];
  EXPECT_EQ(g["name"], "gandiva");
  EXPECT_EQ(g["placement"], "node-sets");
  EXPECT_EQ(g["jobs"], 60);
  EXPECT_NEAR(g["avg_jct_s"].get<double>(), 11152.0 / 60, 1e-9);
  EXPECT_DOUBLE_EQ(g["p95_jct_s"].get<double>(), 306);
  EXPECT_DOUBLE_EQ(g["makespan_s"].get<double>(), 3289);
  EXPECT_EQ(doc["policies"][1]["placement"], "count");

  json busy = SimulateJson({"--trace", trace_60_, "--cluster", "2x4",
                            "--policy", "gandiva", "--original-simulator"});
  ASSERT_EQ(busy["policies"].size(), 1u) << busy.dump();
  g = busy["policies"][0];
  EXPECT_NEAR(g["avg_jct_s"].get<double>(), 47231.0 / 60, 1e-9);
  EXPECT_DOUBLE_EQ(g["p95_jct_s"].get<double>(), 3465);
  EXPECT_DOUBLE_EQ(g["makespan_s"].get<double>(), 4879);
}

}  // namespace
}  // namespace tiresias::cli_test

namespace tiresias::cli_test {
namespace {

// `simulate --vcs from-trace` on a small Philly-format trace of two
// tenants: the three runs per policy (without VCs, shared, each alone),
// the per-VC rows, and --out's files.
TEST_F(SimulateOutputTest, VirtualClustersFromTheTracesTenants) {
  const fs::path trace = MakeDir("inputs") / "tenants.csv";
  {
    std::ofstream out(trace);
    out << "timestamp,duration,num_gpus,gpu_time,cluster\n";
    for (int i = 0; i < 40; ++i) {
      // Tenant a: 30 jobs of 2 GPUs, b: 10 of 1, all 30 minutes long.
      out << "2017-10-09 07:" << (10 + i) << ":00,1800," << (i % 4 == 3 ? 1 : 2)
          << ",0," << (i % 4 == 3 ? "b" : "a") << "\n";
    }
  }
  json doc = SimulateJson({"--trace", trace.string(), "--cluster", "2x4",
                           "--vcs", "from-trace", "--policy", "tiresias-l"});
  ASSERT_EQ(doc["vcs"].size(), 2u);
  EXPECT_EQ(doc["vcs"][0]["name"], "a");
  // a: 6/7 of the GPU time, 6.86 of 8 GPUs: 6, and the GPU left over (its
  // remainder is the larger); b: 1.14, 1.
  EXPECT_EQ(doc["vcs"][0]["cells"], "1x4,1x2,1x1");
  EXPECT_EQ(doc["vcs"][1]["cells"], "1x1");
  const json& entry = doc["policies"]["tiresias-l"];
  ASSERT_EQ(entry["summaries"].size(), 3u);
  EXPECT_EQ(entry["summaries"][0]["name"], "tiresias-l");
  EXPECT_EQ(entry["summaries"][1]["name"], "tiresias-l+vcs");
  EXPECT_EQ(entry["summaries"][2]["name"], "tiresias-l/static");
  for (const json& s : entry["summaries"]) EXPECT_EQ(s["jobs"], 40);
  ASSERT_EQ(entry["vcs"].size(), 2u);
  EXPECT_EQ(entry["vcs"][0]["jobs"], 30);
  EXPECT_EQ(entry["vcs"][1]["private_jobs"], 10);
  EXPECT_TRUE(entry["vcs"][1].contains("anomaly_s"));

  const fs::path cwd = MakeDir("cwd");
  const ProcessResult run = Tiresias(
      {"simulate", "--trace", trace.string(), "--cluster", "2x4", "--vcs",
       "from-trace", "--policy", "tiresias-l", "--out", "out"},
      cwd);
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_THAT(run.out, HasSubstr("tiresias-l+vcs"));
  EXPECT_THAT(run.out, HasSubstr("VCs wait longer shared than alone"));
  EXPECT_EQ(Lines(ReadFile(cwd / "out" / "vcs.csv")).size(), 3u);
  EXPECT_TRUE(fs::exists(cwd / "out" / "vcs.json"));
  EXPECT_THAT(ReadFile(cwd / "out" / "vcs.html"), HasSubstr("data-vc=\"b\""));
}

}  // namespace
}  // namespace tiresias::cli_test
