#include "cli/job_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/node_filter_flags.h"
#include "cli/time_limit.h"
#include "core/to_absl.h"
#include "core/warn_signal.h"
#include "master/job_validation.h"
#include "nlohmann/json.hpp"

namespace tiresias::cli {
namespace {

using Json = nlohmann::json;

constexpr const char* kFields =
    "gpus, command, nodes, gpus_per_node, tasks_per_node, name, env, "
    "checkpoint_dir, chdir (or workdir), output, error, time, signal, "
    "no_preempt, hold, dependency, gpu_type, constraint, nodelist, "
    "exclude, cpus_per_gpu, mem_per_gpu, cpus, mem, exclusive, vc (or "
    "account), qos, image";

// A JSON value for a message: its text, cut to about 40 bytes.
std::string Shown(const Json& value) {
  std::string text =
      value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

absl::StatusOr<std::string> StringField(const Json& value,
                                        absl::string_view field) {
  if (!value.is_string()) {
    return FieldError(field,
                      absl::StrCat("expected a string, got ", Shown(value)));
  }
  return value.get<std::string>();
}

// One line's object as a spec, without the limits (ValidateJobRequest
// checks those after). Errors are "FIELD: what was expected".
absl::StatusOr<JobRequest> SpecFromObject(const Json& object,
                                          const std::string& user,
                                          const std::string& cwd) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a JSON object {\"gpus\": N, \"command\": [...]}, got ",
        Shown(object)));
  }
  JobRequest spec;
  spec.user = user;
  bool has_gpus = false, has_command = false, has_name = false;
  std::string workdir_key;  // "chdir" or "workdir", once given
  NodeFilterFlags filter;   // as strings; nodelist and exclude host lists
  for (const auto& [key, value] : object.items()) {
    if (key == "gpus" || key == "nodes" || key == "gpus_per_node" ||
        key == "tasks_per_node") {
      // 2.0 is a number JSON writers produce for 2; 2.5 is not a count.
      const bool integral =
          value.is_number_integer() ||
          (value.is_number_float() &&
           value.get<double>() == static_cast<double>(static_cast<int64_t>(
                                      value.get<double>())));
      if (!value.is_number() || !integral || value.get<double>() > 1e9 ||
          value.get<double>() < -1e9) {
        return FieldError(key, absl::StrCat("expected a whole number",
                                            key == "gpus" ? " of GPUs" : "",
                                            ", got ", Shown(value)));
      }
      const int number = static_cast<int>(value.get<double>());
      if (key == "gpus") {
        spec.num_gpus = number;
        has_gpus = true;
      } else {
        (key == "nodes"           ? spec.nodes
         : key == "gpus_per_node" ? spec.gpus_per_node
                                  : spec.tasks_per_node) = number;
      }
    } else if (key == "command") {
      if (!value.is_array()) {
        return FieldError(key, absl::StrCat("expected an array of strings "
                                            "(argv), got ",
                                            Shown(value)));
      }
      for (size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_string()) {
          return FieldError(absl::StrCat(key, "[", i, "]"),
                            absl::StrCat("expected a string, got ",
                                         Shown(value[i])));
        }
        spec.command.push_back(value[i].get<std::string>());
      }
      has_command = true;
    } else if (key == "name") {
      auto name = StringField(value, key);
      if (!name.ok()) return name.status();
      spec.name = *std::move(name);
      has_name = true;
    } else if (key == "checkpoint_dir" || key == "vc" || key == "account" ||
               key == "qos" || key == "image") {
      auto text = StringField(value, key);
      if (!text.ok()) return text.status();
      (key == "checkpoint_dir" ? spec.checkpoint_dir
       : key == "qos"          ? spec.qos
       : key == "image"        ? spec.image
                               : spec.vc) = *std::move(text);
    } else if (key == "chdir" || key == "workdir") {
      if (!workdir_key.empty()) {
        return FieldError(key, absl::StrCat("given with ", workdir_key,
                                            ", its other name; give one"));
      }
      workdir_key = key;
      auto dir = StringField(value, key);
      if (!dir.ok()) return dir.status();
      if (dir->empty()) {
        return FieldError(key, "expected a directory, got \"\"");
      }
      if ((*dir)[0] != '/' && cwd.empty()) {
        return FieldError(
            key, absl::StrCat("expected an absolute path, got ", Shown(value)));
      }
      spec.workdir = cwd.empty() ? *std::move(dir) : AbsoluteWorkdir(*dir, cwd);
    } else if (key == "output" || key == "error") {
      auto pattern = StringField(value, key);
      if (!pattern.ok()) return pattern.status();
      (key == "output" ? spec.output : spec.error) = *std::move(pattern);
    } else if (key == "time") {
      auto text = StringField(value, key);
      if (!text.ok()) return text.status();
      absl::StatusOr<double> limit = ParseTimeLimit(key, *text);
      if (!limit.ok()) return limit.status();
      spec.time_limit = Seconds{*limit};
    } else if (key == "signal") {
      auto text = StringField(value, key);
      if (!text.ok()) return text.status();
      absl::StatusOr<WarnSignal> warn = ParseWarnSignal(*text);
      if (!warn.ok()) return FieldError(key, warn.status().message());
      spec.warn = *warn;
    } else if (key == "gpu_type" || key == "constraint" || key == "nodelist" ||
               key == "exclude") {
      auto text = StringField(value, key);
      if (!text.ok()) return text.status();
      (key == "gpu_type"     ? filter.gpu_type
       : key == "constraint" ? filter.constraint
       : key == "nodelist"   ? filter.nodelist
                             : filter.exclude) = *std::move(text);
    } else if (key == "cpus_per_gpu" || key == "mem_per_gpu" || key == "cpus" ||
               key == "mem") {
      // A number, or for memory also Slurm's "16G"; checked with the flags.
      const bool memory = key == "mem_per_gpu" || key == "mem";
      if (!value.is_number_integer() && !value.is_string()) {
        return FieldError(
            key, absl::StrCat("expected a whole number",
                              memory ? " of MiB or a size (16G)" : " of CPUs",
                              ", got ", Shown(value)));
      }
      (key == "cpus_per_gpu"  ? filter.cpus_per_gpu
       : key == "mem_per_gpu" ? filter.mem_per_gpu
       : key == "cpus"        ? filter.cpus
                              : filter.mem) =
          value.is_string() ? value.get<std::string>() : value.dump();
    } else if (key == "dependency") {
      auto text = StringField(value, key);
      if (!text.ok()) return text.status();
      absl::StatusOr<std::vector<JobDependency>> deps =
          ParseDependencies(*text);
      if (!deps.ok()) return FieldError(key, deps.status().message());
      spec.dependencies = *std::move(deps);
    } else if (key == "no_preempt" || key == "hold" || key == "exclusive") {
      if (!value.is_boolean()) {
        return FieldError(key, absl::StrCat("expected true or false, got ",
                                            Shown(value)));
      }
      (key == "hold"        ? spec.hold
       : key == "exclusive" ? filter.exclusive
                            : spec.no_preempt) = value.get<bool>();
    } else if (key == "env") {
      if (!value.is_object()) {
        return FieldError(key, absl::StrCat("expected an object {\"NAME\": "
                                            "\"value\"}, got ",
                                            Shown(value)));
      }
      for (const auto& [name, text] : value.items()) {
        auto one = StringField(text, absl::StrCat("env[\"", name, "\"]"));
        if (!one.ok()) return one.status();
        spec.env[name] = *std::move(one);
      }
    } else if (key == "array") {
      // SubmitJobs writes one job per line (its ids answer the lines):
      // an array is made by SubmitJob alone.
      return FieldError(key, "job arrays are not taken in a --file; submit "
                             "each with `tiresias submit --array`");
    } else {
      return FieldError(key, absl::StrCat("unknown field; expected one of ",
                                          kFields));
    }
  }
  if (!has_gpus && spec.nodes > 0 && spec.gpus_per_node > 0) {
    // Too many for an int is refused by ValidateJobRequest (spec.nodes).
    spec.num_gpus = static_cast<int>(std::min<int64_t>(
        static_cast<int64_t>(spec.nodes) * spec.gpus_per_node, INT32_MAX));
    has_gpus = true;
  }
  if (!has_gpus) {
    return FieldError("gpus",
                      "required (a number of GPUs, or nodes with "
                      "gpus_per_node)");
  }
  if (!has_command) {
    return FieldError("command", "required (an array of strings, argv)");
  }
  if (absl::Status s = ApplyNodeFilter(filter, kNodeFilterFieldNames, &spec);
      !s.ok()) {
    return s;
  }
  if (workdir_key.empty() && !cwd.empty()) spec.workdir = cwd;
  if (!has_name && !spec.command.empty()) {
    spec.name = std::filesystem::path(spec.command[0]).filename().string();
  }
  return spec;
}

