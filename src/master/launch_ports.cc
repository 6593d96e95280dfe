// LaunchTable::ChoosePorts: the ports a launch's processes listen on, kept
// apart from those of every live launch on its nodes (launch_table.h).
#include <algorithm>
#include <utility>
#include <vector>

#include "master/launch_table.h"

namespace tiresias {

int LaunchTable::ChoosePorts(const Launch& launch, int span, int preferred,
                             int base, int window) const {
  // [first, end) of every live launch on one of its nodes.
  std::vector<std::pair<int, int>> taken;
  for (const Part& part : launch.parts) {
    if (part.node_id == 0) continue;
    for (const auto& [key, rank] : PartsOn(part.node_id)) {
      const Launch* other = Find(key);
      if (other == nullptr || other->first_port == 0 || other->AllEnded()) {
        continue;
      }
      taken.emplace_back(other->first_port,
                         other->first_port + std::max(other->port_span, 1));
    }
  }
  span = std::max(span, 1);
  const int top = base + window;  // the first port past the window
  int port = preferred;
  for (int tried = 0; tried <= window;) {
    if (port < base || port >= top || port + span > 65536) {
      tried += std::max(top - port, 1);
      port = base;  // wraps
      continue;
    }
    auto hit = std::find_if(taken.begin(), taken.end(), [&](const auto& r) {
      return port < r.second && r.first < port + span;
    });
    if (hit == taken.end()) return port;
    tried += std::min(hit->second, top) - port;
    port = hit->second;
  }
  return preferred;
}

}  // namespace tiresias
