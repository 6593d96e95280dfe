// Test-only: posts RDMA work requests through the real <infiniband/verbs.h>
// (whose ibv_post_send is inline: it calls the context's ops.post_send),
// linked against fake_ibverbs.cc. Per iteration, on queue pair A: a SEND
// of 3 scatter/gather entries (100 + 200 + 300 bytes), an RDMA WRITE of
// 4096 bytes and an RDMA READ of 512 (no data goes out); on queue pair B:
// a WRITE_WITH_IMM of 64 bytes. Then a list of two WRITEs (1000 bytes, and
// wr_id 99, which the stand-in refuses): only the first was posted.
// Prints "posted N failed F" and exits 0.
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? atoi(argv[1]) : 3;
  int n = 0;
  ibv_device** devices = ibv_get_device_list(&n);
  if (devices == nullptr || n < 1) return 1;
  ibv_context* context = ibv_open_device(devices[0]);
  ibv_pd* pd = ibv_alloc_pd(context);
  ibv_qp_init_attr init = {};
  init.qp_type = IBV_QPT_RC;
  ibv_qp* a = ibv_create_qp(pd, &init);
  ibv_qp* b = ibv_create_qp(pd, &init);
  if (a == nullptr || b == nullptr) return 1;
  static char buffer[8192];
  const auto addr = reinterpret_cast<uintptr_t>(buffer);
  int posted = 0;
  int failed = 0;
  for (int it = 0; it < iterations; ++it) {
    ibv_sge sges[3] = {{addr, 100, 1}, {addr, 200, 1}, {addr, 300, 1}};
    ibv_sge big = {addr, 4096, 1};
    ibv_sge read = {addr, 512, 1};
    ibv_send_wr wrs[3] = {};
    wrs[0].wr_id = 1;
    wrs[0].sg_list = sges;
    wrs[0].num_sge = 3;
    wrs[0].opcode = IBV_WR_SEND;
    wrs[0].next = &wrs[1];
    wrs[1].wr_id = 2;
    wrs[1].sg_list = &big;
    wrs[1].num_sge = 1;
    wrs[1].opcode = IBV_WR_RDMA_WRITE;
    wrs[1].next = &wrs[2];
    wrs[2].wr_id = 3;
    wrs[2].sg_list = &read;
    wrs[2].num_sge = 1;
    wrs[2].opcode = IBV_WR_RDMA_READ;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(a, wrs, &bad) == 0)
      posted += 3;
    else
      ++failed;
    ibv_sge imm = {addr, 64, 1};
    ibv_send_wr w = {};
    w.wr_id = 4;
    w.sg_list = &imm;
    w.num_sge = 1;
    w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    if (ibv_post_send(b, &w, &bad) == 0)
      posted += 1;
    else
      ++failed;
  }
  ibv_sge one = {addr, 1000, 1};
  ibv_send_wr pair[2] = {};
  pair[0].wr_id = 5;
  pair[0].sg_list = &one;
  pair[0].num_sge = 1;
  pair[0].opcode = IBV_WR_RDMA_WRITE;
  pair[0].next = &pair[1];
  pair[1].wr_id = 99;
  pair[1].sg_list = &one;
  pair[1].num_sge = 1;
  pair[1].opcode = IBV_WR_RDMA_WRITE;
  ibv_send_wr* bad = nullptr;
  errno = 0;
  if (ibv_post_send(a, pair, &bad) != 0 && bad == &pair[1]) {
    posted += 1;
    ++failed;
  }
  printf("posted %d failed %d\n", posted, failed);
  return 0;
}
