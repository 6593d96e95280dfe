#include "cli/node_filter_flags.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/shell_help.h"
#include "core/memory_size.h"
#include "core/node_filter.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "master/job_limits.h"

namespace tiresias::cli {

namespace {

absl::Status Bad(std::string_view field, std::string_view text,
                 std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(ToAbsl(field), " \"", ToAbsl(text), "\": ", ToAbsl(what)));
}

constexpr absl::string_view kExpected =
    "expected node names joined by ',', or a prefix with [numbers and "
    "ranges] (gpu[01-04,07])";

}  // namespace

namespace {

// --cpus and --mem (see ApplyNodeFilter).
absl::Status ApplyJobResources(const NodeFilterFlags& flags,
                               const NodeFilterFlags& names, JobRequest* spec) {
  spec->cpus = 0;
  spec->mem_mib = 0;
  const int gpus = spec->num_gpus;
  if (gpus == 0 && flags.cpus.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(names.cpus),
                     ": required for a job without GPUs (a CPU-only "
                     "job)"));
  }
  for (const auto& [all, per_gpu, all_name, per_gpu_name] :
       {std::tuple{&flags.cpus, &flags.cpus_per_gpu, &names.cpus,
                   &names.cpus_per_gpu},
        std::tuple{&flags.mem, &flags.mem_per_gpu, &names.mem,
                   &names.mem_per_gpu}}) {
    if (!all->empty() && !per_gpu->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          ToAbsl(*all_name), " and ", ToAbsl(*per_gpu_name), ": give one (",
          ToAbsl(*all_name), " is the job's in all)"));
    }
    if (gpus == 0 && !per_gpu->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(ToAbsl(*per_gpu_name), ": a job without GPUs asks with ",
                       ToAbsl(*all_name)));
    }
  }
  if (!flags.cpus.empty()) {
    int cpus = 0;
    if (!absl::SimpleAtoi(ToAbsl(flags.cpus), &cpus) || cpus < 1 ||
        cpus > job_limits::kMaxCpusPerGpu) {
      return absl::InvalidArgumentError(absl::StrCat(
          ToAbsl(names.cpus), ": expected a whole number of CPUs, 1 to ",
          job_limits::kMaxCpusPerGpu, ", got \"", ToAbsl(flags.cpus), "\""));
    }
    if (gpus == 0) {
      spec->cpus = cpus;
    } else if (gpus > 0) {
      spec->cpus_per_gpu = (cpus + gpus - 1) / gpus;
    }
  }
  if (!flags.mem.empty()) {
    ASSIGN_OR_RETURN(int64_t bytes, ParseMemorySize(names.mem, flags.mem));
    const int64_t mib = (bytes + (int64_t{1} << 20) - 1) >> 20;
    if (bytes < (int64_t{1} << 20) || mib > job_limits::kMaxMemPerGpuMib) {
      return absl::InvalidArgumentError(
          absl::StrCat(ToAbsl(names.mem), ": expected 1M to ",
                       job_limits::kMaxMemPerGpuMib >> 10, "G, got \"",
                       ToAbsl(flags.mem), "\""));
    }
    if (gpus == 0) {
      spec->mem_mib = mib;
    } else if (gpus > 0) {
      spec->mem_per_gpu_mib = (mib + gpus - 1) / gpus;
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddNodeFilterFlags(CLI::App* cmd, NodeFilterFlags* flags) {
  cmd->add_option("--gpu-type", flags->gpu_type,
                  "Run only on nodes whose GPU model has this word, case "
                  "ignored (a100 matches 'NVIDIA A100-SXM4-80GB'; `tiresias "
                  "nodes` shows each node's model)");
  cmd->add_option("--constraint,-C", flags->constraint,
                  "Run only on nodes with these features (agent --feature), "
                  "as Slurm writes them: ib&nvme (both), a|b (either), "
                  "'&' binding tighter");
  cmd->add_option("--nodelist,-w", flags->nodelist,
                  "Run only on these nodes (some of them, as many as the "
                  "job needs): names joined by ',' or a Slurm host list, "
                  "gpu[01-04]")
      ->type_name(cli::kNodeType);
  cmd->add_option("--exclude,-x", flags->exclude,
                  "Never run on these nodes (same form as --nodelist)")
      ->type_name(cli::kNodeType);
  cmd->add_option("--cpus-per-gpu", flags->cpus_per_gpu,
                  "CPUs the job needs with each GPU. Each GPU of a node "
                  "carries an equal slice of its CPUs and memory (`tiresias "
                  "nodes`); the job goes only where a slice holds this many, "
                  "and is bound to them. Default: the node's slice");
  cmd->add_option("--mem-per-gpu", flags->mem_per_gpu,
                  "Memory the job needs with each GPU, as Slurm's SIZE (16G, "
                  "512M, MiB without a unit): placed only where a GPU's "
                  "slice holds it, and killed (out of memory) past it. "
                  "Default: the node's --mem-per-gpu limit");
  cmd->add_option("--cpus,--cpus-per-task,-c", flags->cpus,
                  "CPUs the job needs in all. With --gpus 0 a CPU-only job "
                  "(data preparation, evaluation): it runs on one node's "
                  "spare CPUs (agent --spare-cpus), in a first-come queue "
                  "of its own that never waits for nor preempts GPU jobs. "
                  "With GPUs: --cpus-per-gpu of this over them, rounded up");
  cmd->add_option("--mem", flags->mem,
                  "Memory the job needs in all (Slurm's SIZE: 16G, 512M, "
                  "MiB without a unit); killed (out of memory) past it. "
                  "With --gpus 0: on its node's spare memory (default: the "
                  "spare CPUs' share); with GPUs: --mem-per-gpu of this "
                  "over them, rounded up");
  cmd->add_flag("--exclusive", flags->exclusive,
                "Its nodes run nothing else while it runs there: placed "
                "only on nodes no other job holds a GPU of, which take no "
                "other job until it leaves (it sees only its own GPUs)");
}

absl::StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view field,
                                                        std::string_view text) {
  std::vector<std::string> out;
  auto add = [&](std::string name) -> absl::Status {
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      return absl::OkStatus();
    }
    if (out.size() == kMaxFilterNodes) {
      return Bad(field, text,
                 absl::StrCat("more than ", kMaxFilterNodes, " node names"));
    }
    out.push_back(std::move(name));
    return absl::OkStatus();
  };
  size_t i = 0;
  while (i <= text.size()) {
    // One item: up to the next ',' outside brackets.
    size_t end = i;
    size_t open = std::string_view::npos, close = std::string_view::npos;
    while (end < text.size() &&
           (text[end] != ',' || (open != std::string_view::npos &&
                                 close == std::string_view::npos))) {
      if (text[end] == '[') {
        if (open != std::string_view::npos) {
          return Bad(field, text,
                     absl::StrCat("one [...] per name; ", kExpected));
        }
        open = end;
      } else if (text[end] == ']') {
        if (open == std::string_view::npos || close != std::string_view::npos) {
          return Bad(field, text, "a ']' without its '['");
        }
        close = end;
      }
      ++end;
    }
    const std::string_view item = text.substr(i, end - i);
    if (item.empty()) {
      return Bad(field, text, absl::StrCat("an empty name; ", kExpected));
    }
    if (open == std::string_view::npos) {
      RETURN_IF_ERROR(add(std::string(item)));
    } else {
      if (close == std::string_view::npos) {
        return Bad(field, text, "a '[' without its ']'");
      }
      const std::string_view prefix = text.substr(i, open - i);
      const std::string_view suffix = text.substr(close + 1, end - close - 1);
      const std::string_view ranges = text.substr(open + 1, close - open - 1);
      size_t r = 0;
      while (r <= ranges.size()) {
        size_t comma = ranges.find(',', r);
        if (comma == std::string_view::npos) comma = ranges.size();
        const std::string_view range = ranges.substr(r, comma - r);
        const size_t dash = range.find('-');
        const std::string_view lo = range.substr(0, dash);
        const std::string_view hi =
            dash == std::string_view::npos ? lo : range.substr(dash + 1);
        uint32_t a = 0, b = 0;
        auto digits = [](std::string_view s) {
          return !s.empty() && s.size() <= 9 &&
                 std::all_of(s.begin(), s.end(), [](char c) {
                   return std::isdigit(static_cast<unsigned char>(c));
                 });
        };
        if (!digits(lo) || !digits(hi) || !absl::SimpleAtoi(ToAbsl(lo), &a) ||
            !absl::SimpleAtoi(ToAbsl(hi), &b) || a > b) {
          return Bad(field, text,
                     absl::StrCat("\"", ToAbsl(range),
                                  "\" is not a number N or a range A-B with "
                                  "A <= B"));
        }
        if (b - a >= kMaxFilterNodes) {
          return Bad(
              field, text,
              absl::StrCat("more than ", kMaxFilterNodes, " node names"));
        }
        for (uint32_t n = a; n <= b; ++n) {
          std::string number = absl::StrCat(n);
          if (number.size() < lo.size()) {
            number.insert(0, lo.size() - number.size(), '0');
          }
          RETURN_IF_ERROR(
              add(absl::StrCat(ToAbsl(prefix), number, ToAbsl(suffix))));
        }
        r = comma + 1;
      }
    }
    i = end + 1;
  }
  return out;
}

