// SPDX-License-Identifier: Apache-2.0
// A plugin-host program for memcheck: loads each built plugin the way NCCL does, several
// communicators per load (init -> calls -> finalize), then dlclose, and again, CYCLES times, with a
// profile and a rule file in use so that every loader runs. CTest runs it under
// `valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite` (label
// valgrind): any invalid access or definite leak across reloads fails it. Exits non-zero itself
// when a call does not answer success or the plugin stops tuning.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_tuner.h"

#define CYCLES 12
#define COMMS 3

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
  fputs("allreduce,0,65536,ring,ll,2,-1,-1\nallgather,0,-1,ring,simple,-1,-1,-1\n", f);
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

  static const int versions[] = {TOPO_NCCL_2_28, TOPO_NCCL_2_21, TOPO_NCCL_2_30, TOPO_NCCL_2_24};
  for (int cycle = 0; cycle < CYCLES; cycle++) {
    topo_host_tuner t[COMMS];
    int version = versions[cycle % 4];
    for (int c = 0; c < COMMS; c++) {
      if (topo_host_tuner_load(&t[c], so, version) != TOPO_OK) {
        expect(0, "load failed", cycle);
        return;
      }
      ncclTunerConstants_v5_t k;
      topo_host_default_constants(&k);
      expect(topo_host_tuner_init(&t[c], 100 + (uint64_t)c, 2u << c, c ? 2 : 1, topo_host_log,
                                  NULL, t[c].lib.version >= 5 ? &k : NULL) == ncclSuccess,
             "init did not answer success", cycle);
      expect(t[c].ctx != NULL, "no context", cycle);
    }
    for (int c = 0; c < COMMS; c++) {
      for (int q = 0; q < 200; q++) {
        float table[21];
        for (int i = 0; i < 21; i++) table[i] = (i % 3 == 1) ? 10.0f + (float)i : -1.0f;
        int nch = 0;
        expect(topo_host_tuner_get(&t[c], q % 5, (size_t)8 << (q % 30), 1, table, q & 1, &nch) ==
                   ncclSuccess, "getCollInfo did not answer success", cycle);
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

int main(void) {
  char dir[] = "/tmp/topo-reload-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  topo_host_log_echo(getenv("TOPO_HOST_ECHO") != NULL);
  tuner_cycles(TOPO_TEST_TUNER_SO, dir);
  rmdir(dir);
  printf("host_reload: %d load/init/finalize/dlclose cycles x %d communicators, %d failures\n",
         CYCLES, COMMS, failures);
  return failures ? 1 : 0;
}
