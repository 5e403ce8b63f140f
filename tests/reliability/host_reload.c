// SPDX-License-Identifier: Apache-2.0
// A plugin-host program for memcheck: loads each built plugin (tuner, then profiler) the way NCCL
// does, several communicators per load (init -> calls -> finalize), then dlclose, and again,
// CYCLES times, with a profile and a rule file in use so that every loader runs, and every
// profiler event class on. CTest runs it under `valgrind --error-exitcode=1 --leak-check=full
// --errors-for-leak-kinds=definite` (label valgrind): any invalid access or definite leak across
// reloads fails it. Exits non-zero itself when a call does not answer success, a warning is
// logged, or a profiler cycle leaves other than one trace per communicator.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_tuner.h"
#ifdef TOPO_TEST_PROFILER_SO
#include <dirent.h>

#include "host_profiler.h"
#include "profiler_driver.h"
#endif

#define CYCLES 12
#define COMMS  3

static int failures;

static void expect(int ok, const char *what, int cycle) {
  if (ok) return;
  fprintf(stderr, "host_reload: cycle %d: %s\n", cycle, what);
  failures++;
}

static void tuner_cycles(const char *so, const char *dir) {
  char rules[512], profile[512];
  snprintf(rules, sizeof rules, "%s/rules.conf", dir);
  snprintf(profile, sizeof profile, "%s/fitted.prof", dir);
  FILE *f = fopen(rules, "w");
  if (!f) exit(2);
  /* Entries the table below allows (LL128 only): a rule on an ignored entry is warned about. */
  fputs("allreduce,0,65536,ring,ll128,2,-1,-1\nallgather,0,-1,ring,ll128,-1,-1,-1\n", f);
  fclose(f);
  FILE *in = fopen(TOPO_TEST_FITTED_PROFILE, "r");
  f = fopen(profile, "w");
  if (!in || !f) exit(2);
  char line[4096];
  while (fgets(line, sizeof line, in))
    fputs(strncmp(line, "section ", 8) ? line : "section gpu=H200\n", f);
  fclose(in);
  fclose(f);
  setenv("TOPO_TUNER_PROFILE", profile, 1);
  setenv("TOPO_TUNER_RULES", rules, 1);
  setenv("TOPO_TUNER_GPU", "H200", 1);

  static const int versions[] = {TOPO_NCCL_2_28, TOPO_NCCL_2_21, TOPO_NCCL_2_30, TOPO_NCCL_2_24,
                                 TOPO_NCCL_2_32};
  enum { NV = sizeof versions / sizeof versions[0] };
  for (int cycle = 0; cycle < CYCLES; cycle++) {
    topo_host_tuner t[COMMS];
    int version = versions[cycle % NV];
    for (int c = 0; c < COMMS; c++) {
      if (topo_host_tuner_load(&t[c], so, version) != TOPO_OK) {
        expect(0, "load failed", cycle);
        return;
      }
      ncclTunerConstants_v5_t k;
      topo_host_default_constants(&k);
      expect(topo_host_tuner_init(&t[c], 100 + (uint64_t)c, 2u << c, c ? 2 : 1, topo_host_log, NULL,
                                  t[c].lib.version >= 5 ? &k : NULL) == ncclSuccess,
             "init did not answer success", cycle);
      expect(t[c].ctx != NULL, "no context", cycle);
    }
    for (int c = 0; c < COMMS; c++) {
      for (int q = 0; q < 200; q++) {
        float table[21];
        for (int i = 0; i < 21; i++) table[i] = (i % 3 == 1) ? 10.0f + (float)i : -1.0f;
        int nch = 0;
        expect(topo_host_tuner_get(&t[c], q % 5, (size_t)8 << (q % 30), 1, table, q & 1, &nch) ==
                   ncclSuccess,
               "getCollInfo did not answer success", cycle);
      }
    }
    for (int c = COMMS - 1; c >= 0; c--) {
      expect(topo_host_tuner_finalize(&t[c]) == ncclSuccess, "finalize failed", cycle);
      topo_host_tuner_unload(&t[c]);
    }
  }
  expect(topo_host_log_count(NCCL_LOG_WARN) == 0, "warnings were logged", CYCLES);
  unlink(rules);
  unlink(profile);
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
}

