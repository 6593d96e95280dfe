// Test-only: a stand-in for libibverbs with one device, so that the verbs
// path of the preloaded profiler runs on machines without RDMA hardware.
// It provides the exported functions verbs_job.cc calls; its context's
// ops.post_send (what the real header's inline ibv_post_send calls) counts
// the work requests it accepts and refuses one whose wr_id is 99.
#include <errno.h>
#include <infiniband/verbs.h>
#include <string.h>

namespace {

ibv_device g_device;
ibv_device* g_list[2] = {&g_device, nullptr};
ibv_context g_context;
ibv_pd g_pd;
ibv_qp g_qps[4];
int g_next_qp = 0;

int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  for (; wr != nullptr; wr = wr->next) {
    if (wr->wr_id == 99) {
      *bad_wr = wr;
      return ENOMEM;
    }
  }
  return 0;
}

}  // namespace

extern "C" {

ibv_device** ibv_get_device_list(int* num) {
  strcpy(g_device.name, "fake0");
  if (num != nullptr) *num = 1;
  return g_list;
}

void ibv_free_device_list(ibv_device** list) {}

ibv_context* ibv_open_device(ibv_device* device) {
  memset(&g_context, 0, sizeof g_context);
  g_context.device = device;
  g_context.ops.post_send = PostSend;
  return &g_context;
}

int ibv_close_device(ibv_context* context) { return 0; }

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  g_pd.context = context;
  return &g_pd;
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (g_next_qp >= 4) {
    errno = ENOMEM;
    return nullptr;
  }
  ibv_qp* qp = &g_qps[g_next_qp];
  qp->context = pd->context;
  qp->pd = pd;
  qp->qp_num = 100 + static_cast<uint32_t>(g_next_qp++);
  return qp;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask,
                 ibv_qp_init_attr* init) {
  attr->dest_qp_num = qp->qp_num + 1000;
  attr->ah_attr.dlid = 7;
  attr->ah_attr.is_global = 0;
  return 0;
}

}  // extern "C"
