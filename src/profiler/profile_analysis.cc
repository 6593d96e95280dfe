#include "profiler/profile_analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tiresias::profiler {
namespace {

// Sizes tried as anchors of a period, largest first, and distances tried
// per anchor.
constexpr int kMaxAnchors = 4;
constexpr size_t kMaxCandidates = 4000;
// Candidates whose sizes repeat but whose timing is then checked, per
// anchor: equal messages at irregular times (all sizes repeat at every
// distance) must not cost a timing check each.
constexpr int kMaxTimingChecks = 64;

// Prefix sums of x, for quick upper bounds on a range's bytes.
std::vector<uint64_t> PrefixSums(const std::vector<uint64_t>& x) {
  std::vector<uint64_t> sums(x.size() + 1, 0);
  for (size_t i = 0; i < x.size(); ++i) sums[i + 1] = sums[i] + x[i];
  return sums;
}

// Whether messages i in [from, to) match messages i + p well enough.
bool BlockMatches(const std::vector<uint64_t>& x,
                  const std::vector<uint64_t>& sums, size_t p, size_t from,
                  size_t to, const PeriodOptions& options) {
  if (to <= from) return false;
  // Bytes compared are at most both ranges' bytes: a bound that lets a
  // wrong p fail after a few mismatches.
  const double bound = static_cast<double>(sums[to] - sums[from]) +
                       static_cast<double>(sums[to + p] - sums[from + p]);
  const double byte_budget = (1 - options.min_byte_match) * bound;
  const double count_budget =
      (1 - options.min_count_match) * static_cast<double>(to - from);
  double total = 0;
  double bad = 0;
  double bad_count = 0;
  for (size_t i = from; i < to; ++i) {
    const double w = static_cast<double>(std::max(x[i], x[i + p]));
    total += w;
    if (x[i] != x[i + p]) {
      bad += w;
      bad_count += 1;
      if (bad > byte_budget || bad_count > count_budget) return false;
    }
  }
  return total > 0 && bad <= (1 - options.min_byte_match) * total;
}

// The largest region [start, end) around `anchor` over which messages
// repeat with period p, grown a period at a time both ways from the
// period that starts at `anchor` (or the last one that fits).
std::optional<std::pair<size_t, size_t>> GrowRegion(
    const std::vector<uint64_t>& x, const std::vector<uint64_t>& sums, size_t p,
    size_t anchor, const PeriodOptions& options) {
  const size_t n = x.size();
  if (2 * p > n) return std::nullopt;
  const size_t base = std::min(anchor, n - 2 * p);
  if (!BlockMatches(x, sums, p, base, base + p, options)) return std::nullopt;
  size_t start = base;
  while (start >= p && BlockMatches(x, sums, p, start - p, start, options)) {
    start -= p;
  }
  size_t compared = base + p;  // messages before this were compared
  while (compared + 2 * p <= n &&
         BlockMatches(x, sums, p, compared, compared + p, options)) {
    compared += p;
  }
  return std::make_pair(start, compared + p);
}

// The byte-weighted mean of the lag times (from a message to the same one
// a period later) of matched messages in [from, to), if they are the lags
// of whole iterations: the shortest (the 5th percentile by bytes) at least
// min_lag_share of the mean. A period shorter than the iteration (one
// chunk of eight sent together) has most lags within a burst and a few
// across the computation between iterations; a true one has every lag
// about an iteration long, however much iterations vary. (The mean: two
// streams over the same iterations agree on it; their medians need not.)
std::optional<double> RegularLag(const std::vector<uint64_t>& x,
                                 const std::vector<uint64_t>& t, size_t p,
                                 size_t from, size_t to,
                                 const PeriodOptions& options) {
  std::vector<std::pair<double, double>> lags;  // (seconds, bytes)
  double total = 0;
  double mean = 0;
  for (size_t i = from; i < to; ++i) {
    if (x[i] != x[i + p]) continue;
    const double lag =
        t[i + p] >= t[i] ? static_cast<double>(t[i + p] - t[i]) * 1e-9 : 0;
    const double w = static_cast<double>(x[i]);
    lags.emplace_back(lag, w);
    total += w;
    mean += lag * w;
  }
  if (lags.empty() || total <= 0 || mean <= 0) return std::nullopt;
  mean /= total;
  std::sort(lags.begin(), lags.end());
  double seen = 0;
  for (const auto& [lag, w] : lags) {
    seen += w;
    if (seen >= 0.05 * total) {
      if (lag < options.min_lag_share * mean) return std::nullopt;
      break;
    }
  }
  return mean;
}

std::string Address(const std::string& address) {
  return address.empty() ? "?" : address;
}

// Labels the far end of each connection: a process of the records when
// its address is one of theirs.
class PeerLabels {
 public:
  explicit PeerLabels(const Records& records) {
    for (const ConnectionRecord& c : records.connections) {
      if (c.local.empty() || c.kind == "verbs") continue;
      const int64_t pid = records.processes[c.process].pid;
      auto [it, inserted] = owner_.emplace(c.local, pid);
      if (!inserted && it->second != pid) it->second = -1;  // ambiguous
    }
  }

