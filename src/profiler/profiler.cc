#include "profiler/profiler.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/installed_file.h"
#include "profiler/record_format.h"

namespace tiresias::profiler {
namespace {

namespace fs = std::filesystem;

nlohmann::json Optional(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

std::string Bytes(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) {
    return absl::StrFormat("%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  }
  if (bytes >= 1024.0 * 1024) {
    return absl::StrFormat("%.1f MiB", bytes / (1024.0 * 1024));
  }
  if (bytes >= 1024.0) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  return absl::StrFormat("%.0f B", bytes);
}

// Commands and peers come from the job: nothing in them may drive the
// terminal.
std::string Safe(const std::string& text, size_t limit) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= limit) {
      out += "...";
      break;
    }
    out.push_back(c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c));
  }
  return out;
}

std::string Count(double count) {
  return std::fabs(count - std::round(count)) < 0.05
             ? absl::StrFormat("%.0f", count)
             : absl::StrFormat("%.1f", count);
}

}  // namespace

absl::StatusOr<std::string> FindProfilerLibrary() {
  return FindInstalledFile(kLibraryName, "profiler", "TIRESIAS_PROFILER_LIB");
}

std::vector<std::pair<std::string, std::string>> ProfilerEnvironment(
    const std::string& library, const std::string& out_path,
    const RecordingLimits& limits, const char* existing_preload) {
  std::string preload = library;
  if (existing_preload != nullptr && *existing_preload != '\0') {
    preload = absl::StrCat(library, ":", existing_preload);
  }
  return {
      {"LD_PRELOAD", preload},
      {kOutEnv, out_path},
      {kMaxMessagesEnv, absl::StrCat(limits.max_messages_per_process)},
      {kSecondsEnv, absl::StrFormat("%.3f", limits.seconds_per_process)},
  };
}

uint64_t MaxProfileFileBytes(const RecordingLimits& limits) {
  const uint64_t per_process =
      2 * kMaxRecordLineBytes + kProfileConnections * kMaxRecordLineBytes +
      limits.max_messages_per_process * kMaxMessageLineBytes;
  return kProfileProcesses * per_process;
}

Profile ProfileFromText(absl::string_view text, const PeriodOptions& options) {
  return Analyze(ParseRecords(text), options);
}

absl::StatusOr<Profile> ProfileFromFile(const std::string& path,
                                        const PeriodOptions& options) {
  absl::StatusOr<Records> records = ReadRecordsFile(path);
  if (!records.ok()) return records.status();
  return Analyze(*records, options);
}

nlohmann::json ProfileToJson(const Profile& profile) {
  nlohmann::json j;
  j["periodic"] = profile.periodic;
  if (!profile.periodic) j["not_periodic_reason"] = profile.not_periodic_reason;
  j["tensor_skew"] = Optional(profile.tensor_skew);
  j["iteration_s"] = Optional(profile.iteration_s);
  j["bytes_per_iteration"] = Optional(profile.bytes_per_iteration);
  j["messages_per_iteration"] = Optional(profile.messages_per_iteration);
  j["iterations_observed"] = profile.iterations_observed;
  j["skew_pid"] = profile.skew_pid ? nlohmann::json(*profile.skew_pid)
                                   : nlohmann::json(nullptr);
  j["peer_byte_shares"] = nlohmann::json::array();
  for (const PeerShare& p : profile.peer_byte_shares) {
    j["peer_byte_shares"].push_back(
        {{"peer", p.peer}, {"bytes", p.bytes}, {"share", p.share}});
  }
  j["message_sizes"] = nlohmann::json::array();
  for (const SizeCount& s : profile.message_sizes) {
    j["message_sizes"].push_back({{"bytes", s.bytes}, {"count", s.count}});
  }
  j["processes"] = nlohmann::json::array();
  for (const ProcessProfile& p : profile.processes) {
    j["processes"].push_back({
        {"pid", p.pid},
        {"command", p.command},
        {"messages", p.messages},
        {"bytes", p.bytes},
        {"periodic", p.periodic},
        {"bytes_per_iteration", p.periodic
                                    ? nlohmann::json(p.bytes_per_iteration)
                                    : nlohmann::json(nullptr)},
        {"messages_per_iteration",
         p.periodic ? nlohmann::json(p.messages_per_iteration)
                    : nlohmann::json(nullptr)},
        {"distinct_bytes_per_iteration",
         p.periodic ? nlohmann::json(p.distinct_bytes_per_iteration)
                    : nlohmann::json(nullptr)},
        {"largest_message", p.largest_message},
        {"tensor_skew", Optional(p.tensor_skew)},
    });
  }
  j["connections"] = nlohmann::json::array();
  for (const StreamProfile& s : profile.streams) {
    nlohmann::json c = {{"pid", s.pid},
                        {"conn", s.conn},
                        {"kind", s.kind},
                        {"peer", s.peer},
                        {"messages", s.messages},
                        {"bytes", s.bytes},
                        {"period_messages", nullptr},
                        {"period_s", nullptr},
                        {"iterations_per_period", nullptr}};
    if (s.period) {
      c["period_messages"] = s.period->messages;
      c["repetitions"] = s.repetitions;
      c["period_s"] = s.period->seconds;
      c["period_start"] = s.period->start;
      c["period_bytes"] = s.period_bytes;
    }
    if (s.iterations_per_period > 0) {
      c["iterations_per_period"] = s.iterations_per_period;
    }
    j["connections"].push_back(std::move(c));
  }
  j["recorded"] = {{"messages", profile.total_messages},
                   {"bytes", profile.total_bytes},
                   {"seconds", profile.recorded_s},
                   {"processes", profile.processes.size()},
                   {"connections", profile.streams.size()},
                   {"malformed_lines", profile.malformed_lines}};
  return j;
}

