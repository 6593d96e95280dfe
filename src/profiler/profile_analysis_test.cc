#include "profiler/profile_analysis.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::profiler {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::Optional;

constexpr uint64_t kMs = 1'000'000;

// `iterations` repetitions of `pattern`, message j of iteration i sent at
// i * iteration_ms + j ms.
void Repeat(const std::vector<uint64_t>& pattern, int iterations,
            uint64_t iteration_ms, std::vector<uint64_t>* sizes,
            std::vector<uint64_t>* times, uint64_t start_ms = 0) {
  for (int i = 0; i < iterations; ++i) {
    for (size_t j = 0; j < pattern.size(); ++j) {
      sizes->push_back(pattern[j]);
      times->push_back((start_ms + i * iteration_ms + j) * kMs);
    }
  }
}

TEST(FindPeriodTest, FindsTheSmallestRepeatingPattern) {
  std::vector<uint64_t> sizes, times;
  Repeat({5000, 100, 100}, 4, 50, &sizes, &times);
  // p = 1 and p = 2 put 5000 against 100; p = 3 matches everywhere, and
  // each message comes back 50 ms later.
  const auto period = FindPeriod(sizes, times);
  ASSERT_TRUE(period);
  EXPECT_EQ(period->messages, 3u);
  EXPECT_EQ(period->start, 0u);
  EXPECT_NEAR(period->seconds, 0.050, 1e-9);
}

TEST(FindPeriodTest, SkipsAWarmUpThatDoesNotRepeat) {
  std::vector<uint64_t> sizes{9000, 7000, 3};
  std::vector<uint64_t> times{0, 1 * kMs, 2 * kMs};
  Repeat({5000, 100, 100}, 4, 50, &sizes, &times, 10);
  const auto period = FindPeriod(sizes, times);
  ASSERT_TRUE(period);
  EXPECT_EQ(period->messages, 3u);
  EXPECT_EQ(period->start, 3u);  // the warm-up block does not match
}

// A small control message that changes (48 -> 52 bytes) in one iteration
// is 52 of 3,192 compared bytes: the pattern still repeats.
TEST(FindPeriodTest, ToleratesSmallMessagesThatVary) {
  std::vector<uint64_t> sizes, times;
  Repeat({1000, 48, 500, 48}, 5, 100, &sizes, &times);
  sizes[15] = 52;
  const auto period = FindPeriod(sizes, times);
  ASSERT_TRUE(period);
  EXPECT_EQ(period->messages, 4u);
}

// Eight equal messages 1 ms apart, then 93 ms of computing: sizes alone
// repeat every message, but the time to the next message of the same size
// is 1 ms seven times and 94 ms once, so the period is the iteration.
TEST(FindPeriodTest, EqualMessagesInBurstsRepeatPerBurst) {
  std::vector<uint64_t> sizes, times;
  Repeat(std::vector<uint64_t>(8, 4096), 6, 100, &sizes, &times);
  const auto period = FindPeriod(sizes, times);
  ASSERT_TRUE(period);
  EXPECT_EQ(period->messages, 8u);
  EXPECT_NEAR(period->seconds, 0.100, 1e-9);
}

// Iterations that take 60 to 200 ms (a busy machine): still one period,
// and its length is their mean.
TEST(FindPeriodTest, IterationsOfVaryingLength) {
  std::vector<uint64_t> sizes, times;
  uint64_t start_ms = 0;
  for (uint64_t length_ms : {60, 200, 80, 150, 60, 120}) {
    Repeat({1000, 48, 500, 48}, 1, 0, &sizes, &times, start_ms);
    start_ms += length_ms;
  }
  const auto period = FindPeriod(sizes, times);
  ASSERT_TRUE(period);
  EXPECT_EQ(period->messages, 4u);
  EXPECT_EQ(period->start, 0u);
  EXPECT_EQ(period->end, 24u);
  // Lags of the first five iterations: (60 + 200 + 80 + 150 + 60) / 5.
  EXPECT_NEAR(period->seconds, 0.110, 1e-9);
}

TEST(FindPeriodTest, RandomSizesHaveNoPeriod) {
  std::vector<uint64_t> sizes, times;
  uint64_t x = 12345;
  for (int i = 0; i < 600; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    sizes.push_back(1 + (x >> 33) % 20000);
    times.push_back(static_cast<uint64_t>(i) * 3 * kMs);
  }
  EXPECT_FALSE(FindPeriod(sizes, times));
}

