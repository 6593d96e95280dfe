// What `tiresias simulate` (simulate.h) takes from its flags: the trace,
// the cluster, the base configuration and the policies, each checked with
// an error naming the flag; and the parameters its outputs record.
#ifndef TIRESIAS_CLI_SIMULATE_INPUTS_H_
#define TIRESIAS_CLI_SIMULATE_INPUTS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job.h"
#include "core/topology.h"
#include "sim/engine.h"

namespace tiresias::simulate {

// The flags, as given (AddSimulateCommand in simulate.cc declares them).
struct Flags {
  std::string trace;
  std::string format = "auto";
  std::string cluster;
  std::string policies = "tiresias-l,yarn-cs";
  std::string placement;
  std::string baseline = "yarn-cs";
  std::string thresholds;
  bool original_simulator = false;
  std::string promote_knob = "inf";
  std::string queue_order = "stable";
  std::string gittins_samples;
  std::string gittins_index = "paper";
  double arrival_scale = 1.0;
  uint64_t seed = 1;
  std::string out;
  bool json = false;
  bool no_preemption_cost = false;
  bool no_placement_slowdown = false;
  std::string slowdown_file;
  double pack_limit = 0.5;
  bool learn_pack_limit = false;
  int pack_limit_refresh = 10;
  double pack_limit_cost = 0.10;
  double short_threshold = 800;
  double warmup_hours = 0;
  std::vector<std::string> sweeps;
  int threads = 0;
  std::string vcs;
};

// What the flags name, read and checked.
struct Inputs {
  std::vector<JobSpec> jobs;  // as read
  Topology topology;          // --cluster's
  SimConfig base;
  std::vector<std::string> policies;
  std::vector<std::string> trace_notes;  // rows the reader left out, why
};

// Reads the trace and the cluster and builds the base configuration:
// InvalidArgument (or the reader's error, with its file and line) for
// anything a flag gets wrong.
absl::StatusOr<Inputs> LoadInputs(const Flags& f);

// The settings every run shares, as summary.json records them.
nlohmann::json Parameters(const Flags& f, const SimConfig& base);

}  // namespace tiresias::simulate

#endif  // TIRESIAS_CLI_SIMULATE_INPUTS_H_
