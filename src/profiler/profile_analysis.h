// From a job's recorded messages (profile_records.h) to its traffic
// profile: the iteration period, bytes and messages per iteration, the
// message-size distribution, the tensor skew S_J (the largest message's
// share of an iteration's bytes) and bytes per peer. Pure: no clock, no
// files.
//
// How. Every connection of every process is a stream of message sizes in
// send order. A training job sends the same messages every iteration, so
// each busy stream repeats: its period is the smallest p such that, over
// at least three periods around the middle of the stream's bytes (its
// start and end may be set-up and teardown), message i and message i + p
// have the same size for 95% of the bytes (small control messages that
// change between iterations do not count against it), and the time from
// message i to message i + p is about one iteration for all of them (the
// shortest 5% by bytes at least a quarter of the mean: chunks of one
// iteration sent together do not make a period of their own). The
// stream's period in seconds is the mean of those times.
// Candidate periods are the distances between occurrences of the stream's
// largest sizes, so a stream is examined in O(candidates x period). The
// period is found on the messages that are not among the smallest 5% of
// its bytes: control messages that come and go between iterations (gloo
// sends a 48-byte notice or not, depending on timing) would shift the
// data out of line. A repetition is then everything from one repetition's
// first message to the next's.
//
// The job's iteration is the period of the stream that repeats the most
// bytes; another repeating stream is part of it when it repeats at the
// same time and one of its periods spans a whole number k of iterations
// (within 35%: iterations vary on a busy machine; it is then divided by
// k). Streams that repeat faster than the iteration or at another time
// (rendezvous polling at start-up) are not.
//
// The skew. A process sends, per iteration, one period of each of its
// streams. In a parameter-server job a worker pushes every tensor once
// (its share of the largest message is the model's skew), while a server
// sends its shard once to each worker: the same stream several times. So
// within a process, streams whose per-iteration messages are the same
// sizes (for 99% of their bytes) are counted once, and the job's skew is
// that of the process whose distinct traffic per iteration is largest (a
// worker; in an all-reduce job, any rank). Every process's own figures are
// kept too.
//
// When no stream repeats, or the repeating streams carry less than half of
// the bytes, the job is not periodic: no skew, period or per-iteration
// figure is given (std::nullopt), and bytes per peer are over everything
// recorded.
#ifndef TIRESIAS_PROFILER_PROFILE_ANALYSIS_H_
#define TIRESIAS_PROFILER_PROFILE_ANALYSIS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/profile_records.h"

namespace tiresias::profiler {

struct PeriodOptions {
  // Share of the compared bytes whose sizes must match at lag p.
  double min_byte_match = 0.95;
  // Share of the compared messages whose sizes must match (a floor, so
  // that a few repeating large messages among chaos do not make a period).
  double min_count_match = 0.5;
  // The shortest lags (time from a message to the same one a period
  // later; the 5th percentile by bytes) must be at least this share of the
  // mean lag: a period is a whole iteration, not a chunk of one.
  double min_lag_share = 0.25;
  // Periods that must be seen at the end of a stream.
  int min_periods = 3;
  size_t max_period = 20000;
};

// A stream's repeating pattern: `messages` sizes repeat over the indexes
// [start, end), one repetition taking `seconds`.
struct Period {
  size_t messages = 0;
  size_t start = 0;
  size_t end = 0;
  double seconds = 0;
};

// The smallest period of `sizes` (bytes of each message, in send order;
// `t_ns` their send times, same length), or nullopt if it has none.
std::optional<Period> FindPeriod(const std::vector<uint64_t>& sizes,
                                 const std::vector<uint64_t>& t_ns,
                                 const PeriodOptions& options = {});

// One connection of one process.
struct StreamProfile {
  int64_t pid = 0;  // of its process
  uint32_t conn = 0;
  std::string kind;  // tcp, unix, verbs; "" if its C line was lost
  // Its far end: "pid N" when that address is a local address of a
  // process in the records (a job profiled on one machine), else the
  // address itself, or "?" if unknown.
  std::string peer;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  // Its repeating region, in indexes of its messages; `messages` is the
  // count of the repetition with the median byte count (repetitions can
  // differ by a few small control messages).
  std::optional<Period> period;
  int repetitions = 0;  // whole repetitions in the region
  // Set when the stream is part of the job's iteration: its period spans
  // this many iterations (1 almost always).
  int iterations_per_period = 0;
  // One repetition (the one with the median byte count): its sizes,
  // largest first, and their sum.
  std::vector<uint64_t> period_sizes;
  uint64_t period_bytes = 0;
};

// A process image (a pid that execs records again as a new one).
struct ProcessProfile {
  int64_t pid = 0;
  std::string command;  // argv joined by spaces
  uint64_t messages = 0;
  uint64_t bytes = 0;
  bool periodic = false;  // has a stream that is part of the iteration
  // Per iteration, every stream; then with streams of the same sizes
  // counted once.
  double bytes_per_iteration = 0;
  double messages_per_iteration = 0;
  double distinct_bytes_per_iteration = 0;
  uint64_t largest_message = 0;
  std::optional<double> tensor_skew;  // largest / distinct bytes
};

struct PeerShare {
  std::string peer;
  double bytes = 0;  // per iteration, or in all when not periodic
  double share = 0;  // of the job's bytes
};

struct SizeCount {
  uint64_t bytes = 0;
  double count = 0;  // per iteration, or in all when not periodic
};

struct Profile {
  bool periodic = false;
  std::string not_periodic_reason;  // set when !periodic
  std::optional<double> tensor_skew;
  std::optional<double> iteration_s;
  std::optional<double> bytes_per_iteration;     // the whole job
  std::optional<double> messages_per_iteration;  // the whole job
  std::optional<int64_t> skew_pid;  // the process the skew comes from
  int iterations_observed = 0;
  // Largest first. Periodic: bytes per iteration to each peer; otherwise
  // all bytes recorded.
  std::vector<PeerShare> peer_byte_shares;
  // Periodic: the sizes the skew process sends per iteration (streams of
  // the same sizes once); otherwise every message recorded. Largest first.
  std::vector<SizeCount> message_sizes;
  // Every process image of the records, in the order of their first
  // record; streams by process, then connection.
  std::vector<ProcessProfile> processes;
  std::vector<StreamProfile> streams;
  // What was recorded.
  uint64_t total_messages = 0;
  uint64_t total_bytes = 0;
  double recorded_s = 0;  // first to last message
  int64_t malformed_lines = 0;
};

Profile Analyze(const Records& records, const PeriodOptions& options = {});

}  // namespace tiresias::profiler

#endif  // TIRESIAS_PROFILER_PROFILE_ANALYSIS_H_