TEST(FindPeriodTest, TwoRepetitionsAreNotEnough) {
  std::vector<uint64_t> sizes, times;
  Repeat({5000, 100, 100}, 2, 50, &sizes, &times);
  EXPECT_FALSE(FindPeriod(sizes, times));
}

// --- whole jobs
// ---------------------------------------------------------------

// Builds Records for a job: processes with connections and the messages
// they send.
class JobBuilder {
 public:
  size_t Process(int64_t pid, const std::string& command) {
    ProcessRecord p;
    p.pid = pid;
    p.argv = {command};
    records_.processes.push_back(p);
    return records_.processes.size() - 1;
  }
  // A connection of `process` from `local` to `peer`; returns its number.
  uint32_t Connect(size_t process, const std::string& local,
                   const std::string& peer) {
    const uint32_t conn = ++next_conn_;
    records_.connections.push_back(
        ConnectionRecord{process, conn, "tcp", local, peer});
    return conn;
  }
  // `iterations` times `pattern` on (process, conn), iteration i at
  // i * iteration_ms + offset_ms, messages 1 ms apart.
  void Send(size_t process, uint32_t conn, const std::vector<uint64_t>& pattern,
            int iterations, uint64_t iteration_ms, uint64_t offset_ms) {
    for (int i = 0; i < iterations; ++i) {
      for (size_t j = 0; j < pattern.size(); ++j) {
        records_.messages.push_back(MessageRecord{
            process, conn, (i * iteration_ms + offset_ms + j) * kMs,
            pattern[j]});
      }
    }
  }
  const Records& records() const { return records_; }

 private:
  Records records_;
  uint32_t next_conn_ = 0;
};

// Two workers and two parameter servers; the model's tensors are 600,
// 100, 200 and 100 bytes (skew 600 / 1000 = 0.6), assigned round-robin:
// server 0 holds 600 and 200, server 1 holds 100 and 100. Each iteration
// (1 s) every worker pushes each tensor to its server and each server
// sends its tensors back to each worker. Five iterations.
//
// Per iteration: each worker sends 1,000 bytes in 4 messages; server 0
// sends 800 to each worker (1,600, 4 messages), server 1 200 to each (400,
// 4 messages): 4,000 bytes and 16 messages. Server 0's two streams are the
// same sizes, so its distinct bytes are 800 and its own skew 600 / 800;
// the workers' distinct bytes (1,000) are the largest, so the job's skew
// is a worker's: 0.6. Bytes to server 0: 2 x 800 = 1,600 (0.4 of 4,000);
// to server 1: 400 (0.1); to each worker 800 + 200 = 1,000 (0.25).
Records ParameterServerJob() {
  JobBuilder job;
  const size_t a = job.Process(10, "worker a");
  const size_t b = job.Process(11, "worker b");
  const size_t s0 = job.Process(20, "server 0");
  const size_t s1 = job.Process(21, "server 1");
  const std::string kS0 = "127.0.0.1:7000", kS1 = "127.0.0.1:7001";
  struct Link {
    size_t worker;
    std::string port_to_s0, port_to_s1;
  };
  const uint64_t kIteration = 1000;
  for (const Link& w : {Link{a, "127.0.0.1:40001", "127.0.0.1:40002"},
                        Link{b, "127.0.0.1:40003", "127.0.0.1:40004"}}) {
    job.Send(w.worker, job.Connect(w.worker, w.port_to_s0, kS0), {600, 200}, 5,
             kIteration, 0);
    job.Send(w.worker, job.Connect(w.worker, w.port_to_s1, kS1), {100, 100}, 5,
             kIteration, 5);
    job.Send(s0, job.Connect(s0, kS0, w.port_to_s0), {600, 200}, 5, kIteration,
             100);
    job.Send(s1, job.Connect(s1, kS1, w.port_to_s1), {100, 100}, 5, kIteration,
             105);
  }
  return job.records();
}

