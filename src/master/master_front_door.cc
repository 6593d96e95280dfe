// MasterState's client front door: submissions, validated, matched by
// request id and written in groups (one transaction and one fsync for all
// the submissions that queued up while the previous group was written), and
// listings a page at a time.
#include <algorithm>
#include <cstdio>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "master/job_limits.h"
#include "master/job_validation.h"
#include "master/master_state.h"

namespace tiresias {

absl::Status MasterState::CheckFitsCluster(const JobRequest& spec) {
  MutexLock lock(&mu_);
  if (cluster_ && spec.num_gpus > cluster_->total_gpus()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.gpus: ", spec.num_gpus, " GPUs requested but the cluster has ",
        cluster_->total_gpus()));
  }
  const int max_no_preempt = options_.max_no_preempt_gpus;
  if (spec.no_preempt && max_no_preempt == 0) {
    return absl::InvalidArgumentError(
        "spec.no_preempt: this master accepts no jobs that cannot be "
        "preempted (its --max-no-preempt-gpus is 0)");
  }
  if (spec.no_preempt && spec.exclusive && max_no_preempt >= 0) {
    // Its nodes' every GPU would be held, past what the limit counts.
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.no_preempt: a job with nodes of its own (--exclusive) cannot "
        "also be unpreemptible on this master (--max-no-preempt-gpus ",
        max_no_preempt, " limits the GPUs such a job holds)"));
  }
  if (spec.no_preempt && max_no_preempt > 0 &&
      spec.num_gpus > max_no_preempt) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.no_preempt: a job that cannot be preempted may have at most ",
        max_no_preempt, " GPUs on this master (--max-no-preempt-gpus), got ",
        spec.num_gpus));
  }
  return absl::OkStatus();
}

namespace {

// A request id that names several jobs: job I is stored with
// "<request_id>#<I>", so it leaves room for the suffix within the 128
// bytes of any request id.
absl::Status CheckBulkRequestId(std::string_view request_id,
                                absl::string_view what) {
  if (request_id.size() <= job_limits::kMaxBulkRequestIdBytes) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "request_id: expected at most ", job_limits::kMaxBulkRequestIdBytes,
      " bytes for ", what, ", got ", request_id.size()));
}

}  // namespace

absl::StatusOr<MasterState::SubmitResult> MasterState::SubmitJob(
    const JobRequest& spec, std::string_view request_id) {
  RETURN_IF_ERROR(ValidateJobRequest(spec));
  RETURN_IF_ERROR(ValidateRequestId(request_id));
  RETURN_IF_ERROR(CheckNotifyAllowed(spec));
  RETURN_IF_ERROR(CheckFitsCluster(spec));
  RETURN_IF_ERROR(CheckDependencyTargets(spec, nullptr));
  if (!spec.array.empty()) {
    // Job I of an array is stored as "<request_id>#<I>", as SubmitJobs
    // stores its jobs: the same room is kept for the suffix.
    RETURN_IF_ERROR(CheckBulkRequestId(request_id, "a job array"));
    return SubmitArray(spec, request_id);
  }

  SubmitWriter self;
  self.spec = &spec;
  self.request_id = request_id;
  QueueAndWrite(self);
  return std::move(self.result);
}

namespace {

// "spec.gpus: ..." (ValidateJobRequest, CheckFitsCluster) as
// "jobs[3].gpus: ...": SubmitJobs names the job by its index.
absl::Status ForJob(size_t index, const absl::Status& status) {
  absl::string_view message = status.message();
  if (absl::StartsWith(message, "spec.")) message.remove_prefix(5);
  return absl::Status(status.code(),
                      absl::StrCat("jobs[", index, "].", message));
}

}  // namespace

