// SPDX-License-Identifier: Apache-2.0
// The profiler's NVTX ranges, captured by the test NVTX tool (nvtx_capture.c): our own "topo"
// domain, a named category and a registered string per collective type, one start/end range per
// collective with bytes/algorithm/protocol/channels/seq in its message and bytes as payload, and
// at GPU completion a mark carrying the GPU duration.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  size_t len = strlen(prefix);
  for (const char *p = text; p && *p;) {
    if (!strncmp(p, prefix, len)) n++;
    p = strchr(p, '\n');
    if (p) p++;
  }
  return n;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

static void test_one_range_per_collective_from_enqueue_to_gpu_completion(void **s) {
  (void)s;
  unlink(TOPO_TEST_NVTX_CAPTURE);
  char dir[] = "/tmp/topo-nvtx-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "2", 1);
  setenv("TOPO_PROFILER_STARTUP_MS", "0", 1); /* the sampling rule from the first operation */
  topo_host_profiler p;
  assert_int_equal(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28), TOPO_OK);
  topo_host_profiler_init(&p, 0x77, NULL, 1, 2, 0, topo_host_log);
  drv_op ops[3];
  memset(ops, 0, sizeof ops);
  for (int i = 0; i < 2; i++) {
    ops[i].func = "AllReduce";
    ops[i].dtype = "ncclFloat32";
    ops[i].algo = "RING";
    ops[i].proto = "SIMPLE";
    ops[i].seq = 5 + (uint64_t)i;
    ops[i].count = 262144;
    ops[i].nch = 2;
    ops[i].peer = -1;
    drv_set_gpu(&ops[i], 1796061791515522368ull, 150, 20000);
  }
  ops[2].p2p = 1;
  ops[2].func = "Send";
  ops[2].dtype = "ncclInt8";
  ops[2].count = 4096;
  ops[2].peer = 1;
  ops[2].nch = 1;
  drv_set_gpu(&ops[2], 1796061791600000000ull, 0, 3000);
  /* op 0 sampled (GPU-timed), op 1 not, op 2 sampled */
  for (int i = 0; i < 3; i++) drv_run(&p, &ops[i]);
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  test_trace_rmdir(dir);

  char *text = slurp(TOPO_TEST_NVTX_CAPTURE);
  assert_non_null(text);
  assert_int_equal(count_lines(text, "DOMAIN "), 1);
  assert_non_null(strstr(text, "DOMAIN dom=1 name=topo\n"));
  assert_int_equal(count_lines(text, "CATEGORY dom=1 "), 11);
  assert_non_null(strstr(text, "CATEGORY dom=1 cat=5 name=AllReduce\n"));
  assert_non_null(strstr(text, "CATEGORY dom=1 cat=7 name=Send\n"));
  assert_int_equal(count_lines(text, "STRING dom=1 "), 11);
  /* ranges: start/end (never push/pop), one per operation, all ended */
  assert_int_equal(count_lines(text, "PUSH"), 0);
  assert_int_equal(count_lines(text, "START "), 3);
  assert_int_equal(count_lines(text, "END "), 3);
  for (int id = 1; id <= 3; id++) {
    char want[64];
    snprintf(want, sizeof want, "END dom=1 id=%d\n", id);
    assert_non_null(strstr(text, want));
  }
  assert_non_null(strstr(text,
                         "cat=5 color=ffe15759 payload=u64:1048576 msg=AllReduce 1048576 B "
                         "RING/SIMPLE ch 2 seq 5\n"));
  assert_non_null(strstr(text, "msg=AllReduce 1048576 B RING/SIMPLE ch 2 seq 6\n"));
  assert_non_null(strstr(text,
                         "cat=7 color=ffedc948 payload=u64:4096 msg=Send 4096 B peer 1 ch 1 "
                         "seq 0\n"));
  /* GPU durations as marks for the two timed operations: 20.150 us and 3.000 us */
  assert_int_equal(count_lines(text, "MARK "), 2);
  assert_non_null(strstr(text, "MARK dom=1 cat=5 payload=f64:20.150 msg=reg:AllReduce\n"));
  assert_non_null(strstr(text, "MARK dom=1 cat=7 payload=f64:3.000 msg=reg:Send\n"));
  /* each range ends after it starts */
  const char *start = strstr(text, "START dom=1 id=1 ");
  const char *end = strstr(text, "END dom=1 id=1\n");
  assert_true(start && end && start < end);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_range_per_collective_from_enqueue_to_gpu_completion),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