TEST(AnalyzeTest, ParameterServerJob) {
  const Profile p = Analyze(ParameterServerJob());
  ASSERT_TRUE(p.periodic) << p.not_periodic_reason;
  EXPECT_THAT(p.iteration_s, Optional(DoubleNear(1.0, 1e-9)));
  EXPECT_THAT(p.bytes_per_iteration, Optional(DoubleNear(4000, 1e-9)));
  EXPECT_THAT(p.messages_per_iteration, Optional(DoubleNear(16, 1e-9)));
  EXPECT_THAT(p.tensor_skew, Optional(DoubleNear(0.6, 1e-12)));
  EXPECT_THAT(p.skew_pid, Optional(10));
  EXPECT_EQ(p.iterations_observed, 5);

  ASSERT_EQ(p.processes.size(), 4u);
  EXPECT_EQ(p.processes[0].command, "worker a");
  EXPECT_DOUBLE_EQ(p.processes[0].bytes_per_iteration, 1000);
  EXPECT_DOUBLE_EQ(p.processes[0].distinct_bytes_per_iteration, 1000);
  EXPECT_EQ(p.processes[0].largest_message, 600u);
  EXPECT_DOUBLE_EQ(p.processes[2].bytes_per_iteration, 1600);
  EXPECT_DOUBLE_EQ(p.processes[2].distinct_bytes_per_iteration, 800);
  EXPECT_THAT(p.processes[2].tensor_skew, Optional(DoubleNear(0.75, 1e-12)));
  EXPECT_THAT(p.processes[3].tensor_skew, Optional(DoubleNear(0.5, 1e-12)));

  // Peers, largest first; equal ones in name order.
  ASSERT_EQ(p.peer_byte_shares.size(), 4u);
  EXPECT_EQ(p.peer_byte_shares[0].peer, "pid 20");
  EXPECT_DOUBLE_EQ(p.peer_byte_shares[0].share, 0.4);
  EXPECT_EQ(p.peer_byte_shares[1].peer, "pid 10");
  EXPECT_DOUBLE_EQ(p.peer_byte_shares[1].share, 0.25);
  EXPECT_EQ(p.peer_byte_shares[2].peer, "pid 11");
  EXPECT_EQ(p.peer_byte_shares[3].peer, "pid 21");
  EXPECT_DOUBLE_EQ(p.peer_byte_shares[3].share, 0.1);

  // The skew process's sizes per iteration: the model's tensors.
  EXPECT_THAT(p.message_sizes, ElementsAre(Field(&SizeCount::bytes, 600),
                                           Field(&SizeCount::bytes, 200),
                                           Field(&SizeCount::bytes, 100)));
  EXPECT_DOUBLE_EQ(p.message_sizes[2].count, 2);
  EXPECT_EQ(p.total_messages, 5u * 16u);
  EXPECT_EQ(p.total_bytes, 5u * 4000u);
}

// A stream whose messages alternate 300 and 301 bytes repeats every two
// iterations: it counts half its period per iteration. Per iteration:
// 500 + 100 on one stream and (300 + 301) / 2 = 300.5 bytes in one
// message on the other.
TEST(AnalyzeTest, AStreamMayRepeatEveryFewIterations) {
  JobBuilder job;
  const size_t w = job.Process(1, "w");
  job.Send(w, job.Connect(w, "a:1", "b:1"), {500, 100}, 8, 100, 0);
  const uint32_t alternating = job.Connect(w, "a:2", "b:2");
  Records records = job.records();
  for (int i = 0; i < 8; ++i) {
    records.messages.push_back(MessageRecord{
        w, alternating, (i * 100 + 50) * kMs, i % 2 == 0 ? 300u : 301u});
  }
  const Profile p = Analyze(records);
  ASSERT_TRUE(p.periodic);
  EXPECT_THAT(p.iteration_s, Optional(DoubleNear(0.1, 1e-9)));
  EXPECT_THAT(p.bytes_per_iteration, Optional(DoubleNear(900.5, 1e-9)));
  EXPECT_THAT(p.messages_per_iteration, Optional(DoubleNear(3, 1e-9)));
  EXPECT_EQ(p.streams[1].iterations_per_period, 2);
  EXPECT_THAT(p.tensor_skew, Optional(DoubleNear(500 / 900.5, 1e-12)));
}

