// A virtual cluster (team) as the master stores it (v1::VirtualCluster):
// its quota, limits, fair share and members. Store::PutVc writes one,
// MasterState turns them into the scheduler's VcSpecs (master_vcs.cc).
#ifndef TIRESIAS_MASTER_VC_RECORD_H_
#define TIRESIAS_MASTER_VC_RECORD_H_

#include <string>
#include <vector>

namespace tiresias {
namespace v1 {
class VirtualCluster;
}

struct VcRecord {
  std::string name;
  std::string quota;  // cells, CellsText's form ("2x8,4x1"); "" none
  double weight = 1;
  int borrow_limit = -1;  // GPUs; -1: no limit
  int lend_limit = -1;    // GPUs; -1: no limit
  bool fair_per_user = false;
  double fair_quantum = 0;               // GPU-seconds; 0: the default (600)
  std::vector<std::string> members;      // user names, or "*": everyone
  std::vector<std::string> default_for;  // users whose default VC it is

  bool operator==(const VcRecord&) const = default;
};

// The wire's form and back (store_vcs.cc: the store keeps these bytes).
// VcFromProto copies the fields as they are; the master validates them.
void VcToProto(const VcRecord& vc, v1::VirtualCluster* out);
VcRecord VcFromProto(const v1::VirtualCluster& vc);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_VC_RECORD_H_
