// SPDX-License-Identifier: Apache-2.0
// The profiler's CUPTI path, for real, against the fake libcupti: kernels, copies and sets
// become topo_rec_kernel records of a process-wide trace (names as string records, NCCL kernels
// flagged by name), CUPTI's dropped count and clock offset reach the file; a CUPTI held by
// another profiler or missing altogether earns one warning and the plugin carries on.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "fake_cupti.h"
#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

static char dir[256];
static void *fake;

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-ct-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_CUPTI", "1", 1);
  setenv("TOPO_PROFILER_CUPTI_LIB", TOPO_TEST_FAKE_CUPTI, 1);
  fake = dlopen(TOPO_TEST_FAKE_CUPTI, RTLD_NOW | RTLD_LOCAL);
  if (!fake) return -1;
  ((fake_cupti_reset_fn)dlsym(fake, "fake_cupti_reset"))();
  topo_host_log_reset();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  dlclose(fake);
  test_trace_rmdir(dir);
  return 0;
}

/* The process-wide CUPTI trace and the comm trace of the directory. */
static void read_traces(test_trace *cupti, test_trace *comm) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  int found_cupti = 0, found_comm = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace *t = strstr(strrchr(paths[i], '/'), "-cupti") ? cupti : comm;
    if (t == cupti) found_cupti++;
    else found_comm++;
    assert_int_equal(test_trace_read(paths[i], t), 0);
  }
  test_trace_free_list(paths, n);
  if (cupti) assert_int_equal(found_cupti, 1);
  assert_int_equal(found_comm, 1);
}

/* The text of string id `id`, joined over its records. */
static void string_of(const test_trace *t, uint32_t id, char *out, size_t n) {
  size_t len = 0;
  out[0] = 0;
  for (size_t i = 0; i < t->count; i++) {
    const topo_rec_string *s = &t->records[i].string;
    if (s->type != TOPO_REC_STRING || s->id != id) continue;
    if (len + s->len < n) {
      memcpy(out + len, s->text, s->len);
      len += s->len;
      out[len] = 0;
    }
    if (s->flags & TOPO_STRING_F_LAST) break;
  }
}

