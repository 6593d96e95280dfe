// Test-only helpers for the trace readers' tests: scratch files in a fresh
// directory per test, and the shipped data files.
#ifndef TIRESIAS_TRACE_TEST_FILES_H_
#define TIRESIAS_TRACE_TEST_FILES_H_

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/job.h"
#include "core/testing/test_dir.h"
#include "gtest/gtest.h"

namespace tiresias::trace_testing {

// A fresh folder per test; Missing names a file that does not exist.
class ScratchDir : public test_support::TestDir {
 public:
  std::string Missing(std::string_view name) const { return File(name); }
};

// A shipped data file: "data/<name>" when run from the repository root (as
// ctest does), else found through the source directory.
inline std::string DataPath(std::string_view name) {
  std::string relative = "data/" + std::string(name);
  if (std::filesystem::exists(relative)) return relative;
  return absl::StrCat(TIRESIAS_SOURCE_DIR, "/", relative);
}

// The jobs' fields as columns, in order, for ElementsAre.
struct JobColumns {
  std::vector<JobId> ids;
  std::vector<double> submits, durations;  // seconds; duration 0 if none
  std::vector<int> gpus;
};
inline JobColumns Columns(const std::vector<JobSpec>& jobs) {
  JobColumns c;
  for (const JobSpec& job : jobs) {
    c.ids.push_back(job.id);
    c.submits.push_back(job.submit_time.count());
    c.durations.push_back(job.duration ? job.duration->count() : 0);
    c.gpus.push_back(job.num_gpus);
  }
  return c;
}

}  // namespace tiresias::trace_testing

#endif  // TIRESIAS_TRACE_TEST_FILES_H_
