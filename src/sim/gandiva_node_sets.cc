#include "sim/gandiva_node_sets.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tiresias {
namespace {

// The GPU counts the original has node-set lists for, in the order its
// Python 2.7 dict iterates them ({1: .., 2: .., 4: .., 8: .., 12: .., 16: ..,
// 24: .., 32: .., 64: ..}.keys() is [16, 1, 2, 4, 24, 32, 8, 64, 12]). The
// order matters: classes grow in turn from the same free servers. Other
// counts (the original stops on them) come after, smallest first.
constexpr int kOriginalClassOrder[] = {16, 1, 2, 4, 24, 32, 8, 64, 12};

int OrderRank(int gpus) {
  for (int i = 0; i < 9; ++i) {
    if (kOriginalClassOrder[i] == gpus) return i;
  }
  return 9;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

GandivaNodeSets::GandivaNodeSets(const Topology& topology,
                                 const std::vector<int>& job_gpus)
    : topology_(topology), num_jobs_(static_cast<uint32_t>(job_gpus.size())) {
  for (int s = 0; s < topology.num_servers(); ++s) {
    free_servers_.push_back(s);
    free_gpus_ += topology.server(s).num_gpus;
    if (topology.server(s).num_gpus != topology.server(0).num_gpus) {
      uniform_servers_ = false;
    }
  }
  std::vector<int> counts(std::begin(kOriginalClassOrder),
                          std::end(kOriginalClassOrder));
  counts.insert(counts.end(), job_gpus.begin(), job_gpus.end());
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::stable_sort(counts.begin(), counts.end(),
                   [](int a, int b) { return OrderRank(a) < OrderRank(b); });
  for (int g : counts) {
    class_of_gpus_[g] = static_cast<int>(classes_.size());
    classes_.push_back(Class{.gpus = g});
  }
}

int GandivaNodeSets::FindClass(int gpus) const {
  auto it = class_of_gpus_.find(gpus);
  return it == class_of_gpus_.end() ? -1 : it->second;
}

int GandivaNodeSets::ServersFor(int gpus, size_t skip, int free_gpus) const {
  if (free_gpus < gpus) return 0;
  if (uniform_servers_) {
    return static_cast<int>(CeilDiv(gpus, topology_.server(0).num_gpus));
  }
  int n = 0, got = 0;
  for (size_t i = skip; got < gpus; ++i, ++n) {
    got += topology_.server(free_servers_[i]).num_gpus;
  }
  return n;
}

int GandivaNodeSets::NewSet(int cls, int skip_servers) {
  int id;
  if (!unused_set_ids_.empty()) {
    id = unused_set_ids_.back();
    unused_set_ids_.pop_back();
  } else {
    id = static_cast<int>(sets_.size());
    sets_.emplace_back();
    is_touched_.push_back(0);
  }
  NodeSet& set = sets_[id];
  set.cls = cls;
  const int g = classes_[cls].gpus;
  while (set.gpus < g) {
    const int server = free_servers_[skip_servers];
    if (skip_servers == 0) {
      free_servers_.pop_front();
    } else {
      free_servers_.erase(free_servers_.begin() + skip_servers);
    }
    set.servers.push_back(server);
    set.gpus += topology_.server(server).num_gpus;
  }
  free_gpus_ -= set.gpus;
  set.capacity = set.gpus / g;
  classes_[cls].occupied_gpus += set.gpus;
  return id;
}

// Keeps the vectors' memory for the set's next use.
void GandivaNodeSets::Unuse(int id) {
  NodeSet& set = sets_[id];
  set.cls = -1;
  set.servers.clear();
  set.gpus = 0;
  set.capacity = 0;
  set.util = 0;
  set.jobs.clear();
  unused_set_ids_.push_back(id);
}

// Only a job that lands among the set's running ones changes who runs.
void GandivaNodeSets::Append(int set, uint32_t job) {
  NodeSet& s = sets_[set];
  if (static_cast<int>(s.jobs.size()) < s.capacity) Touch(set);
  s.jobs.push_back(job);
}

// The original's node_list.sort(key=util), which is stable. The lists are
// short and nearly sorted: an insertion sort (stable, allocates nothing).
void GandivaNodeSets::SortByUtil(std::vector<int>* sets) const {
  std::vector<int>& v = *sets;
  for (size_t i = 1; i < v.size(); ++i) {
    const int id = v[i];
    const int64_t util = sets_[id].util;
    size_t k = i;
    for (; k > 0 && sets_[v[k - 1]].util > util; --k) v[k] = v[k - 1];
    v[k] = id;
  }
}

bool GandivaNodeSets::CanPlace(int gpus) const {
  const int cls = FindClass(gpus);
  return (cls >= 0 && !classes_[cls].sets.empty()) || free_gpus_ >= gpus;
}

bool GandivaNodeSets::Place(uint32_t job, int gpus) {
  const int cls = FindClass(gpus);
  assert(cls >= 0);
  Class& c = classes_[cls];
  std::vector<int>& list = c.sets;
  // 1. The set at the head of the list (least util, when sorted), if it has
  // room: util + 1 < capacity (strict, as in the original: a set of
  // capacity 8 takes a seventh job this way, not an eighth).
  if (!list.empty()) {
    const int head = list.front();
    list.erase(list.begin());
    list.push_back(head);
    if (sets_[head].util + 1 < sets_[head].capacity) {
      ++sets_[head].util;
      Append(head, job);
      ++c.num_jobs;
      SortByUtil(&list);
      return true;
    }
    // The original puts it back at the end without sorting.
  }
  // 2. A new set on free servers.
  if (free_gpus_ >= gpus) {
    const int id = NewSet(cls, 0);
    sets_[id].util = 1;
    Append(id, job);
    ++c.num_jobs;
    list.push_back(id);
    SortByUtil(&list);
    return true;
  }
  // 3. Time slicing: the set now at the head (after step 1 moved the first
  // to the back, the second least loaded one).
  if (!list.empty()) {
    const int head = list.front();
    list.erase(list.begin());
    ++sets_[head].util;
    Append(head, job);
    ++c.num_jobs;
    list.push_back(head);
    SortByUtil(&list);
    return true;
  }
  return false;
}

GandivaNodeSets::AdjustOutcome GandivaNodeSets::Adjust(bool dry_run) {
  AdjustOutcome out;
  int64_t total_demand = 0;
  for (const Class& c : classes_) total_demand += c.num_jobs * c.gpus;
  if (total_demand == 0) return out;
  const double total_gpus = topology_.total_gpus();
  // Servers at the head of the free FIFO held by sets that this pass makes
  // and leaves empty: the step releases them again, so they stay where they
  // are, but classes later in the pass cannot use them.
  size_t held_servers = 0;
  int held_gpus = 0;
  for (int cls = 0; cls < static_cast<int>(classes_.size()); ++cls) {
    Class& c = classes_[cls];
    const int64_t demand = c.num_jobs * c.gpus;
    if (demand == 0) continue;
    const int64_t plan = static_cast<int64_t>(
        std::floor(static_cast<double>(demand) /
                   static_cast<double>(total_demand) * total_gpus));
    const int64_t target = plan < demand ? plan : demand;
    const int64_t diff = target - c.occupied_gpus;
    if (diff > 0) {
      // gandiva_node_set_expand: up to ceil(diff / g) new sets. (The
      // original counts sets in job-sized steps, not set-sized ones.)
      const int64_t wanted = CeilDiv(diff, c.gpus);
      int64_t made = 0;
      int last_servers = 0;
      size_t skip = held_servers;
      int free = free_gpus_ - held_gpus;
      for (; made < wanted; ++made) {
        const int n = ServersFor(c.gpus, skip, free);
        if (n == 0) break;
        for (int i = 0; i < n; ++i) {
          free -= topology_.server(free_servers_[skip + i]).num_gpus;
        }
        skip += n;
        last_servers = n;
        if (uniform_servers_ && made == 0) {
          // All further sets take the same n servers: count them at once.
          const int64_t more = std::min<int64_t>(
              wanted - 1, free / (n * topology_.server(0).num_gpus));
          made += more;
          skip += static_cast<size_t>(more * n);
          free -= static_cast<int>(more * n * topology_.server(0).num_gpus);
        }
      }
      // The original rearranges when its loop variable `i` ends above 0;
      // the inner `for i in range(num_node)` reuses it, so after a last
      // successful iteration i = servers per set - 1 (0 for one-server sets:
      // no rearrangement), after a failed one i = ceil(diff / g).
      const int64_t i_final = made == wanted ? last_servers - 1 : wanted;
      if (i_final > 0) {
        const bool noop =
            made == 0 && c.sets.size() == 1 &&
            sets_[c.sets[0]].util ==
                static_cast<int64_t>(sets_[c.sets[0]].jobs.size());
        if (noop) continue;
        out.changed = true;
        if (dry_run) return out;
        for (int64_t k = 0; k < made; ++k) {
          c.sets.push_back(NewSet(cls, static_cast<int>(held_servers)));
        }
        Rearrange(cls);
      } else {
        // The new sets stay empty; the step's execute releases them.
        held_servers = skip;
        held_gpus = free_gpus_ - free;
        out.releases = true;
      }
    } else if (diff < 0) {
      int64_t count = CeilDiv(-diff, c.gpus);
      const int64_t num_sets = static_cast<int64_t>(c.sets.size());
      if (num_sets <= count) count = num_sets - 1;
      if (count <= 0) continue;
      out.changed = true;
      if (dry_run) return out;
      Shrink(cls, count);
    }
  }
  return out;
}

// The re-arrangement after an expansion: every job of the class is taken
// out, the util of every set with jobs reset, and the jobs (in list order)
// dealt one at a time to the head of the list, which is re-sorted by util
// after each.
void GandivaNodeSets::Rearrange(int cls) {
  std::vector<int>& list = classes_[cls].sets;
  std::vector<uint32_t>& jobs = scratch_jobs_;
  jobs.clear();
  bool all_zero = true;
  for (int id : list) {
    NodeSet& set = sets_[id];
    Touch(id);
    if (!set.jobs.empty()) {
      jobs.insert(jobs.end(), set.jobs.begin(), set.jobs.end());
      set.jobs.clear();
      set.util = 0;
    }
    all_zero = all_zero && set.util == 0;
  }
  if (!all_zero) {
    // A set without jobs kept its util (only new, empty sets reach here, and
    // they start at 0, so this does not happen): deal literally.
    for (uint32_t job : jobs) {
      const int head = list.front();
      ++sets_[head].util;
      sets_[head].jobs.push_back(job);
      SortByUtil(&list);
    }
    return;
  }
  // From equal utils, dealing to the head and re-sorting is a snake: round r
  // goes through the list forwards when r is even, backwards when odd (the
  // head, one util up, lands in front of the sets already dealt to). So set
  // p of the list gets jobs r * m + p (r even) and r * m + m - 1 - p (odd).
  std::vector<int>& order = scratch_sets_;
  order = list;
  const size_t m = order.size(), n = jobs.size();
  const size_t rounds = n / m, rest = n % m;
  for (size_t p = 0; p < m; ++p) {
    NodeSet& set = sets_[order[p]];
    const size_t last = rounds % 2 == 0 ? p : m - 1 - p;
    const size_t count = rounds + (last < rest ? 1 : 0);
    set.jobs.resize(count);
    uint32_t* out = set.jobs.data();
    for (size_t r = 0; r < count; ++r) {
      out[r] = jobs[r * m + (r % 2 == 0 ? p : m - 1 - p)];
    }
    set.util = static_cast<int64_t>(count);
  }
  // The list ends sorted by util: the sets the last round did not reach,
  // then the ones it did, the last dealt first.
  list.clear();
  if (n == 0 || (rest == 0 && (rounds - 1) % 2 == 1)) {
    list = order;
  } else if (rest == 0) {
    list.assign(order.rbegin(), order.rend());
  } else if (rounds % 2 == 0) {
    list.assign(order.begin() + rest, order.end());
    list.insert(list.end(), order.rend() - rest, order.rend());
  } else {
    list.assign(order.rend() - (m - rest), order.rend());
    list.insert(list.end(), order.begin() + (m - rest), order.end());
  }
}

// gandiva_node_set_shrink: the first `count` sets of the list are freed,
// their jobs dealt to the head of the list (re-sorted after each).
void GandivaNodeSets::Shrink(int cls, int64_t count) {
  Class& c = classes_[cls];
  std::vector<int>& list = c.sets;
  std::vector<uint32_t>& jobs = scratch_jobs_;
  jobs.clear();
  for (int64_t k = 0; k < count; ++k) {
    const int id = list[k];
    NodeSet& set = sets_[id];
    jobs.insert(jobs.end(), set.jobs.begin(), set.jobs.end());
    for (int server : set.servers) free_servers_.push_back(server);
    free_gpus_ += set.gpus;
    c.occupied_gpus -= set.gpus;
    Unuse(id);
    Touch(id);
  }
  list.erase(list.begin(), list.begin() + count);
  if (jobs.empty()) return;
  // The first job goes to the head and the whole list is sorted; after
  // that only the head changes and the rest stays sorted, so the head moves
  // in front of the first set whose util is at least its own.
  int head = list.front();
  ++sets_[head].util;
  Append(head, jobs[0]);
  SortByUtil(&list);
  for (size_t i = 1; i < jobs.size(); ++i) {
    head = list[0];
    NodeSet& set = sets_[head];
    const int64_t util = ++set.util;
    Append(head, jobs[i]);
    size_t k = 1;
    for (; k < list.size() && sets_[list[k]].util < util; ++k) {
      list[k - 1] = list[k];
    }
    list[k - 1] = head;
  }
}

void GandivaNodeSets::RemoveJob(uint32_t job, int id) {
  NodeSet& set = sets_[id];
  auto it = std::find(set.jobs.begin(), set.jobs.end(), job);
  assert(it != set.jobs.end());
  set.jobs.erase(it);
  --classes_[set.cls].num_jobs;
  Touch(id);
}

void GandivaNodeSets::RotateOversubscribed() {
  for (const Class& c : classes_) {
    for (int id : c.sets) {
      NodeSet& set = sets_[id];
      if (static_cast<int>(set.jobs.size()) <= set.capacity) continue;
      std::rotate(set.jobs.begin(), set.jobs.begin() + set.capacity,
                  set.jobs.end());
      Touch(id);
    }
  }
}

bool GandivaNodeSets::ReleaseEmpty() {
  bool released = false;
  for (Class& c : classes_) {
    auto keep = c.sets.begin();
    for (int id : c.sets) {
      NodeSet& set = sets_[id];
      if (!set.jobs.empty()) {
        *keep++ = id;
        continue;
      }
      for (int server : set.servers) free_servers_.push_back(server);
      free_gpus_ += set.gpus;
      c.occupied_gpus -= set.gpus;
      Unuse(id);
      Touch(id);
      released = true;
    }
    c.sets.erase(keep, c.sets.end());
  }
  return released;
}

void GandivaNodeSets::TakeTouched(std::vector<int>* out) {
  out->swap(touched_);
  touched_.clear();
  for (int id : *out) is_touched_[id] = 0;
}

int GandivaNodeSets::num_oversubscribed() const {
  int n = 0;
  for (const Class& c : classes_) {
    for (int id : c.sets) {
      n += static_cast<int>(sets_[id].jobs.size()) > sets_[id].capacity;
    }
  }
  return n;
}

int GandivaNodeSets::FindSet(uint32_t job) const {
  for (const Class& c : classes_) {
    for (int id : c.sets) {
      const auto& jobs = sets_[id].jobs;
      if (std::find(jobs.begin(), jobs.end(), job) != jobs.end()) return id;
    }
  }
  return -1;
}

std::string GandivaNodeSets::CheckInvariants() const {
  int used_gpus = 0;
  std::vector<int> seen(num_jobs_, 0);
  for (int cls = 0; cls < static_cast<int>(classes_.size()); ++cls) {
    const Class& c = classes_[cls];
    int64_t jobs = 0, occupied = 0;
    for (int id : c.sets) {
      const NodeSet& set = sets_[id];
      if (set.cls != cls) return absl::StrCat("set ", id, " in wrong class");
      if (set.gpus < c.gpus || set.capacity != set.gpus / c.gpus) {
        return absl::StrCat("set ", id, " has ", set.gpus, " GPUs, capacity ",
                            set.capacity, " for ", c.gpus, "-GPU jobs");
      }
      for (uint32_t j : set.jobs) {
        if (j >= num_jobs_ || ++seen[j] > 1) {
          return absl::StrCat("job ", j, " twice or unknown");
        }
      }
      jobs += static_cast<int64_t>(set.jobs.size());
      occupied += set.gpus;
    }
    if (jobs != c.num_jobs || occupied != c.occupied_gpus) {
      return absl::StrCat("class ", c.gpus, ": counts ", c.num_jobs, "/",
                          c.occupied_gpus, ", actual ", jobs, "/", occupied);
    }
    used_gpus += static_cast<int>(occupied);
  }
  int free = 0;
  for (int server : free_servers_) free += topology_.server(server).num_gpus;
  if (free != free_gpus_ || used_gpus + free_gpus_ != topology_.total_gpus()) {
    return absl::StrCat("GPUs: ", used_gpus, " in sets + ", free_gpus_,
                        " free != ", topology_.total_gpus());
  }
  return "";
}

}  // namespace tiresias