absl::StatusOr<MasterState::SubmitResult> MasterState::SubmitArray(
    const JobRequest& spec, std::string_view request_id) {
  // Validated: the indices expand.
  ASSIGN_OR_RETURN(std::vector<int> indices,
                   ExpandArrayIndices(spec.array.indices));
  // Every job stores the whole spec: the array may take no more than a
  // SubmitJobs request may carry (a 128 KiB environment times 10,000 jobs
  // would be over a GiB in memory and on disk).
  JobRecord sized;
  sized.spec = spec;
  const int64_t each = ApproxEncodedBytes(sized);
  const int64_t total = each * static_cast<int64_t>(indices.size());
  if (total > static_cast<int64_t>(job_limits::kMaxRequestBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.array: ", indices.size(), " jobs of about ", each / 1024,
        " KiB each take ", total >> 20, " MiB; at most ",
        job_limits::kMaxRequestBytes >> 20,
        " MiB in one array (fewer indices, or a smaller spec: its "
        "environment is copied into every job)"));
  }
  // Stored as one record, its first job's, standing for all of them
  // (NewJob::array_count); the others are written as they are needed
  // (SplitArrayLocked). Job I keeps the request id "<request_id>#<I>".
  std::vector<NewJob> jobs;
  jobs.push_back(NewJob{spec,
                        request_id.empty()
                            ? std::string()
                            : absl::StrCat(ToAbsl(request_id), "#0"),
                        indices[0], true, static_cast<int>(indices.size())});
  SubmitWriter self;
  self.bulk = &jobs;  // lives until QueueAndWrite returns
  QueueAndWrite(self);
  if (!self.bulk_result.ok()) {
    const absl::Status& status = self.bulk_result.status();
    // The store names the job "jobs[I]: ..."; for one spec, the spec.
    absl::string_view message = status.message();
    if (absl::StartsWith(message, "jobs[")) {
      message.remove_prefix(std::min(message.find(": ") + 2, message.size()));
    }
    return absl::Status(status.code(), message);
  }
  SubmitResult result;
  result.id = self.bulk_result->ids.front();
  result.existing = self.bulk_result->existing;
  result.array_job_ids.reserve(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    result.array_job_ids.push_back(result.id + static_cast<JobId>(i));
  }
  return result;
}

absl::StatusOr<MasterState::BulkSubmitResult> MasterState::SubmitJobs(
    const std::vector<JobRequest>& specs, std::string_view request_id) {
  if (specs.empty()) {
    return absl::InvalidArgumentError("jobs: expected at least one job");
  }
  if (specs.size() > job_limits::kMaxJobsPerSubmission) {
    return absl::InvalidArgumentError(
        absl::StrCat("jobs: ", specs.size(), " jobs; at most ",
                     job_limits::kMaxJobsPerSubmission, " in one request"));
  }
  RETURN_IF_ERROR(ValidateRequestId(request_id));
  RETURN_IF_ERROR(CheckBulkRequestId(request_id, "SubmitJobs"));
  // Every spec is checked before any is queued: all or nothing.
  std::vector<NewJob> jobs;
  jobs.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (absl::Status valid = ValidateJobRequest(specs[i]); !valid.ok()) {
      return ForJob(i, valid);
    }
    if (!specs[i].array.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "jobs[", i, "].array: a job array is submitted on its own "
          "(SubmitJob, `tiresias submit --array`), not in SubmitJobs"));
    }
    if (absl::Status allowed = CheckNotifyAllowed(specs[i]); !allowed.ok()) {
      return ForJob(i, allowed);
    }
    if (absl::Status fits = CheckFitsCluster(specs[i]); !fits.ok()) {
      return ForJob(i, fits);
    }
    if (absl::Status deps = CheckDependencyTargets(specs[i], nullptr);
        !deps.ok()) {
      return ForJob(i, deps);
    }
    jobs.push_back(NewJob{
        specs[i], request_id.empty()
                      ? std::string()
                      : absl::StrCat(ToAbsl(request_id), "#", i)});
  }
  SubmitWriter self;
  self.bulk = &jobs;  // lives until QueueAndWrite returns
  QueueAndWrite(self);
  return std::move(self.bulk_result);
}

