// `tiresias tune`'s parts shared by its files: the flags, one tuning round
// (search, judgement, output) and the master side (tune_master.cc).
#ifndef TIRESIAS_CLI_TUNE_ROUND_H_
#define TIRESIAS_CLI_TUNE_ROUND_H_

#include <csignal>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/tune_window.h"
#include "core/topology.h"
#include "tune/tune.h"

namespace tiresias::tune_cli {

// Set by SIGINT/SIGTERM under --auto: no change is sent after it.
extern volatile std::sig_atomic_t g_stop;

struct TuneFlags {
  std::string master;
  std::string trace;
  std::string format = "auto";
  std::string cluster;
  std::string window = "14d";
  double end_hours = -1;  // trace: where the window ends; < 0: its last job
  std::string policy = "tiresias-l";
  std::string thresholds = "3600";
  std::string promote_knob = "inf";
  std::string queue_order = "stable";
  std::string placement;
  std::string search_thresholds;
  std::string search_knobs = "inf,2,4,8,16";
  std::string search_orders = "stable,start-time";
  std::string search_placements;
  std::string search = "halving";
  double holdout = 0.25;
  std::string objective = "avg";
  double slowdown_margin = 0.05;
  double wait_margin = 0.05;
  double p95_margin = 0.05;
  int finalists = 5;
  int threads = 0;
  uint64_t seed = 1;
  int top = 15;
  bool json = false;
  bool apply = false;
  double min_gain = 0.05;
  std::string auto_interval;
};

// What one tuning round found and, when asked, did.
struct Round {
  TuneWindow window;
  TuneResult result;
  double seconds = 0;
  bool would_apply = false;
  std::string why;  // why it is (not) applied
};

// "14d", "36h", "90m", "45s" or seconds; InvalidArgument naming `flag`.
absl::StatusOr<double> ParseSpan(const std::string& flag,
                                 const std::string& text);
// The search's options from the flags (InvalidArgument naming the flag).
absl::StatusOr<TuneOptions> MakeOptions(const TuneFlags& f);
// "+12.3%".
std::string Percent(double fraction);
// Tunes `window` (models drawn with --seed) from `current` over the
// flags' search space, with a progress line on a terminal.
absl::StatusOr<Round> TuneOnce(const TuneFlags& f, const TuneSettings& current,
                               TuneWindow window, const Topology& topology,
                               const TuneOptions& options);
// Whether the chosen settings are worth applying: would_apply, or why not.
void Judge(const TuneFlags& f, Round* r);
// The table (or --json's document) of a round; `where` names the window.
void PrintRound(const TuneFlags& f, const Round& r, const std::string& where,
                const std::string& topology);
// Against the master (tune_master.cc): once, or under --auto for ever.
int TuneMaster(const TuneFlags& f);

}  // namespace tiresias::tune_cli

#endif  // TIRESIAS_CLI_TUNE_ROUND_H_
