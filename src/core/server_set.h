// A set of small indexes (servers, jobs) as a bitset: O(1) insert and erase,
// iteration in ascending order. Cluster keeps one of servers per free-GPU
// count, and every GPU allocated or released moves its server between two of
// them, so these must be cheap: a balanced tree cost most of a Philly replay.
// The scheduler keeps per-job flags its walk reads in one (a bit per job
// stays in the first-level cache).
#ifndef TIRESIAS_CORE_SERVER_SET_H_
#define TIRESIAS_CORE_SERVER_SET_H_

#include <bit>
#include <cstdint>
#include <iterator>
#include <vector>

namespace tiresias {

class ServerSet {
 public:
  using value_type = int;

  explicit ServerSet(int capacity = 0) : words_((capacity + 63) / 64, 0) {}

  // Room for indexes 0..capacity-1 (never shrinks; members stay).
  void Grow(int capacity) {
    const size_t words = (capacity + 63) / 64;
    if (words > words_.size()) words_.resize(words, 0);
  }
  void insert(int s) { words_[s >> 6] |= uint64_t{1} << (s & 63); }
  void erase(int s) { words_[s >> 6] &= ~(uint64_t{1} << (s & 63)); }
  bool contains(int s) const { return words_[s >> 6] >> (s & 63) & 1; }
  bool empty() const { return begin() == end(); }
  int size() const {
    int n = 0;
    for (uint64_t w : words_) n += std::popcount(w);
    return n;
  }

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = int;
    using difference_type = std::ptrdiff_t;
    using pointer = const int*;
    using reference = int;

    iterator() = default;
    int operator*() const { return current_; }
    iterator& operator++() {
      Advance(current_ + 1);
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const iterator& o) const { return current_ == o.current_; }

   private:
    friend class ServerSet;
    iterator(const std::vector<uint64_t>* words, int from) : words_(words) {
      Advance(from);
    }
    // Moves to the first member >= from, or the end (-1).
    void Advance(int from) {
      const int n = static_cast<int>(words_->size());
      int w = from >> 6;
      if (w >= n) {
        current_ = -1;
        return;
      }
      uint64_t bits = (*words_)[w] & (~uint64_t{0} << (from & 63));
      while (bits == 0) {
        if (++w >= n) {
          current_ = -1;
          return;
        }
        bits = (*words_)[w];
      }
      current_ = (w << 6) + std::countr_zero(bits);
    }
    const std::vector<uint64_t>* words_ = nullptr;
    int current_ = -1;
  };

  using const_iterator = iterator;
  iterator begin() const { return iterator(&words_, 0); }
  iterator end() const { return iterator(); }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_SERVER_SET_H_
