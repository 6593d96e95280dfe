#include "api/job_text.h"

#include "gtest/gtest.h"

namespace tiresias {
namespace {

TEST(JobTextTest, ProfileSaysWhatWasMeasuredAndWhere) {
  v1::Job job;
  job.set_id(7);
  EXPECT_EQ(FormatJobProfile(job), "not measured yet (placed as skewed)");
  v1::TrafficProfile* p = job.mutable_profile();
  p->set_periodic(false);
  p->set_measured_job_id(7);
  EXPECT_EQ(FormatJobProfile(job), "not periodic: no skew");
  p->set_periodic(true);
  p->set_tensor_skew(0.74271);
  p->set_iteration_s(0.5);
  p->set_bytes_per_iteration(5.5e8);
  EXPECT_EQ(FormatJobProfile(job),
            "tensor skew 0.7427, iteration 0.5000 s, 550000000 bytes per "
            "iteration, periodic");
  // Inherited from an earlier job of its signature; no iteration time.
  p->set_measured_job_id(3);
  p->clear_iteration_s();
  EXPECT_EQ(FormatJobProfile(job),
            "tensor skew 0.7427, iteration -, 550000000 bytes per iteration, "
            "periodic (from job 3)");
}

}  // namespace
}  // namespace tiresias
