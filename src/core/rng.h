// The one source of randomness the scheduling core may use: a seeded
// generator handed in by the host, so that every run is reproducible.
#ifndef TIRESIAS_CORE_RNG_H_
#define TIRESIAS_CORE_RNG_H_

#include <cstdint>
#include <random>

namespace tiresias {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform integer in [0, n). Requires n > 0.
  uint64_t Below(uint64_t n) {
    return std::uniform_int_distribution<uint64_t>(0, n - 1)(engine_);
  }
 private:
  std::mt19937_64 engine_;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_RNG_H_
