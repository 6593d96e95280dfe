// Reads job traces into JobSpecs: the Tiresias simulator's CSV, the
// Microsoft Philly CSV, Gavel's Philly-derived traces, SenseTime Helios and
// Alibaba PAI 2020. A bad line gives an InvalidArgument status that names
// the place and what was expected, e.g.
//   data/bad.csv:17: column 'num_gpu': expected a positive integer, got "-4"
// and never aborts.
//
// Formats. In the CSV formats with a header, columns are found by name, in
// any order, and other columns are ignored; see csv.h for the CSV dialect.
// "Submit times from the earliest" means seconds since the earliest submit
// time of the jobs kept.
//   Tiresias  job_id,num_gpu,submit_time,iterations,model_name,duration,
//             interval. Uses job_id (non-negative integer, unique),
//             num_gpu (positive integer), submit_time (non-negative seconds),
//             duration (non-negative seconds) and model_name (optional,
//             lowercased). submit_time is taken as is.
//   Philly    timestamp,duration,num_gpus,gpu_time,cluster. timestamp is a
//             naive wall-clock "YYYY-MM-DD HH:MM:SS"; submit times from the
//             earliest. A job's id is its 0-based data-row index in file
//             order; model is empty. gpu_time must be a non-negative number
//             and cluster non-empty; neither is otherwise used.
//   Gavel     Gavel's (Narayanan et al., OSDI 2020) .trace files: one job a
//             line, tab-separated, no header, in one of three layouts told
//             apart by their field count (gavel_format.cc). Uses job_type,
//             total_steps, scale_factor (GPUs) and arrival_time (submit
//             times from the earliest). Duration = total_steps / the job
//             type's isolated throughput on a V100 at that scale factor, from
//             Gavel's simulation_throughputs.json (gavel_throughputs.cc), as
//             Gavel made total_steps from a duration. Scale factors missing
//             there are extrapolated linearly from the largest smaller one
//             (noted). Id: 0-based line index; model: the job type's name
//             before " (", lowercased, without '-' ("ResNet-50 (batch size
//             64)" -> "resnet50").
//   Helios    SenseTime Helios cluster_log.csv: job_id,user,vc,gpu_num,
//             cpu_num,node_num,state,submit_time,start_time,end_time,
//             duration,queue. Uses job_id (id; unique), gpu_num, state,
//             submit_time ("YYYY-MM-DD HH:MM:SS", submit times from the
//             earliest) and duration (seconds). Only COMPLETED jobs with
//             gpu_num > 0 are kept; the others are counted in the notes.
//   PAI       Alibaba PAI 2020 pai_job_table.csv (job_name,inst_id,user,
//             status,start_time,end_time) and pai_task_table.csv (job_name,
//             task_name,inst_num,status,start_time,end_time,plan_cpu,
//             plan_mem,plan_gpu,gpu_type), headerless as released (a header
//             line equal to the column names is skipped). `path` is their
//             folder, or the job table, whose task table is the file beside
//             it with the last "job" of its name replaced by "task". Only
//             jobs with status Terminated are kept. Submit: the job's
//             start_time (its submission), from the earliest. GPUs:
//             sum over its tasks of plan_gpu x inst_num / 100, rounded up
//             (a fraction of a GPU takes a whole one). Duration: latest task
//             end_time - earliest task start_time. Jobs not kept (other
//             status, no GPUs, no tasks) are counted in the notes. Id: the
//             job's 0-based row index in the job table.
// The result is sorted by submit time, stably (ties keep file order). A file
// with no jobs (or none kept) is an error.
#ifndef TIRESIAS_TRACE_TRACE_READER_H_
#define TIRESIAS_TRACE_TRACE_READER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/job.h"

namespace tiresias {

enum class TraceFormat {
  kAuto,  // decided by the header line, or the first line's shape
  kTiresias,
  kPhilly,
  kGavel,
  kHelios,
  kPai,
};

// "auto", "tiresias", "philly", "gavel", "helios" or "pai" (exactly,
// lowercase).
absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name);

// Reads the trace at `path`. NotFound if there is no such file;
// InvalidArgument for anything wrong inside it. Lines about rows left out on
// purpose ("PAI: skipped 3 jobs with status Failed") are appended to `notes`
// if given. Thread-compatible.
absl::StatusOr<std::vector<JobSpec>> ReadTrace(
    const std::string& path, TraceFormat format = TraceFormat::kAuto,
    std::vector<std::string>* notes = nullptr);

// OK iff `factor` is a finite number > 0.
absl::Status ValidateArrivalScale(double factor);

// Multiplies every inter-arrival gap by `factor` (< 1 packs arrivals closer,
// a heavier load); the earliest submit time stays where it is. `jobs` should
// be sorted by submit time (as ReadTrace returns them); the order is kept.
// An invalid factor (see ValidateArrivalScale) changes nothing and is
// returned as InvalidArgument.
absl::Status ScaleArrivals(std::vector<JobSpec>* jobs, double factor);

}  // namespace tiresias

#endif  // TIRESIAS_TRACE_TRACE_READER_H_
