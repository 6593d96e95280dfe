// The pure checks shared by the master and the CLI. Every limit of a job
// spec is exercised through MasterState::SubmitJob in
// tests/master/submit_validation_test.cc; here, request ids and the quoting
// of bad input in messages.
#include "master/job_validation.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::HasSubstr;

TEST(JobValidationTest, RequestIdsArePrintableAsciiOfBoundedLength) {
  EXPECT_TRUE(ValidateRequestId("").ok());  // none given
  EXPECT_TRUE(ValidateRequestId("3f2a9c-retry 1").ok());
  EXPECT_TRUE(ValidateRequestId(std::string(128, 'a')).ok());
  absl::Status status = ValidateRequestId(std::string(129, 'a'));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "request_id: expected at most 128 bytes, got 129");
  status = ValidateRequestId("abc\n");
  EXPECT_EQ(status.message(),
            "request_id: expected printable ASCII, got byte 0x0a at byte 3");
  EXPECT_FALSE(ValidateRequestId("caf\xc3\xa9").ok());
}

TEST(JobValidationTest, BadInputIsQuotedEscapedAndCutInMessages) {
  EXPECT_EQ(QuoteForError("A=B"), "\"A=B\"");
  EXPECT_EQ(QuoteForError("a\nb\x1b\xff"), "\"a\\nb\\x1b\\xff\"");
  EXPECT_EQ(QuoteForError(std::string(100, 'k')),
            "\"" + std::string(64, 'k') + "...\"");
  JobRequest spec;
  spec.command = {"true"};
  spec.env = {{"BAD\nKEY", "v"}};
  absl::Status status = ValidateJobRequest(spec);
  EXPECT_EQ(status.message(),
            "spec.env key \"BAD\\nKEY\": expected a variable name matching "
            "[A-Za-z_][A-Za-z0-9_]*");
  // Messages stay on one line whatever the input.
  spec.env = {};
  spec.command = {"true", "x\xc0\x80"};
  status = ValidateJobRequest(spec);
  EXPECT_EQ(status.message(),
            "spec.command[1]: expected valid UTF-8, got byte 0xc0 at byte 1");
  spec.command = {"true"};
  spec.name = "a\xed\xa0\x80";  // a surrogate: not UTF-8
  EXPECT_THAT(std::string(ValidateJobRequest(spec).message()),
              HasSubstr("spec.name: expected valid UTF-8"));
}

}  // namespace
}  // namespace tiresias
