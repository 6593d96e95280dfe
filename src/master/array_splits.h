// The job arrays stored as one record (Store::SplitArray) whose jobs are
// not all written yet, as MasterState keeps them in memory: per array, its
// job count, how many are written, and what every unwritten job shares
// (they are alike: the array's spec, pending, never run). The unwritten
// jobs of array A are the ids A + split .. A + count - 1. Not thread-safe:
// MasterState's lock guards it.
#ifndef TIRESIAS_MASTER_ARRAY_SPLITS_H_
#define TIRESIAS_MASTER_ARRAY_SPLITS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "master/job_record.h"

namespace tiresias {

class ArraySplits {
 public:
  struct Array {
    int count = 0;  // the array's jobs
    int split = 0;  // written so far: positions 0 .. split - 1
    // What its unwritten jobs share, from the array's spec.
    bool held = false;  // submitted held (submit --hold)
    int gpus = 0;
    int cpus = 0;  // a CPU-only job's (JobRequest::cpus)
    std::string user;
    std::string name;
    std::string vc;
    std::string qos;
    // Where its unwritten jobs join the scheduler's queue (stable order):
    // job p at anchor + p / count, between the array's submission and the
    // next job's (Scheduler::back_position when the array was admitted).
    double anchor = 0;
  };

  // The array of `head` (its first job, array_count > array_split), if
  // not known yet; true if added.
  bool Add(const JobRecord& head, double anchor);
  // Array `id` is written through position split_to - 1; it leaves once
  // every job is written.
  void Split(JobId id, int split_to);
  // The array whose unwritten jobs include `job`: its id; nullopt if none.
  std::optional<JobId> Holding(JobId job) const;
  const std::map<JobId, Array>& arrays() const { return arrays_; }
  // Unwritten jobs over every array.
  int64_t unwritten() const { return unwritten_; }

 private:
  std::map<JobId, Array> arrays_;
  int64_t unwritten_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_ARRAY_SPLITS_H_
