#include "sim/slowdown_file.h"

#include <fstream>

#include "gtest/gtest.h"

namespace tiresias {
namespace {

constexpr char kGood[] =
    "# measured on the testbed\n"
    "model,spread_slowdown,source\n"
    "vgg16,4.6,testbed 2x4 GPUs, 1gbit links\n"
    "\n"
    "resnet50, 1.7 ,testbed\n";

TEST(SlowdownFile, ReplacesTheNamedModelsAndKeepsTheOthers) {
  absl::StatusOr<ModelTable> t =
      ApplySlowdownText(ModelTable::Builtin(), kGood, "f.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_DOUBLE_EQ(t->SpreadSlowdown("vgg16"), 4.6);
  EXPECT_EQ(t->Find("vgg16")->source, "testbed 2x4 GPUs, 1gbit links");
  EXPECT_DOUBLE_EQ(t->SpreadSlowdown("resnet50"), 1.7);
  // Untouched rows keep the paper's factor and say it is not measured.
  EXPECT_DOUBLE_EQ(t->SpreadSlowdown("vgg19"), 1.45);
  EXPECT_EQ(t->Find("vgg19")->source, ModelPerf::kPaperSource);
  // Preemption costs do not change.
  EXPECT_DOUBLE_EQ(t->PreemptionCostSeconds("vgg16"),
                   ModelTable::Builtin().PreemptionCostSeconds("vgg16"));
}

TEST(SlowdownFile, TheShippedTestbedFileLoads) {
  absl::StatusOr<ModelTable> t = ApplySlowdownFile(
      ModelTable::Builtin(),
      "data/spread_slowdown_testbed.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  const ModelPerf* vgg = t->Find("vgg16");
  const ModelPerf* resnet = t->Find("resnet50");
  EXPECT_NE(vgg->source, ModelPerf::kPaperSource);
  EXPECT_NE(resnet->source, ModelPerf::kPaperSource);
  // What the testbed showed: VGG16 loses far more than ResNet50.
  EXPECT_GT(vgg->spread_slowdown, resnet->spread_slowdown);
}

struct BadCase {
  const char* text;
  const char* error;
};

TEST(SlowdownFile, BadRowsNameTheLineAndTheColumn) {
  const BadCase cases[] = {
      {"", "f.csv:1: no header"},
      {"model,slowdown\n", "f.csv:1: expected the header"},
      {"model,spread_slowdown,source\nvgg16,0.5,x\n",
       "f.csv:2: column 'spread_slowdown': expected a number >= 1, got \"0.5\""},
      {"model,spread_slowdown,source\nvgg16,fast,x\n",
       "f.csv:2: column 'spread_slowdown'"},
      {"model,spread_slowdown,source\nvgg16,inf,x\n",
       "f.csv:2: column 'spread_slowdown'"},
      {"model,spread_slowdown,source\nbert,2,x\n",
       "f.csv:2: column 'model': \"bert\" is not a model"},
      {"model,spread_slowdown,source\nvgg16,2,x\nvgg16,3,y\n",
       "f.csv:3: model \"vgg16\" appears twice"},
      {"model,spread_slowdown,source\nvgg16,2\n", "f.csv:2: expected 3 columns"},
      {"model,spread_slowdown,source\nvgg16,2,\n", "f.csv:2: column 'source'"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<ModelTable> t =
        ApplySlowdownText(ModelTable::Builtin(), c.text, "f.csv");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(std::string(t.status().message()).find(c.error),
              std::string::npos)
        << t.status().message() << "\n  expected: " << c.error;
  }
}

TEST(SlowdownFile, AMissingFileIsNotFound) {
  absl::StatusOr<ModelTable> t =
      ApplySlowdownFile(ModelTable::Builtin(), "/nonexistent/slowdown.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(t.status().message()).find("/nonexistent/slowdown.csv"),
            std::string::npos);
}

}  // namespace
}  // namespace tiresias