// ValidateJobRequest names fields "spec.X"; the file's are plain "X".
std::string WithoutSpecPrefix(absl::string_view message) {
  if (message.rfind("spec.", 0) == 0) message.remove_prefix(5);
  return std::string(message);
}

}  // namespace

std::string AbsoluteWorkdir(std::string_view dir, const std::string& cwd) {
  std::filesystem::path p(dir.empty() ? std::string_view(cwd) : dir);
  if (p.is_relative()) p = std::filesystem::path(cwd) / p;
  std::string out = p.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

absl::StatusOr<std::vector<JobFileEntry>> ParseJobFile(std::string_view text,
                                                       const std::string& path,
                                                       const std::string& user,
                                                       const std::string& cwd) {
  std::vector<JobFileEntry> entries;
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (absl::StripAsciiWhitespace(ToAbsl(line)).empty()) continue;
    auto located = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_number, ": ", what));
    };
    if (entries.size() == kMaxJobsPerFile) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": more than ", kMaxJobsPerFile,
          " jobs (line ", line_number,
          " is one too many); one submission carries at most ",
          kMaxJobsPerFile, ": split the file"));
    }
    Json object = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded()) {
      // Parsed again for the place of the error (rare, so twice is fine).
      std::string detail = "not valid JSON";
      try {
        (void)Json::parse(line);
      } catch (const Json::parse_error& e) {
        detail = absl::StrCat("not valid JSON at byte ", e.byte);
      }
      return located(absl::StrCat(
          detail, "; expected one JSON object per line, e.g. "
                  "{\"gpus\": 1, \"command\": [\"python3\", \"train.py\"]}"));
    }
    absl::StatusOr<JobRequest> spec = SpecFromObject(object, user, cwd);
    if (!spec.ok()) return located(spec.status().message());
    if (absl::Status valid = ValidateJobRequest(*spec); !valid.ok()) {
      return located(WithoutSpecPrefix(valid.message()));
    }
    entries.push_back(JobFileEntry{*std::move(spec), line_number});
  }
  if (entries.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no jobs in the file; expected one JSON object per line, "
              "e.g. {\"gpus\": 1, \"command\": [\"python3\", \"train.py\"]}"));
  }
  return entries;
}

