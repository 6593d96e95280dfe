// RDMA messages for the preloaded traffic profiler: every work request a
// job posts with ibv_post_send() on a queue pair.
//
// ibv_post_send() cannot be interposed by name: <infiniband/verbs.h>
// defines it as a static inline function that calls
// `qp->context->ops.post_send`, so no call ever reaches a symbol. Instead
// this file interposes the exported functions that hand out verbs
// contexts, ibv_open_device() and ibv_create_qp(), and, while recording,
// replaces the context's `ops.post_send` with a hook that records each work
// request and calls the provider's function. Contexts opened while the
// library is off are left untouched.
//
// A message is one work request that carries data (SEND and RDMA WRITE,
// with or without immediate or invalidate): the sum of its scatter/gather
// lengths. RDMA READ and atomics move no data outward and are not counted.
// The peer is the queue pair's remote end (ibv_query_qp: destination queue
// pair number and LID or GID), asked once per queue pair.
//
// Not seen: programs that resolve libibverbs symbols through their own
// dlopen() handle (NCCL does; the lookup skips preloaded libraries) and the
// extended work-request API (ibv_wr_*), which goes through ibv_qp_ex.
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>

#include <atomic>

#include "profiler/preload_recorder.h"

namespace tiresias::profiler::preload {
namespace {

using PostSendFn = int (*)(ibv_qp*, ibv_send_wr*, ibv_send_wr**);

constexpr int kMaxContexts = 64;

struct HookedContext {
  ibv_context* context;
  std::atomic<PostSendFn> post_send;  // the provider's
};

// Entries are added (under g_hook_mu) and never removed; a reader sees
// every entry below g_context_count.
HookedContext g_contexts[kMaxContexts];
std::atomic<int> g_context_count{0};
pthread_mutex_t g_hook_mu = PTHREAD_MUTEX_INITIALIZER;

PostSendFn ProviderPostSend(ibv_context* context) {
  const int n = g_context_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_contexts[i].context == context) {
      return g_contexts[i].post_send.load(std::memory_order_acquire);
    }
  }
  return nullptr;
}

bool CarriesData(ibv_wr_opcode opcode) {
  switch (opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return true;
    default:
      return false;
  }
}

void DescribePeer(void* arg, char* out, size_t size) {
  static std::atomic<void*> query_slot{nullptr};
  void* fn = query_slot.load(std::memory_order_relaxed);
  if (fn == nullptr) {
    fn = NextSymbol("ibv_query_qp");
    query_slot.store(fn, std::memory_order_relaxed);
  }
  if (fn == nullptr) return;
  auto* qp = static_cast<ibv_qp*>(arg);
  ibv_qp_attr attr = {};
  ibv_qp_init_attr init = {};
  const auto query = reinterpret_cast<decltype(&ibv_query_qp)>(fn);
  if (query(qp, &attr, IBV_QP_AV | IBV_QP_DEST_QPN, &init) != 0) return;
  if (attr.ah_attr.is_global) {
    const uint8_t* gid = attr.ah_attr.grh.dgid.raw;
    char hex[33];
    for (int i = 0; i < 16; ++i) snprintf(hex + 2 * i, 3, "%02x", gid[i]);
    snprintf(out, size, "qp:%u@gid:%s", attr.dest_qp_num, hex);
  } else {
    snprintf(out, size, "qp:%u@lid:%u", attr.dest_qp_num,
             static_cast<unsigned>(attr.ah_attr.dlid));
  }
}

int HookedPostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  const PostSendFn provider = ProviderPostSend(qp->context);
  if (provider == nullptr) {  // cannot happen: we hooked this context
    if (bad_wr != nullptr) *bad_wr = wr;
    return EINVAL;
  }
  const int result = provider(qp, wr, bad_wr);
  if (!Recording()) return result;
  const int saved = errno;
  // On failure, *bad_wr is the first request that was not posted.
  ibv_send_wr* const stop =
      result == 0 || bad_wr == nullptr ? nullptr : *bad_wr;
  for (ibv_send_wr* w = wr; w != nullptr && w != stop; w = w->next) {
    if (!CarriesData(w->opcode)) continue;
    uint64_t bytes = 0;
    for (int i = 0; i < w->num_sge; ++i) bytes += w->sg_list[i].length;
    if (bytes > 0) OnVerbsSend(qp->qp_num, bytes, DescribePeer, qp);
  }
  errno = saved;
  return result;
}

// Routes `context`'s post_send through HookedPostSend (once).
void Hook(ibv_context* context) {
  if (context == nullptr) return;
  pthread_mutex_lock(&g_hook_mu);
  const PostSendFn current = context->ops.post_send;
  if (current != nullptr && current != HookedPostSend) {
    const int n = g_context_count.load(std::memory_order_relaxed);
    int slot = 0;
    while (slot < n && g_contexts[slot].context != context) ++slot;
    if (slot < kMaxContexts) {
      // A context freed and another allocated at its address: same slot.
      g_contexts[slot].post_send.store(current, std::memory_order_release);
      g_contexts[slot].context = context;
      if (slot == n) g_context_count.store(n + 1, std::memory_order_release);
      context->ops.post_send = HookedPostSend;
    }
  }
  pthread_mutex_unlock(&g_hook_mu);
}

template <typename Fn>
Fn Next(std::atomic<void*>& slot, const char* name) {
  void* fn = slot.load(std::memory_order_relaxed);
  if (fn == nullptr) {
    fn = NextSymbol(name);
    slot.store(fn, std::memory_order_relaxed);
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace
}  // namespace tiresias::profiler::preload

using namespace tiresias::profiler::preload;  // NOLINT: the wrappers below

extern "C" {

__attribute__((visibility("default"))) ibv_context* ibv_open_device(
    ibv_device* device) {
  static std::atomic<void*> next_slot{nullptr};
  auto* const next =
      Next<decltype(&::ibv_open_device)>(next_slot, "ibv_open_device");
  if (next == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  ibv_context* const context = next(device);
  if (context != nullptr && Recording()) {
    const int saved = errno;
    Hook(context);
    errno = saved;
  }
  return context;
}

__attribute__((visibility("default"))) ibv_qp* ibv_create_qp(
    ibv_pd* pd, ibv_qp_init_attr* attr) {
  static std::atomic<void*> next_slot{nullptr};
  auto* const next =
      Next<decltype(&::ibv_create_qp)>(next_slot, "ibv_create_qp");
  if (next == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  ibv_qp* const qp = next(pd, attr);
  if (qp != nullptr && Recording()) {
    const int saved = errno;
    Hook(qp->context);
    errno = saved;
  }
  return qp;
}

}  // extern "C"
