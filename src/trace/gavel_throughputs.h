// Internal to src/trace: Gavel's table of isolated V100 throughputs, from
// which the Gavel reader turns a job's total_steps into a duration.
#ifndef TIRESIAS_TRACE_GAVEL_THROUGHPUTS_H_
#define TIRESIAS_TRACE_GAVEL_THROUGHPUTS_H_

#include <string_view>
#include <vector>

namespace tiresias::trace_internal {

struct GavelThroughput {
  std::string_view job_type;  // e.g. "ResNet-50 (batch size 64)"
  int scale_factor;           // GPUs
  double steps_per_second;    // > 0
};

// 83 rows, sorted by job type then scale factor (1, 2, 4, 8).
const std::vector<GavelThroughput>& GavelV100Throughputs();

}  // namespace tiresias::trace_internal

#endif  // TIRESIAS_TRACE_GAVEL_THROUGHPUTS_H_