  std::string Label(const ConnectionRecord* c) const {
    if (c == nullptr) return "?";
    if (c->peer.empty() && c->kind == "unix") return "unix (unnamed)";
    if (auto it = owner_.find(c->peer);
        !c->peer.empty() && it != owner_.end() && it->second > 0) {
      return absl::StrCat("pid ", it->second);
    }
    return Address(c->peer);
  }

 private:
  absl::flat_hash_map<std::string, int64_t> owner_;  // local address -> pid
};

struct StreamData {
  std::vector<uint64_t> sizes;
  std::vector<uint64_t> t_ns;
};

// The size below which a stream's messages are left out of finding its
// period: the smallest sizes, as long as they carry at most 5% of its
// bytes. Control messages (gloo's 48-byte notices) come and go between
// iterations and would shift the data messages out of line.
uint64_t SmallMessageCut(std::vector<uint64_t> sizes) {
  std::sort(sizes.begin(), sizes.end());
  double total = 0;
  for (uint64_t s : sizes) total += static_cast<double>(s);
  double small = 0;
  for (size_t i = 0; i < sizes.size();) {
    size_t j = i;
    double bytes = 0;
    while (j < sizes.size() && sizes[j] == sizes[i])
      bytes += static_cast<double>(sizes[j++]);
    if (small + bytes > 0.05 * total) return sizes[i];
    small += bytes;
    i = j;
  }
  return 0;
}

// Finds the stream's period on its messages of at least SmallMessageCut
// bytes, then takes its repetitions whole (small messages included): each
// runs from one repetition's first such message to the next's. Fills
// period (in indexes of all its messages; `messages` is the repetition's
// with the median byte count), repetitions, period_sizes and period_bytes.
void AnalyzeStream(const StreamData& data, const PeriodOptions& options,
                   StreamProfile* stream) {
  const uint64_t cut = SmallMessageCut(data.sizes);
  std::vector<size_t> index;  // of the messages the period is found on
  std::vector<uint64_t> sizes, times;
  for (size_t i = 0; i < data.sizes.size(); ++i) {
    if (data.sizes[i] < cut) continue;
    index.push_back(i);
    sizes.push_back(data.sizes[i]);
    times.push_back(data.t_ns[i]);
  }
  const std::optional<Period> found = FindPeriod(sizes, times, options);
  if (!found) return;
  // Repetition j: [index[first_j], index[first_j + p]); the last one in
  // the region ends after its last message found.
  std::vector<std::pair<uint64_t, size_t>> sums;  // (bytes, begin)
  std::vector<size_t> ends;
  for (size_t f = found->start; f + found->messages <= found->end;
       f += found->messages) {
    const size_t begin = index[f];
    const size_t end = f + found->messages < index.size()
                           ? index[f + found->messages]
                           : index[f + found->messages - 1] + 1;
    uint64_t sum = 0;
    for (size_t i = begin; i < end; ++i) sum += data.sizes[i];
    sums.emplace_back(sum, begin);
    ends.push_back(end);
  }
  if (sums.size() < 2) return;
  const size_t region_end = ends.back();
  std::vector<size_t> order(sums.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&sums](size_t a, size_t b) { return sums[a] < sums[b]; });
  const size_t median = order[order.size() / 2];
  const size_t begin = sums[median].second;
  const size_t end = ends[median];
  stream->period =
      Period{end - begin, index[found->start], region_end, found->seconds};
  stream->repetitions = static_cast<int>(sums.size());
  stream->period_bytes = sums[median].first;
  stream->period_sizes.assign(data.sizes.begin() + static_cast<long>(begin),
                              data.sizes.begin() + static_cast<long>(end));
  std::sort(stream->period_sizes.rbegin(), stream->period_sizes.rend());
}

