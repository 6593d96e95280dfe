#include "master/page_token.h"

#include "gtest/gtest.h"

namespace tiresias {
namespace {

TEST(PageTokenTest, RoundTripsTheLastId) {
  for (JobId id : {JobId{1}, JobId{500}, JobId{123456789012345}}) {
    const std::string token = EncodePageToken(id);
    EXPECT_EQ(token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijkl"
                                      "mnopqrstuvwxyz0123456789-_="),
              std::string::npos)
        << token;
    EXPECT_EQ(*DecodePageToken(token), id);
  }
  EXPECT_EQ(*DecodePageToken(""), 0);  // the first page
}

TEST(PageTokenTest, AnythingElseIsInvalidArgumentNamingTheField) {
  for (const char* bad :
       {"1500", "!!!", "ajE6", "ajE6MTV4", "ajE6LTE", "\xff\n"}) {
    auto id = DecodePageToken(bad);
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(id.status().message()).rfind("page_token: ", 0), 0u)
        << id.status();
    EXPECT_EQ(std::string(id.status().message()).find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace tiresias
