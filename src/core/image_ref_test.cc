#include "core/image_ref.h"

#include <string>

#include "gtest/gtest.h"

namespace tiresias {
namespace {

TEST(ImageRefTest, AcceptsNamesAndNormalAbsolutePaths) {
  for (const char* good :
       {"torch", "torch:2.1", "localhost/tiresias-test:1",
        "registry.example.com:5000/lab/torch:2.1-cuda12",
        "torch@sha256:4d48596b55d9a4630e9b5444de4712484a8f0bd0c91812d52a2ad2",
        "4d48596b55d9", "/srv/images/torch", "/a"}) {
    EXPECT_EQ(ImageRefError(good), "") << good;
  }
  EXPECT_TRUE(IsImagePath("/srv/images/torch"));
  EXPECT_FALSE(IsImagePath("torch:2.1"));
}

TEST(ImageRefTest, RefusesWhatPodmanWouldMisreadOrAPathThatWanders) {
  EXPECT_EQ(ImageRefError(""), "expected an image, got nothing");
  EXPECT_EQ(ImageRefError("--privileged"),
            "expected a name starting with a letter or digit, or an absolute "
            "path to a root file system folder");
  EXPECT_EQ(ImageRefError("torch 2"),
            "expected only letters, digits and . _ : / @ + -, got ' ' at "
            "byte 5");
  EXPECT_EQ(ImageRefError("a\nb"),
            "expected only letters, digits and . _ : / @ + -, got '?' at "
            "byte 1");
  for (const char* bad : {"/srv/../etc", "/srv//x", "/srv/x/", "/./x"}) {
    EXPECT_EQ(ImageRefError(bad),
              "expected a normal absolute path (no empty, . or .. part, no "
              "trailing /)")
        << bad;
  }
  EXPECT_EQ(ImageRefError("/"), "expected a root file system folder, not /");
  EXPECT_EQ(ImageRefError(std::string(513, 'a')),
            "expected at most 512 bytes, got 513");
  EXPECT_EQ(ImageRefError(std::string(512, 'a')), "");
}

}  // namespace
}  // namespace tiresias