void MasterState::QueueAndWrite(SubmitWriter& self) {
  submit_mu_.Lock();
  submit_queue_.push_back(&self);
  while (!self.done && submit_queue_.front() != &self) {
    self.cv.Wait(&submit_mu_);
  }
  if (self.done) {  // a leader wrote it
    submit_mu_.Unlock();
    return;
  }
  if (options_.submit_linger.count() > 0 && last_submit_batch_ > 1 &&
      self.bulk == nullptr) {
    // Concurrent clients: those answered by the last commit are about to
    // submit again; let them join this batch.
    submit_mu_.Unlock();
    std::this_thread::sleep_for(options_.submit_linger);
    submit_mu_.Lock();
  }

  // This writer leads: it takes everything queued behind it, up to the
  // cap, stopping before a bulk writer; a bulk writer goes alone.
  std::vector<SubmitWriter*> batch;
  for (SubmitWriter* writer : submit_queue_) {
    if (batch.size() == kMaxSubmitBatch) break;
    if (!batch.empty() && (writer->bulk != nullptr || self.bulk != nullptr)) {
      break;
    }
    batch.push_back(writer);
  }
  submit_mu_.Unlock();
  // The fsync, with no lock of ours held.
  if (self.bulk != nullptr) {
    WriteBulk(self);
  } else {
    WriteSubmitBatch(batch);
  }
  submit_mu_.Lock();
  ++submit_stats_.batches;
  submit_stats_.jobs += self.bulk != nullptr
                            ? static_cast<int64_t>(self.bulk->size())
                            : static_cast<int64_t>(batch.size());
  last_submit_batch_ = batch.size();
  for (SubmitWriter* writer : batch) {
    submit_queue_.pop_front();  // the batch is the queue's front, in order
    writer->done = true;
    // Under the lock: the writer cannot return (and destroy its condition
    // variable) before the notification is made.
    if (writer != &self) writer->cv.Signal();
  }
  if (!submit_queue_.empty()) submit_queue_.front()->cv.Signal();
  submit_mu_.Unlock();
}

absl::Status MasterState::AdmitLocked(NewJob job, const CreatedJob& created,
                                      Seconds now) {
  JobRecord rec;
  rec.held = job.spec.hold;  // stored so by CreateJobs
  rec.id = created.id;
  rec.spec = std::move(job.spec);
  rec.submit_time = now;
  rec.last_stop_time = now;
  rec.request_id = std::move(job.request_id);
  rec.profile = created.profile;
  rec.array_id = created.array_id;
  rec.array_index = job.array_index.value_or(0);
  rec.array_count = created.array_count;
  rec.array_split = created.array_count > 0 ? 1 : 0;
  if (rec.array_id > 0) deps_.AddArrayJobs(rec.array_id, 1);
  ++ended_.jobs;  // counts every job ever accepted
  ended_.max_id = std::max(ended_.max_id, created.id);
  if (rec.array_count > 1) {
    // The array's other jobs, stored as its count until split off.
    ended_.jobs += rec.array_count - 1;
    ended_.max_id = std::max(ended_.max_id, rec.id + rec.array_count - 1);
  }
  const JobRecord head = rec.array_count > 1 ? rec : JobRecord();
  RETURN_IF_ERROR(AdmitRecordLocked(std::move(rec), now));
  // After the first job: the others join the queue behind it.
  if (head.array_count > 1) AddSplittingLocked(head);
  return absl::OkStatus();
}

absl::Status MasterState::AdmitRecordLocked(
    JobRecord rec, Seconds now, std::optional<double> queue_position) {
  // The profile: measured before, on a job of the same signature.
  JobSpec core = CoreJobSpec(rec.id, rec.spec, rec.submit_time, rec.profile);
  core.vc = vcs_.SchedulerName(core.vc);  // a VC removed meanwhile: none
  if (!qos_.contains(core.qos)) core.qos.clear();  // likewise a QOS
  // Only a broken invariant (an id the scheduler already holds) fails
  // here; the job is stored and a restarted master would load it.
  if (queue_position) {
    Job job(std::move(core));
    job.set_queue_position(*queue_position);
    RETURN_IF_ERROR(scheduler_->Restore(job, now));
  } else {
    RETURN_IF_ERROR(scheduler_->Submit(std::move(core), now));
  }
  if (rec.held) RETURN_IF_ERROR(scheduler_->Hold(rec.id));
  const JobRecord& admitted = records_[rec.id] = std::move(rec);
  // Its begin time first: a job that begins later takes no array slot.
  RETURN_IF_ERROR(WaitForBegin(admitted, now));
  RETURN_IF_ERROR(JoinArraySlots(admitted));
  return WaitForDependencies(admitted);
}