// A server's stream in gloo: data messages in a fixed order, with 48-byte
// notices in between that come or not depending on timing (0 to 2 before
// each data message). Positions shift from one iteration to the next, but
// the data repeats: per iteration 400,000 + 30,000 + 100,000 + 30,000
// bytes of data and a few notices.
TEST(AnalyzeTest, ControlMessagesThatComeAndGo) {
  JobBuilder job;
  const size_t w = job.Process(1, "server");
  const uint32_t conn = job.Connect(w, "a:1", "b:1");
  Records records = job.records();
  uint64_t x = 5;
  for (int i = 0; i < 8; ++i) {
    uint64_t t = i * 100 * kMs;
    for (uint64_t size : {400000, 30000, 100000, 30000}) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      for (uint64_t n = (x >> 40) % 3; n > 0; --n) {
        records.messages.push_back(MessageRecord{w, conn, t, 48});
        t += kMs;
      }
      records.messages.push_back(MessageRecord{w, conn, t, size});
      t += kMs;
    }
  }
  const Profile p = Analyze(records);
  ASSERT_TRUE(p.periodic) << p.not_periodic_reason;
  EXPECT_THAT(p.iteration_s, Optional(DoubleNear(0.1, 0.005)));
  // 560,000 bytes of data and 0 to 8 notices of 48 bytes.
  EXPECT_GE(*p.bytes_per_iteration, 560000);
  EXPECT_LE(*p.bytes_per_iteration, 560000 + 8 * 48);
  EXPECT_NEAR(*p.tensor_skew, 400000 / *p.bytes_per_iteration, 1e-12);
  EXPECT_GE(p.streams[0].repetitions, 6);
}

// Random sizes at random times, and a 10-byte heartbeat every 100 ms that
// does repeat: the repeating part is a sliver of the bytes, so the job is
// not periodic, and no skew is made up.
TEST(AnalyzeTest, NonPeriodicJobSaysSo) {
  JobBuilder job;
  const size_t w = job.Process(1, "w");
  const uint32_t chatty = job.Connect(w, "a:1", "b:1");
  const uint32_t heartbeat = job.Connect(w, "a:2", "b:2");
  job.Send(w, heartbeat, {10}, 30, 100, 0);
  Records records = job.records();
  uint64_t x = 99, t = 0;
  for (int i = 0; i < 400; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t += (x >> 40) % 9 * kMs;
    records.messages.push_back(
        MessageRecord{w, chatty, t, 1 + (x >> 33) % 50000});
  }
  const Profile p = Analyze(records);
  EXPECT_FALSE(p.periodic);
  EXPECT_THAT(p.not_periodic_reason, ::testing::HasSubstr("only 0%"));
  EXPECT_FALSE(p.tensor_skew);
  EXPECT_FALSE(p.iteration_s);
  EXPECT_FALSE(p.bytes_per_iteration);
  EXPECT_FALSE(p.messages_per_iteration);
  EXPECT_FALSE(p.processes[0].tensor_skew);
  // Over everything recorded: the chatty peer has nearly all of it.
  ASSERT_EQ(p.peer_byte_shares.size(), 2u);
  EXPECT_EQ(p.peer_byte_shares[0].peer, "b:1");
  EXPECT_GT(p.peer_byte_shares[0].share, 0.99);
}

TEST(AnalyzeTest, NothingRecorded) {
  const Profile p = Analyze(Records{});
  EXPECT_FALSE(p.periodic);
  EXPECT_EQ(p.not_periodic_reason, "no messages were recorded");
  EXPECT_TRUE(p.peer_byte_shares.empty());
}

// Peers are named by process when their address is local to one in the
// records, else by address; a connection whose C line was lost is "?".
TEST(AnalyzeTest, PeersOutsideTheRecordsKeepTheirAddress) {
  JobBuilder job;
  const size_t w = job.Process(1, "w");
  job.Send(w, job.Connect(w, "10.0.0.1:5000", "10.0.0.2:6000"), {64}, 3, 10, 0);
  Records records = job.records();
  records.messages.push_back(MessageRecord{w, 77, 50 * kMs, 8});
  const Profile p = Analyze(records);
  ASSERT_EQ(p.streams.size(), 2u);
  EXPECT_EQ(p.streams[0].peer, "10.0.0.2:6000");
  EXPECT_EQ(p.streams[1].peer, "?");
  EXPECT_EQ(p.streams[1].kind, "");
}

}  // namespace
}  // namespace tiresias::profiler