std::string FormatProfile(const Profile& profile) {
  std::string out;
  absl::StrAppendFormat(
      &out, "recorded             %d messages, %s, %d process(es), %.1f s\n",
      profile.total_messages, Bytes(static_cast<double>(profile.total_bytes)),
      profile.processes.size(), profile.recorded_s);
  if (!profile.periodic) {
    absl::StrAppend(
        &out, "periodic             no: ", profile.not_periodic_reason, "\n",
        "tensor skew          - (needs a repeating pattern)\n");
  } else {
    absl::StrAppendFormat(&out,
                          "periodic             yes, %d iterations seen\n",
                          profile.iterations_observed);
    absl::StrAppendFormat(&out, "iteration            %.3f s\n",
                          *profile.iteration_s);
    if (profile.tensor_skew) {
      const ProcessProfile* p = nullptr;
      for (const ProcessProfile& q : profile.processes) {
        if (profile.skew_pid && q.pid == *profile.skew_pid) p = &q;
      }
      absl::StrAppendFormat(&out, "tensor skew          %.3f",
                            *profile.tensor_skew);
      if (p != nullptr) {
        absl::StrAppendFormat(
            &out, "  (largest message %s of %s per iteration, pid %d)",
            Bytes(static_cast<double>(p->largest_message)),
            Bytes(p->distinct_bytes_per_iteration), p->pid);
      }
      out += "\n";
    }
    absl::StrAppendFormat(&out, "bytes per iteration  %s (all processes)\n",
                          Bytes(*profile.bytes_per_iteration));
    absl::StrAppendFormat(&out, "messages/iteration   %s\n",
                          Count(*profile.messages_per_iteration));
  }
  out +=
      "\nPID        MESSAGES         BYTES   BYTES/ITER  MSGS/ITER   SKEW  "
      "COMMAND\n";
  for (const ProcessProfile& p : profile.processes) {
    absl::StrAppendFormat(
        &out, "%-9d %9d %13s %12s %10s %6s  %s\n", p.pid, p.messages,
        Bytes(static_cast<double>(p.bytes)),
        p.periodic ? Bytes(p.bytes_per_iteration) : "-",
        p.periodic ? Count(p.messages_per_iteration) : "-",
        p.tensor_skew ? absl::StrFormat("%.3f", *p.tensor_skew) : "-",
        Safe(p.command, 100));
  }
  absl::StrAppend(&out, "\nPEER                                 ",
                  profile.periodic ? "BYTES/ITER" : "     BYTES", "   SHARE\n");
  for (const PeerShare& p : profile.peer_byte_shares) {
    absl::StrAppendFormat(&out, "%-36s %11s  %5.1f%%\n", Safe(p.peer, 36),
                          Bytes(p.bytes), 100 * p.share);
  }
  absl::StrAppend(
      &out, "\nMESSAGE SIZES",
      profile.periodic && profile.skew_pid
          ? absl::StrCat(" (pid ", *profile.skew_pid, ", per iteration)")
          : std::string(" (all recorded)"),
      "\n        BYTES      COUNT\n");
  size_t shown = 0;
  for (const SizeCount& s : profile.message_sizes) {
    if (++shown > 12) {
      absl::StrAppendFormat(&out, "  ... %d more sizes\n",
                            profile.message_sizes.size() - 12);
      break;
    }
    absl::StrAppendFormat(&out, "%13d %10s\n", s.bytes, Count(s.count));
  }
  return out;
}

}  // namespace tiresias::profiler