absl::Status MasterState::AdmitIfLostLocked(NewJob job,
                                             const CreatedJob& created) {
  if (!created.existing || records_.contains(created.id)) {
    return absl::OkStatus();
  }
  // Unfinished jobs are all in records_; an ended one has left it.
  ASSIGN_OR_RETURN(JobRecord stored, store_->GetJob(created.id));
  if (IsFinal(stored.state)) return absl::OkStatus();
  CreatedJob lost = created;
  lost.existing = false;
  lost.profile = stored.profile;
  // Also asks for a pass (the caller's pass_wanted_ covers only new jobs).
  pass_wanted_ = true;
  return AdmitLocked(std::move(job), lost, stored.submit_time);
}

void MasterState::WriteSubmitBatch(const std::vector<SubmitWriter*>& batch) {
  std::vector<NewJob> jobs;
  jobs.reserve(batch.size());
  for (const SubmitWriter* writer : batch) {
    jobs.push_back(NewJob{*writer->spec, std::string(writer->request_id)});
  }
  const Seconds now = clock_->NowUnixSeconds();
  absl::StatusOr<std::vector<absl::StatusOr<CreatedJob>>> created =
      store_->CreateJobs(jobs, now);
  if (!created.ok()) {
    // Nothing was stored, so nothing goes into memory.
    for (SubmitWriter* writer : batch) writer->result = created.status();
    return;
  }
  bool any_new = false;
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < batch.size(); ++i) {
      SubmitWriter& writer = *batch[i];
      const absl::StatusOr<CreatedJob>& job = (*created)[i];
      if (!job.ok()) {
        writer.result = job.status();
        continue;
      }
      if (job->existing) {
        writer.result = SubmitResult{job->id, true};
        if (absl::Status lost = AdmitIfLostLocked(std::move(jobs[i]), *job);
            !lost.ok()) {
          writer.result = lost;
        }
        continue;
      }
      if (absl::Status admitted = AdmitLocked(std::move(jobs[i]), *job, now);
          !admitted.ok()) {
        writer.result = admitted;
        continue;
      }
      any_new = true;
      writer.result = SubmitResult{job->id, false};
    }
    if (any_new) pass_wanted_ = true;
    CommitDependencies();
  }
  if (any_new) EventsWritten();  // their "submitted" events
}

void MasterState::CommitDependencies() {
  if (!deps_.HasChecks()) return;
  // New jobs whose dependencies are met already run at the next pass;
  // those that can never be met end now, in this write.
  if (absl::Status written = Commit(); !written.ok()) {
    // Kept in memory: the next write (every pass commits) retries it.
    std::fprintf(stderr, "tiresias master: writing dependency checks: %s\n",
                 std::string(written.message()).c_str());
  }
}

void MasterState::WriteBulk(SubmitWriter& writer) {
  std::vector<NewJob>& jobs = *writer.bulk;
  const Seconds now = clock_->NowUnixSeconds();
  absl::StatusOr<std::vector<CreatedJob>> created =
      store_->CreateJobsAllOrNothing(jobs, now);
  if (!created.ok()) {
    writer.bulk_result = created.status();  // nothing was stored
    return;
  }
  BulkSubmitResult result;
  result.ids.reserve(created->size());
  result.existing = true;
  absl::Status admitted;
  bool any_new = false;
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < created->size() && admitted.ok(); ++i) {
      const CreatedJob& job = (*created)[i];
      result.ids.push_back(job.id);
      if (job.existing) {
        admitted = AdmitIfLostLocked(std::move(jobs[i]), job);
        continue;
      }
      result.existing = false;
      // Fails only on a broken invariant (see AdmitLocked): the jobs are
      // stored and a restarted master loads them; say so, not hide it.
      admitted = AdmitLocked(std::move(jobs[i]), job, now);
      any_new = any_new || admitted.ok();
    }
    if (any_new) pass_wanted_ = true;
    CommitDependencies();
  }
  if (any_new) EventsWritten();  // their "submitted" events
  if (!admitted.ok()) {
    writer.bulk_result = admitted;
  } else {
    writer.bulk_result = std::move(result);
  }
}

MasterState::SubmitStats MasterState::submit_stats() {
  MutexLock lock(&submit_mu_);
  return submit_stats_;
}

