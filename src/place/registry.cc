// The registry: placement scheme name -> factory. One line per scheme.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "place/placement.h"

namespace tiresias {
namespace {

struct Entry {
  std::string_view name;
  std::unique_ptr<Placer> (*make)(const PlacementOptions&);
};

const Entry kPlacers[] = {
    {"consolidate", [](const PlacementOptions&) { return NewConsolidatePlacer(); }},
    {"spread", [](const PlacementOptions&) { return NewSpreadPlacer(); }},
    {"pack", [](const PlacementOptions&) { return NewPackPlacer(); }},
    {"random", [](const PlacementOptions&) { return NewRandomPlacer(); }},
    {"profiled", NewProfiledPlacer},
    {"count", [](const PlacementOptions&) { return NewCountPlacer(); }},
};

}  // namespace

absl::StatusOr<std::unique_ptr<Placer>> MakePlacer(
    std::string_view name, const PlacementOptions& options) {
  for (const Entry& e : kPlacers) {
    if (e.name == name) return e.make(options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown placement \"", std::string(name), "\"; expected one of ",
                   absl::StrJoin(PlacerNames(), ", ")));
}

std::vector<std::string> PlacerNames() {
  std::vector<std::string> names;
  for (const Entry& e : kPlacers) names.emplace_back(e.name);
  return names;
}

}  // namespace tiresias