// How many iterations (the reference's period) one period of a stream
// spans: the ratio of their periods (mean lags, each over its own
// repeating region), if it is close to a whole number >= 1 and the two
// regions overlap in time; else 0 (a stream that repeats faster than the
// iteration, or at another time, such as rendezvous polling at start-up).
// Iterations vary (a busy machine, a few iterations seen): within 35%.
int IterationsPerPeriod(const StreamProfile& mine, const StreamData& my_data,
                        const StreamProfile& reference,
                        const StreamData& reference_data) {
  const Period& a = *mine.period;
  const Period& b = *reference.period;
  const uint64_t a_first = my_data.t_ns[a.start];
  const uint64_t a_last = my_data.t_ns[a.end - 1];
  const uint64_t b_first = reference_data.t_ns[b.start];
  const uint64_t b_last = reference_data.t_ns[b.end - 1];
  if (a_last < b_first || b_last < a_first || b.seconds <= 0) return 0;
  const double k = a.seconds / b.seconds;
  const double whole = std::round(k);
  if (whole < 1 || std::fabs(k - whole) > 0.35 * whole) return 0;
  return static_cast<int>(whole);
}

std::vector<SizeCount> Histogram(const std::map<uint64_t, double>& counts) {
  std::vector<SizeCount> sizes;
  for (auto it = counts.rbegin(); it != counts.rend(); ++it) {
    sizes.push_back(SizeCount{it->first, it->second});
  }
  return sizes;
}

std::vector<PeerShare> Shares(const std::map<std::string, double>& by_peer) {
  double total = 0;
  for (const auto& [peer, bytes] : by_peer) total += bytes;
  std::vector<PeerShare> shares;
  for (const auto& [peer, bytes] : by_peer) {
    shares.push_back(PeerShare{peer, bytes, total > 0 ? bytes / total : 0});
  }
  std::stable_sort(
      shares.begin(), shares.end(),
      [](const PeerShare& a, const PeerShare& b) { return a.bytes > b.bytes; });
  return shares;
}

// Bytes two repetitions have in common (sizes sorted largest first).
uint64_t CommonBytes(const std::vector<uint64_t>& a,
                     const std::vector<uint64_t>& b) {
  uint64_t common = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] == b[j]) {
      common += a[i];
      ++i;
      ++j;
    } else if (a[i] > b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return common;
}

// Whether two streams carry the same data per iteration: the same sizes
// for 99% of their bytes (small control messages may differ).
bool SameData(const StreamProfile& a, const StreamProfile& b) {
  if (a.iterations_per_period != b.iterations_per_period) return false;
  const double common =
      static_cast<double>(CommonBytes(a.period_sizes, b.period_sizes));
  return common >=
         0.99 * static_cast<double>(std::max(a.period_bytes, b.period_bytes));
}

// Per-process figures from its streams that are part of the iteration.
// Streams that carry the same data (a server sending its shard to each
// worker) count once in the distinct bytes.
void FillProcess(const std::vector<const StreamProfile*>& members,
                 ProcessProfile* process,
                 std::map<uint64_t, double>* distinct_sizes) {
  std::vector<const StreamProfile*> kept;
  for (const StreamProfile* s : members) {
    const double k = s->iterations_per_period;
    process->periodic = true;
    process->bytes_per_iteration += static_cast<double>(s->period_bytes) / k;
    process->messages_per_iteration +=
        static_cast<double>(s->period_sizes.size()) / k;
    process->largest_message =
        std::max(process->largest_message, s->period_sizes.front());
    bool duplicate = false;
    for (const StreamProfile* other : kept) duplicate |= SameData(*s, *other);
    if (duplicate) continue;
    kept.push_back(s);
    process->distinct_bytes_per_iteration +=
        static_cast<double>(s->period_bytes) / k;
    for (uint64_t size : s->period_sizes) (*distinct_sizes)[size] += 1 / k;
  }
  if (process->distinct_bytes_per_iteration > 0) {
    process->tensor_skew = static_cast<double>(process->largest_message) /
                           process->distinct_bytes_per_iteration;
  }
}

}  // namespace

