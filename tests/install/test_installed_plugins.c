// SPDX-License-Identifier: Apache-2.0
// The plugins as installed by `cmake --install` (into TOPO_INSTALL_PREFIX, laid down by the
// install_tree test): each one dlopen'ed through the plugin host from lib/ under both its own
// name and the libnccl-*-topo.so alias NCCL's short names (NCCL_TUNER_PLUGIN=topo) resolve to;
// the library mapped is the installed file, its name and first log line carry TOPO_VERSION, and
// it works (the tuner answers getCollInfo; the profiler writes a trace stamped with the version).
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "host_profiler.h"
#include "host_tuner.h"
#include "profiler_driver.h"
#include "topo_version.h"
#include "trace_format.h"

static char libdir[4096];
static char first_line[1024]; /* the first message a plugin logged */
static int lines;

static void capture_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void capture_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                        const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  if (lines++ > 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(first_line, sizeof first_line, fmt, ap);
  va_end(ap);
}

static void reset_log(void) {
  first_line[0] = '\0';
  lines = 0;
}

/* The file that holds `sym` is the installed one: its real path is under the prefix's lib/. */
static void assert_mapped_from_prefix(const void *sym) {
  Dl_info info;
  assert_true(dladdr(sym, &info));
  assert_non_null(info.dli_fname);
  char real[4096], want[4096];
  assert_non_null(realpath(info.dli_fname, real));
  assert_non_null(realpath(libdir, want));
  if (strncmp(real, want, strlen(want)) != 0)
    fail_msg("plugin mapped from %s, not from the installed %s", real, want);
}

static void lib_path(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", libdir, name);
}

static void check_tuner(const char *name) {
  char path[4200];
  lib_path(path, sizeof path, name);
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, path, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(t.lib.version, 5);
  assert_mapped_from_prefix(t.lib.sym);
  const char *plugin_name = *(const char *const *)t.lib.sym;
  if (!strstr(plugin_name, TOPO_VERSION))
    fail_msg("tuner name '%s' lacks %s", plugin_name, TOPO_VERSION);
  reset_log();
  ncclTunerConstants_v5_t constants;
  topo_host_default_constants(&constants);
  assert_int_equal(topo_host_tuner_init(&t, 0x1234, 8, 1, capture_log, NULL, &constants),
                   ncclSuccess);
  assert_non_null(t.ctx);
  if (!strstr(first_line, TOPO_VERSION))
    fail_msg("tuner's first log line '%s' lacks %s", first_line, TOPO_VERSION);
  /* A 256 MB AllReduce on one 8-GPU node, Tree and Ring allowed as NCCL would (the other
   * algorithms ignored, -1): some usable entry is left, and with no measured profile NCCL's own
   * pick (Tree/LL, the minimum) stays. */
  float table[7 * 3];
  for (int i = 0; i < 7 * 3; i++) table[i] = i < 2 * 3 ? 1000.0f + (float)i : -1.0f;
  int nch = 0, algo = -1, proto = -1;
  assert_int_equal(topo_host_tuner_get(&t, ncclFuncAllReduce, 256u << 20, 1, table, 0, &nch),
                   ncclSuccess);
  assert_true(topo_host_select(table, t.num_algo, 3, &algo, &proto));
  assert_int_equal(algo, NCCL_ALGO_TREE);
  assert_int_equal(proto, NCCL_PROTO_LL);
  assert_int_equal(topo_host_tuner_finalize(&t), ncclSuccess);
  topo_host_tuner_unload(&t);
}

static void test_installed_tuner_loads_by_its_own_name(void **state) {
  (void)state;
  check_tuner("libtopo-tuner.so");
}

static void test_installed_tuner_loads_by_the_nccl_alias(void **state) {
  (void)state;
  check_tuner("libnccl-tuner-topo.so");
}

/* The only *.trace file under dir, or "" */
static void only_trace(const char *dir, char *out, size_t n) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int count = 0;
  struct dirent *e;
  out[0] = '\0';
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len > 6 && !strcmp(e->d_name + len - 6, ".trace")) {
      snprintf(out, n, "%s/%s", dir, e->d_name);
      count++;
    }
  }
  closedir(d);
  assert_int_equal(count, 1);
}