absl::StatusOr<std::vector<JobFileEntry>> ReadJobFile(const std::string& path,
                                                      const std::string& user,
                                                      const std::string& cwd) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin),
                std::istreambuf_iterator<char>());
    if (std::cin.bad()) {
      return absl::FailedPreconditionError(
          "standard input (--file -): cannot read it");
    }
    return ParseJobFile(text, "<stdin>", user, cwd);
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot read it: it is a directory"));
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": cannot read it: ",
        errno != 0 ? std::strerror(errno) : "cannot open"));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot read it: read error"));
  }
  return ParseJobFile(buffer.str(), path, user, cwd);
}

std::string LocateJobError(std::string_view message, const std::string& path,
                           const std::vector<JobFileEntry>& entries) {
  constexpr std::string_view kPrefix = "jobs[";
  if (message.rfind(kPrefix, 0) != 0) return std::string(message);
  const size_t close = message.find(']');
  size_t index = 0;
  if (close == std::string_view::npos ||
      !absl::SimpleAtoi(
          ToAbsl(message.substr(kPrefix.size(), close - kPrefix.size())),
          &index) ||
      index >= entries.size()) {
    return std::string(message);
  }
  std::string_view rest = message.substr(close + 1);
  if (rest.rfind(".", 0) == 0) rest.remove_prefix(1);
  if (rest.rfind(": ", 0) == 0) rest.remove_prefix(2);
  return absl::StrCat(path, ":", entries[index].line, ": ", ToAbsl(rest));
}

}  // namespace tiresias::cli