static void test_kernels_and_copies_reach_a_process_wide_trace(void **s) {
  (void)s;
  fake_cupti_kernel_fn kernel = (fake_cupti_kernel_fn)dlsym(fake, "fake_cupti_kernel");
  fake_cupti_copy_fn copy = (fake_cupti_copy_fn)dlsym(fake, "fake_cupti_copy");
  fake_cupti_add_dropped_fn add_dropped = (fake_cupti_add_dropped_fn)dlsym(fake, "fake_cupti_add_dropped");
  topo_host_profiler p;
  assert_int_equal(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28), TOPO_OK);
  int64_t rt_before = topo_clock_realtime_ns();
  topo_host_profiler_init(&p, 0x99, NULL, 1, 2, 0, topo_host_log);
  assert_non_null(p.ctx);
  const char *gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1";
  const char *nccl = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
  assert_true(kernel(gemm, 1000, 5000, 7, 0, 11));
  assert_true(kernel(nccl, 4000, 9000, 13, 0, 12));
  assert_true(kernel(gemm, 5100, 9100, 7, 0, 13));
  assert_true(copy(0, 1 << 20, 9200, 9400, 7, 0));
  assert_true(copy(1, 4096, 9500, 9510, 7, 0));
  add_dropped(5);
  drv_op op;
  memset(&op, 0, sizeof op);
  op.func = "AllReduce";
  op.dtype = "ncclBfloat16";
  op.algo = "RING";
  op.proto = "LL";
  op.count = 1024;
  op.nch = 1;
  op.peer = -1;
  drv_run(&p, &op);
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);

  test_trace c, comm;
  read_traces(&c, &comm);
  assert_true(c.has_footer);
  assert_int_equal(c.header.comm_hash, 0);
  assert_int_equal(c.header.rank, -1);
  assert_true(c.header.flags & TOPO_TRACE_F_CUPTI);
  int64_t off = c.header.cupti_minus_realtime_ns;
  assert_true(off > FAKE_CUPTI_CLOCK_OFFSET_NS - 50000000 && off < FAKE_CUPTI_CLOCK_OFFSET_NS + 50000000);
  (void)rt_before;
  const topo_trace_record **k;
  size_t nk = test_trace_select(&c, TOPO_REC_KERNEL, &k);
  assert_int_equal(nk, 5);
  char name[256];
  assert_int_equal(k[0]->kernel.kind, TOPO_KERNEL_COMPUTE);
  assert_int_equal(k[0]->kernel.gpu_start_ns, 1000);
  assert_int_equal(k[0]->kernel.gpu_stop_ns, 5000);
  assert_int_equal(k[0]->kernel.stream_id, 7);
  assert_int_equal(k[0]->kernel.correlation, 11);
  string_of(&c, k[0]->kernel.name_id, name, sizeof name);
  assert_string_equal(name, gemm); /* longer than 48: several string records */
  assert_int_equal(k[1]->kernel.kind, TOPO_KERNEL_NCCL);
  string_of(&c, k[1]->kernel.name_id, name, sizeof name);
  assert_string_equal(name, nccl);
  assert_int_equal(k[2]->kernel.name_id, k[0]->kernel.name_id); /* interned once */
  assert_int_equal(k[3]->kernel.kind, TOPO_KERNEL_MEMCPY);
  assert_int_equal(k[3]->kernel.bytes, 1 << 20);
  assert_int_equal(k[4]->kernel.kind, TOPO_KERNEL_MEMSET);
  assert_int_equal(k[4]->kernel.bytes, 4096);
  assert_int_equal(c.footer.dropped[TOPO_DROP_CUPTI], 5);
  const topo_trace_record **strs;
  assert_int_equal(test_trace_select(&c, TOPO_REC_STRING, &strs), 2 + 1); /* gemm: 2, nccl: 1 */
  /* the comm trace says CUPTI was on and still has its collective */
  assert_true(comm.header.flags & TOPO_TRACE_F_CUPTI);
  const topo_trace_record **colls;
  assert_int_equal(test_trace_select(&comm, TOPO_REC_COLL, &colls), 1);
  free(k);
  free(strs);
  free(colls);
  test_trace_free(&c);
  test_trace_free(&comm);
}

static void test_cupti_held_by_another_profiler_warns_and_carries_on(void **s) {
  (void)s;
  ((fake_cupti_set_busy_fn)dlsym(fake, "fake_cupti_set_busy"))(1);
  topo_host_profiler p;
  assert_int_equal(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_profiler_init(&p, 0x9a, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  assert_non_null(p.ctx);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("already in use"));
  drv_op op;
  memset(&op, 0, sizeof op);
  op.func = "AllGather";
  op.dtype = "ncclInt8";
  op.algo = "RING";
  op.proto = "SIMPLE";
  op.count = 1 << 20;
  op.nch = 2;
  op.peer = -1;
  drv_run(&p, &op);
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  test_trace comm;
  read_traces(NULL, &comm);
  assert_false(comm.header.flags & TOPO_TRACE_F_CUPTI);
  const topo_trace_record **colls;
  assert_int_equal(test_trace_select(&comm, TOPO_REC_COLL, &colls), 1);
  free(colls);
  test_trace_free(&comm);
}

static void test_missing_cupti_warns_and_carries_on(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_CUPTI_LIB", "/nonexistent/libcupti.so.13", 1);
  topo_host_profiler p;
  assert_int_equal(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_profiler_init(&p, 0x9b, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  assert_non_null(p.ctx);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("could not be loaded"));
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  test_trace comm;
  read_traces(NULL, &comm);
  test_trace_free(&comm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_kernels_and_copies_reach_a_process_wide_trace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cupti_held_by_another_profiler_warns_and_carries_on, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_cupti_warns_and_carries_on, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