static void check_profiler(const char *name) {
  char path[4200], dir[64] = "/tmp/topo-install-prof-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  lib_path(path, sizeof path, name);
  topo_host_profiler p;
  assert_int_equal(topo_host_profiler_load(&p, path, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(p.lib.version, 5);
  assert_mapped_from_prefix(p.lib.sym);
  const char *plugin_name = *(const char *const *)p.lib.sym;
  if (!strstr(plugin_name, TOPO_VERSION))
    fail_msg("profiler name '%s' lacks %s", plugin_name, TOPO_VERSION);
  reset_log();
  assert_int_equal(topo_host_profiler_init(&p, 0xabcdef, "install", 1, 2, 0, capture_log),
                   ncclSuccess);
  assert_non_null(p.ctx);
  if (!strstr(first_line, TOPO_VERSION))
    fail_msg("profiler's first log line '%s' lacks %s", first_line, TOPO_VERSION);
  drv_op op;
  memset(&op, 0, sizeof op);
  op.func = "AllReduce";
  op.dtype = "ncclFloat32";
  op.algo = "RING";
  op.proto = "SIMPLE";
  op.seq = 1;
  op.count = 262144;
  op.peer = -1;
  op.nch = 2;
  op.nwarps = 16;
  op.stream = (void *)0x7f0000001000;
  drv_set_gpu(&op, 1796061791515522368ull, 150, 20000);
  drv_run(&p, &op);
  assert_int_equal(topo_host_profiler_finalize(&p), ncclSuccess);
  topo_host_profiler_unload(&p);

  char trace[4200];
  only_trace(dir, trace, sizeof trace);
  FILE *f = fopen(trace, "rb");
  assert_non_null(f);
  topo_trace_header h;
  assert_int_equal(fread(&h, sizeof h, 1, f), 1);
  fclose(f);
  assert_memory_equal(h.magic, TOPO_TRACE_MAGIC, 8);
  assert_string_equal(h.topo_version, TOPO_VERSION);
  assert_int_equal(h.nranks, 2);
  unlink(trace);
  rmdir(dir);
}

static void test_installed_profiler_loads_by_its_own_name(void **state) {
  (void)state;
  check_profiler("libtopo-profiler.so");
}

static void test_installed_profiler_loads_by_the_nccl_alias(void **state) {
  (void)state;
  check_profiler("libnccl-profiler-topo.so");
}

static void test_aliases_are_links_to_the_plugins(void **state) {
  (void)state;
  static const char *const pairs[][2] = {{"libnccl-tuner-topo.so", "libtopo-tuner.so"},
                                         {"libnccl-profiler-topo.so", "libtopo-profiler.so"}};
  for (int i = 0; i < 2; i++) {
    char path[4200], target[256];
    lib_path(path, sizeof path, pairs[i][0]);
    ssize_t n = readlink(path, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    assert_string_equal(target, pairs[i][1]); /* relative: the prefix can move */
  }
}

/* argv[1], when given, is the installed lib/ to test instead of the install_tree test's. */
int main(int argc, char **argv) {
  snprintf(libdir, sizeof libdir, "%s", argc > 1 ? argv[1] : TOPO_INSTALLED_LIBDIR);
  unsetenv("TOPO_PROFILER_ENABLE");
  unsetenv("TOPO_PROFILER_EVENTS");
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_FORCE");
  unsetenv("TOPO_TUNER_RULES");
  setenv("TOPO_TUNER_GPU", "H200", 1);
  setenv("TOPO_PROFILER_NVTX", "0", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_aliases_are_links_to_the_plugins),
      cmocka_unit_test(test_installed_tuner_loads_by_its_own_name),
      cmocka_unit_test(test_installed_tuner_loads_by_the_nccl_alias),
      cmocka_unit_test(test_installed_profiler_loads_by_its_own_name),
      cmocka_unit_test(test_installed_profiler_loads_by_the_nccl_alias),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