#ifdef TOPO_TEST_PROFILER_SO
/* The profiler: each cycle starts its writer thread and pools afresh and must tear them down
 * completely at the last finalize, before dlclose. */
static void profiler_cycles(const char *so, const char *base) {
  char dir[600];
  snprintf(dir, sizeof dir, "%s/traces", base);
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "2", 1);
  setenv("TOPO_PROFILER_EVENTS", "coll,p2p,kernel,channel,proxy,phase", 1);
  static const int versions[] = {TOPO_NCCL_2_28, TOPO_NCCL_2_23, TOPO_NCCL_2_30, TOPO_NCCL_2_27,
                                 TOPO_NCCL_2_31};
  enum { NV = sizeof versions / sizeof versions[0] };
  for (int cycle = 0; cycle < CYCLES; cycle++) {
    topo_host_profiler p[COMMS];
    for (int c = 0; c < COMMS; c++) {
      if (topo_host_profiler_load(&p[c], so, versions[cycle % NV]) != TOPO_OK) {
        expect(0, "profiler load failed", cycle);
        return;
      }
      expect(topo_host_profiler_init(&p[c], 0x7e1000 + (uint64_t)(cycle * COMMS + c), "reload", 1,
                                     COMMS, c, topo_host_log) == ncclSuccess,
             "profiler init did not answer success", cycle);
      expect(p[c].ctx != NULL, "no profiler context", cycle);
    }
    for (int i = 0; i < 100; i++)
      for (int c = 0; c < COMMS; c++) {
        drv_op op;
        memset(&op, 0, sizeof op);
        op.p2p = i % 5 == 4;
        op.func = op.p2p ? "Send" : "AllReduce";
        op.dtype = "ncclFloat32";
        op.algo = "RING";
        op.proto = "LL";
        op.seq = (uint64_t)i;
        op.count = 1024;
        op.nch = 2;
        op.peer = op.p2p ? (c + 1) % COMMS : -1;
        op.rank = c;
        op.sym = !op.p2p && i % 3 == 0; /* NCCL 2.31+: symmetric kernels, phases, tags */
        op.variant = "AGxLL_R";
        op.user_tag = (uint64_t)(i % 4);
        drv_set_gpu(&op, 1000 + (uint64_t)i * 100, 5, 50);
        drv_run(&p[c], &op);
      }
    for (int c = COMMS - 1; c >= 0; c--) {
      expect(topo_host_profiler_finalize(&p[c]) == ncclSuccess, "profiler finalize failed", cycle);
      topo_host_profiler_unload(&p[c]);
    }
  }
  int files = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
    files++;
  }
  if (d) closedir(d);
  rmdir(dir);
  expect(files == CYCLES * COMMS, "not one trace per communicator and cycle", CYCLES);
  expect(topo_host_log_count(NCCL_LOG_WARN) == 0, "profiler warnings were logged", CYCLES);
}
#endif

int main(void) {
  char dir[] = "/tmp/topo-reload-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  topo_host_log_echo(getenv("TOPOTEST_HOST_ECHO") != NULL);
  tuner_cycles(TOPO_TEST_TUNER_SO, dir);
#ifdef TOPO_TEST_PROFILER_SO
  profiler_cycles(TOPO_TEST_PROFILER_SO, dir);
#endif
  rmdir(dir);
  printf(
      "host_reload: %d load/init/finalize/dlclose cycles x %d communicators per plugin, "
      "%d failures\n",
      CYCLES, COMMS, failures);
  return failures ? 1 : 0;
}
