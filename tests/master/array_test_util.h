// What the job array tests share (array_test.cc, array_record_test.cc): a
// MasterFixture that submits arrays and reads a node's starts.
#ifndef TIRESIAS_TESTS_MASTER_ARRAY_TEST_UTIL_H_
#define TIRESIAS_TESTS_MASTER_ARRAY_TEST_UTIL_H_

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias::master_testing {

class ArrayFixture : public MasterFixture {
 protected:
  MasterState::SubmitResult SubmitArray(const JobRequest& spec,
                                        const std::string& request_id = "") {
    auto result = master_->SubmitJob(spec, request_id);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : MasterState::SubmitResult{};
  }
  // The jobs the node should run now, each with its GPUs, as a heartbeat
  // reporting `tasks` is answered.
  std::map<JobId, std::vector<int>> Desired(
      int64_t node, const std::vector<v1::TaskStatus>& tasks) {
    std::map<JobId, std::vector<int>> out;
    for (const v1::StartTask& s : Starts(Beat(node, tasks))) {
      out[s.task().job_id()].assign(s.gpu_indexes().begin(),
                                    s.gpu_indexes().end());
    }
    return out;
  }
  static std::vector<JobId> Ids(const std::map<JobId, std::vector<int>>& m) {
    std::vector<JobId> ids;
    for (const auto& [id, gpus] : m) ids.push_back(id);
    return ids;
  }
  static v1::TaskStatus Running(JobId id, const std::vector<int>& gpus) {
    return Task(id, 1, 0, v1::TASK_STATE_RUNNING, gpus, {}, 1000.0);
  }
  static v1::TaskStatus Exited(JobId id, const std::vector<int>& gpus) {
    return Task(id, 1, 0, v1::TASK_STATE_EXITED, gpus, 0, 1000.0);
  }
  static bool Anyone(const JobRecord&) { return true; }
};

}  // namespace tiresias::master_testing

#endif  // TIRESIAS_TESTS_MASTER_ARRAY_TEST_UTIL_H_