std::optional<Period> FindPeriod(const std::vector<uint64_t>& sizes,
                                 const std::vector<uint64_t>& t_ns,
                                 const PeriodOptions& options) {
  const size_t n = std::min(sizes.size(), t_ns.size());
  const size_t periods = static_cast<size_t>(std::max(options.min_periods, 2));
  if (n < periods) return std::nullopt;
  const std::vector<uint64_t> sums = PrefixSums(sizes);
  // The middle of the stream by bytes: if it repeats, it repeats there
  // (its start and end may be set-up and teardown).
  size_t middle = 0;
  while (middle + 1 < n && sums[middle + 1] * 2 < sums[n]) ++middle;

  // Where each size occurs; anchors are the largest sizes that occur
  // often enough to repeat.
  std::map<uint64_t, std::vector<size_t>> where;
  for (size_t i = 0; i < n; ++i) where[sizes[i]].push_back(i);
  int anchors = 0;
  for (auto it = where.rbegin(); it != where.rend() && anchors < kMaxAnchors;
       ++it) {
    const std::vector<size_t>& at = it->second;
    if (at.size() < periods) continue;
    ++anchors;
    // The occurrence nearest the middle, and the distances to the others:
    // the period is one of them.
    const size_t r =
        *std::min_element(at.begin(), at.end(), [middle](size_t a, size_t b) {
          return (a > middle ? a - middle : middle - a) <
                 (b > middle ? b - middle : middle - b);
        });
    std::vector<size_t> candidates;
    for (size_t o : at) {
      if (o != r) candidates.push_back(o > r ? o - r : r - o);
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()),
                     candidates.end());
    if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);
    int timing_checks = 0;
    for (size_t p : candidates) {
      if (p > options.max_period || periods * p > n) break;
      const std::optional<std::pair<size_t, size_t>> region =
          GrowRegion(sizes, sums, p, r, options);
      if (!region || region->second - region->first < periods * p) continue;
      if (++timing_checks > kMaxTimingChecks) break;
      const std::optional<double> lag = RegularLag(
          sizes, t_ns, p, region->first, region->second - p, options);
      if (!lag) continue;
      return Period{p, region->first, region->second, *lag};
    }
  }
  return std::nullopt;
}