absl::Status ApplyNodeFilter(const NodeFilterFlags& flags,
                             const NodeFilterFlags& names, JobRequest* spec) {
  if (absl::StatusOr<Constraint> c = ParseConstraint(flags.constraint);
      !c.ok()) {
    // ParseConstraint names the text; say which flag gave it.
    return absl::InvalidArgumentError(
        absl::StrCat(names.constraint, ": ", c.status().message()));
  }
  spec->gpu_type = flags.gpu_type;
  spec->constraint = flags.constraint;
  spec->nodelist.clear();
  spec->exclude.clear();
  if (!flags.nodelist.empty()) {
    ASSIGN_OR_RETURN(spec->nodelist,
                     ExpandHostlist(names.nodelist, flags.nodelist));
  }
  if (!flags.exclude.empty()) {
    ASSIGN_OR_RETURN(spec->exclude,
                     ExpandHostlist(names.exclude, flags.exclude));
  }
  spec->exclusive = flags.exclusive;
  spec->cpus_per_gpu = 0;
  if (!flags.cpus_per_gpu.empty()) {
    int cpus = 0;
    if (!absl::SimpleAtoi(ToAbsl(flags.cpus_per_gpu), &cpus) || cpus < 1 ||
        cpus > job_limits::kMaxCpusPerGpu) {
      return absl::InvalidArgumentError(absl::StrCat(
          names.cpus_per_gpu, ": expected a whole number of CPUs, 1 to ",
          job_limits::kMaxCpusPerGpu, ", got \"", flags.cpus_per_gpu, "\""));
    }
    spec->cpus_per_gpu = cpus;
  }
  spec->mem_per_gpu_mib = 0;
  if (!flags.mem_per_gpu.empty()) {
    ASSIGN_OR_RETURN(int64_t bytes,
                     ParseMemorySize(names.mem_per_gpu, flags.mem_per_gpu));
    if (bytes < (int64_t{1} << 20) || ((bytes + (int64_t{1} << 20) - 1) >> 20) >
                                          job_limits::kMaxMemPerGpuMib) {
      return absl::InvalidArgumentError(
          absl::StrCat(names.mem_per_gpu, ": expected 1M to ",
                       job_limits::kMaxMemPerGpuMib >> 10, "G, got \"",
                       flags.mem_per_gpu, "\""));
    }
    // Rounded up, as Slurm does: a job gets at least what it asked.
    spec->mem_per_gpu_mib = (bytes + (int64_t{1} << 20) - 1) >> 20;
  }
  return ApplyJobResources(flags, names, spec);
}

}  // namespace tiresias::cli
