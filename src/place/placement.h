// Placement schemes, by name: which free GPUs a job gets (core/placer.h).
//
//   consolidate  fewest servers, then fewest racks; a job that fits in one
//                server takes the fullest server that can hold it (best fit);
//                a larger one takes whole free servers. The production
//                default (YARN-CS).
//   spread       one GPU at a time from the server with the most free GPUs
//                (least loaded first): never waits for a whole server.
//   pack         best fit in one server if it can, else free GPUs from the
//                fullest servers first: never waits, fills holes.
//   random       uniformly random free GPUs (seeded).
//   profiled     consolidate when the model's tensor-size skew is above
//                PACKLIMIT, else pack (Tiresias' profile-guided scheme: a
//                job insensitive to placement takes whatever GPUs are free
//                and leaves whole servers to those that need them).
//   count        topology-free: any free GPUs, lowest-numbered first, as the
//                original Tiresias simulator counted them.
#ifndef TIRESIAS_PLACE_PLACEMENT_H_
#define TIRESIAS_PLACE_PLACEMENT_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/placer.h"

namespace tiresias {

struct PlacementOptions {
  // Skew (share of the model's largest tensor) above which `profiled`
  // consolidates. Between the low-skew models (<= 15%) and the VGG family
  // and AlexNet (>= 61%) of the built-in table.
  double pack_limit = 0.5;
};

absl::StatusOr<std::unique_ptr<Placer>> MakePlacer(
    std::string_view name, const PlacementOptions& options = {});
std::vector<std::string> PlacerNames();

// The schemes themselves (one file each); callers use MakePlacer.
std::unique_ptr<Placer> NewConsolidatePlacer();
std::unique_ptr<Placer> NewSpreadPlacer();
std::unique_ptr<Placer> NewPackPlacer();
std::unique_ptr<Placer> NewRandomPlacer();
// The name MakePlacer knows profile-guided placement by.
inline constexpr std::string_view kProfiledPlacement = "profiled";
std::unique_ptr<Placer> NewProfiledPlacer(const PlacementOptions& options);
std::unique_ptr<Placer> NewCountPlacer();

}  // namespace tiresias

#endif  // TIRESIAS_PLACE_PLACEMENT_H_
