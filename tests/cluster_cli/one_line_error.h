// The shape every failed `tiresias` client command must have: a non-zero
// exit (not a crash or a hang), exactly one "tiresias: ..." line on stderr
// that says `part`, and nothing on stdout.
#ifndef TIRESIAS_TESTS_CLUSTER_CLI_ONE_LINE_ERROR_H_
#define TIRESIAS_TESTS_CLUSTER_CLI_ONE_LINE_ERROR_H_

#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace tiresias::cluster_test {

inline void ExpectOneLineError(const cli_test::ProcessResult& r,
                               const std::string& part) {
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.exit_code, -1) << "crashed or hung: " << r.err;
  EXPECT_THAT(r.err, ::testing::StartsWith("tiresias: "));
  EXPECT_THAT(r.err, ::testing::HasSubstr(part));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace tiresias::cluster_test

#endif  // TIRESIAS_TESTS_CLUSTER_CLI_ONE_LINE_ERROR_H_