absl::StatusOr<JobPage> MasterState::ListJobsPage(const JobListQuery& query) {
  std::vector<JobRecordState> wanted = query.any_of;
  if (query.state) wanted.push_back(*query.state);
  auto shown = [&](JobRecordState s) {
    return wanted.empty() ||
           std::find(wanted.begin(), wanted.end(), s) != wanted.end();
  };
  if (!wanted.empty() && std::all_of(wanted.begin(), wanted.end(), [](auto s) {
        return s == JobRecordState::kStarting;
      })) {
    return ListStartingJobs(query);
  }
  JobQuery stored;
  // A job shown as pending or preempted is stored so; only starting ones
  // (stored as either) are shown otherwise, and are dropped below.
  stored.states = wanted;
  if (shown(JobRecordState::kStarting) && !wanted.empty()) {
    stored.states.push_back(JobRecordState::kPending);
    stored.states.push_back(JobRecordState::kPreempted);
  }
  stored.after_id = query.after_id;
  stored.user = query.user;
  stored.name = query.name;
  stored.submitted_since = query.submitted_since;
  stored.ended_since = query.ended_since;
  stored.ended_before = query.ended_before;
  stored.array_id = query.array_id;
  stored.vc = query.vc;
  JobPage out;
  int64_t bytes = 0;
  while (true) {
    if (query.limit >= 0) {
      stored.limit = query.limit - static_cast<int64_t>(out.jobs.size());
    }
    if (query.max_bytes >= 0) {
      stored.max_bytes = std::max<int64_t>(0, query.max_bytes - bytes);
    }
    // Read without mu_: the store has its own lock, and the scheduler and
    // the agents need not wait for SQLite.
    ASSIGN_OR_RETURN(JobPage page, store_->QueryJobs(stored));
    {
      MutexLock lock(&mu_);
      const Seconds now = clock_->NowUnixSeconds();
      for (JobRecord& rec : page.jobs) {
        // An unfinished job's record in memory is at least as new as the
        // row just read.
        if (auto it = records_.find(rec.id); it != records_.end()) {
          rec = it->second;
          rec.events.clear();
        }
        LiveView(rec, now);
        // What is shown decides: a starting job is no longer pending or
        // preempted, and a job may have moved on since the row was read.
        if (!shown(rec.state)) continue;
        bytes += ApproxEncodedBytes(rec);
        out.jobs.push_back(std::move(rec));
      }
    }
    if (!page.more || page.jobs.empty()) return out;
    const bool full = (query.limit >= 0 &&
                       static_cast<int64_t>(out.jobs.size()) >= query.limit) ||
                      (query.max_bytes >= 0 && bytes >= query.max_bytes);
    if (full) {
      out.more = true;
      return out;
    }
    // Some rows were dropped: fill the page from after the last one read.
    stored.after_id = page.jobs.back().id;
  }
}

JobPage MasterState::ListStartingJobs(const JobListQuery& query) {
  // A starting job has not ended.
  if (query.ended_since || query.ended_before) return JobPage{};
  MutexLock lock(&mu_);
  const Seconds now = clock_->NowUnixSeconds();
  JobPage out;
  int64_t bytes = 0;
  // Launches are few (at most one per job holding or awaiting GPUs) and
  // ordered by job id.
  for (auto it = table_.launches().lower_bound({query.after_id + 1, 0});
       it != table_.launches().end(); ++it) {
    auto rec_it = records_.find(it->first.first);
    if (rec_it == records_.end()) continue;
    const JobRecord& rec = rec_it->second;
    if (rec.attempt != it->first.second || !IsStarting(rec)) continue;
    if ((query.user && rec.spec.user != *query.user) ||
        (query.name && rec.spec.name != *query.name) ||
        (query.submitted_since && rec.submit_time < *query.submitted_since) ||
        (query.array_id && rec.array_id != *query.array_id) ||
        (query.vc && rec.spec.vc != *query.vc)) {
      continue;
    }
    const int64_t size = ApproxEncodedBytes(rec);
    if ((query.limit >= 0 &&
         static_cast<int64_t>(out.jobs.size()) >= query.limit) ||
        (query.max_bytes >= 0 && !out.jobs.empty() &&
         bytes + size > query.max_bytes)) {
      out.more = true;
      return out;
    }
    JobRecord shown = rec;
    shown.events.clear();
    LiveView(shown, now);
    bytes += size;
    out.jobs.push_back(std::move(shown));
  }
  return out;
}

}  // namespace tiresias
