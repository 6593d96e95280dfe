// Spread slowdowns measured on a real (or emulated) cluster, read from a CSV
// and laid over the simulator's built-in table (perf_model.h), so that a run
// can use measured factors where they exist and the paper's elsewhere:
//
//   tiresias simulate ... --slowdown-file data/spread_slowdown_testbed.csv
//
// Format: a header `model,spread_slowdown,source`, then one row per model;
// '#' lines and blank lines are skipped. `model` must be in the built-in
// table (its name there), `spread_slowdown` a number >= 1 (run time spread
// over servers / run time on one server), `source` free text saying where
// the number comes from (it becomes the row's ModelPerf::source). Models not
// in the file keep their built-in factor and source.
#ifndef TIRESIAS_SIM_SLOWDOWN_FILE_H_
#define TIRESIAS_SIM_SLOWDOWN_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "sim/perf_model.h"

namespace tiresias {

// `base` with the rows of the file at `path` applied. Errors name the file
// and line: "data/x.csv:3: column 'spread_slowdown': expected a number >= 1,
// got \"0.5\"".
absl::StatusOr<ModelTable> ApplySlowdownFile(const ModelTable& base,
                                             const std::string& path);

// The same, from the file's text (`name` is used in error messages).
absl::StatusOr<ModelTable> ApplySlowdownText(const ModelTable& base,
                                             const std::string& text,
                                             const std::string& name);

}  // namespace tiresias

#endif  // TIRESIAS_SIM_SLOWDOWN_FILE_H_