Profile Analyze(const Records& records, const PeriodOptions& options) {
  Profile profile;
  profile.malformed_lines = records.malformed_lines;
  const PeerLabels labels(records);

  // Streams, by (pid, conn), messages in the order each process sent them.
  std::map<std::pair<size_t, uint32_t>, size_t> index;  // -> data
  std::vector<StreamData> data;
  uint64_t first_ns = UINT64_MAX;
  uint64_t last_ns = 0;
  for (const MessageRecord& m : records.messages) {
    auto [it, inserted] =
        index.emplace(std::make_pair(m.process, m.conn), data.size());
    if (inserted) data.emplace_back();
    data[it->second].sizes.push_back(m.bytes);
    data[it->second].t_ns.push_back(m.t_ns);
    profile.total_messages += 1;
    profile.total_bytes += m.bytes;
    first_ns = std::min(first_ns, m.t_ns);
    last_ns = std::max(last_ns, m.t_ns);
  }
  if (last_ns > first_ns) {
    profile.recorded_s = static_cast<double>(last_ns - first_ns) * 1e-9;
  }
  std::map<std::pair<size_t, uint32_t>, const ConnectionRecord*> conns;
  for (const ConnectionRecord& c : records.connections) {
    conns[{c.process, c.conn}] = &c;
  }

  // Each stream's period. `index` is ordered, so streams are by process
  // (in order of their first record), then connection.
  std::vector<StreamData> ordered;
  std::vector<size_t> stream_process;
  for (const auto& [key, i] : index) {
    StreamProfile stream;
    stream.pid = records.processes[key.first].pid;
    stream_process.push_back(key.first);
    stream.conn = key.second;
    auto c = conns.find(key);
    const ConnectionRecord* conn = c == conns.end() ? nullptr : c->second;
    stream.kind = conn != nullptr ? conn->kind : "";
    stream.peer = labels.Label(conn);
    stream.messages = data[i].sizes.size();
    for (uint64_t b : data[i].sizes) stream.bytes += b;
    AnalyzeStream(data[i], options, &stream);
    profile.streams.push_back(std::move(stream));
    ordered.push_back(std::move(data[i]));
  }

  // The iteration is the period of the stream that repeats the most bytes
  // (the reference); the other repeating streams are part of it if their
  // period spans a whole number of its repetitions.
  std::optional<size_t> reference;
  double reference_bytes = 0;
  std::vector<double> region_bytes(profile.streams.size(), 0);
  for (size_t s = 0; s < profile.streams.size(); ++s) {
    const std::optional<Period>& period = profile.streams[s].period;
    if (!period) continue;
    for (size_t i = period->start; i < period->end; ++i) {
      region_bytes[s] += static_cast<double>(ordered[s].sizes[i]);
    }
    if (!reference || region_bytes[s] > reference_bytes) {
      reference = s;
      reference_bytes = region_bytes[s];
    }
  }
  double iteration = 0;
  double periodic_bytes = 0;
  int iterations_seen = 0;
  if (reference) {
    const StreamProfile& ref = profile.streams[*reference];
    iteration = ref.period->seconds;
    iterations_seen = ref.repetitions;
    for (size_t s = 0; s < profile.streams.size(); ++s) {
      StreamProfile& stream = profile.streams[s];
      if (!stream.period) continue;
      stream.iterations_per_period =
          IterationsPerPeriod(stream, ordered[s], ref, ordered[*reference]);
      if (stream.iterations_per_period > 0) periodic_bytes += region_bytes[s];
    }
  }

  // Processes (images), in the order of their first record.
  std::vector<ProcessProfile> processes(records.processes.size());
  for (size_t i = 0; i < records.processes.size(); ++i) {
    processes[i].pid = records.processes[i].pid;
    processes[i].command = absl::StrJoin(records.processes[i].argv, " ");
  }
  std::vector<std::vector<const StreamProfile*>> members(processes.size());
  for (size_t s = 0; s < profile.streams.size(); ++s) {
    const StreamProfile& stream = profile.streams[s];
    ProcessProfile& process = processes[stream_process[s]];
    process.messages += stream.messages;
    process.bytes += stream.bytes;
    if (stream.iterations_per_period > 0) {
      members[stream_process[s]].push_back(&stream);
    }
  }
  std::vector<std::map<uint64_t, double>> distinct_sizes(processes.size());
  for (size_t i = 0; i < processes.size(); ++i) {
    FillProcess(members[i], &processes[i], &distinct_sizes[i]);
  }

  const bool any = periodic_bytes > 0;
  if (!any || periodic_bytes * 2 < static_cast<double>(profile.total_bytes)) {
    profile.periodic = false;
    if (profile.total_messages == 0) {
      profile.not_periodic_reason = "no messages were recorded";
    } else if (!any) {
      profile.not_periodic_reason =
          "no connection repeats a pattern of messages";
    } else {
      profile.not_periodic_reason = absl::StrCat(
          "the repeating connections carry only ",
          static_cast<int>(100 * periodic_bytes /
                           static_cast<double>(profile.total_bytes)),
          "% of the bytes");
    }
    std::map<std::string, double> by_peer;
    std::map<uint64_t, double> sizes;
    for (size_t s = 0; s < profile.streams.size(); ++s) {
      by_peer[profile.streams[s].peer] +=
          static_cast<double>(profile.streams[s].bytes);
      for (uint64_t b : ordered[s].sizes) sizes[b] += 1;
    }
    profile.peer_byte_shares = Shares(by_peer);
    profile.message_sizes = Histogram(sizes);
    for (ProcessProfile& process : processes) {
      process.periodic = false;
      process.tensor_skew.reset();
      profile.processes.push_back(process);
    }
    return profile;
  }

  profile.periodic = true;
  profile.iteration_s = iteration;
  profile.iterations_observed = iterations_seen;
  double bytes = 0;
  double messages = 0;
  std::map<std::string, double> by_peer;
  for (const StreamProfile& stream : profile.streams) {
    if (stream.iterations_per_period == 0) continue;
    const double k = stream.iterations_per_period;
    bytes += static_cast<double>(stream.period_bytes) / k;
    messages += static_cast<double>(stream.period_sizes.size()) / k;
    by_peer[stream.peer] += static_cast<double>(stream.period_bytes) / k;
  }
  profile.bytes_per_iteration = bytes;
  profile.messages_per_iteration = messages;
  profile.peer_byte_shares = Shares(by_peer);

  // The skew comes from the process with the most distinct bytes per
  // iteration (the first such, on a tie).
  std::optional<size_t> skew_process;
  for (size_t i = 0; i < processes.size(); ++i) {
    if (processes[i].tensor_skew &&
        (!skew_process ||
         processes[i].distinct_bytes_per_iteration >
             processes[*skew_process].distinct_bytes_per_iteration)) {
      skew_process = i;
    }
  }
  if (skew_process) {
    profile.tensor_skew = processes[*skew_process].tensor_skew;
    profile.skew_pid = processes[*skew_process].pid;
    profile.message_sizes = Histogram(distinct_sizes[*skew_process]);
  }
  profile.processes = std::move(processes);
  return profile;
}

}  // namespace tiresias::profiler
