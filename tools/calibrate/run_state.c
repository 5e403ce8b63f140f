/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU engine's small plumbing (run_state.h): bounded string copy, the monotonic clock, NCCL
 * and CUDA failures as warnings, stream synchronisation, event timing, a median, the environment.
 * Called by every room of the engine (gpu_*.c) and by runner.c.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calibrate.h"
#include "run_state.h"

/* Bounded copy that always terminates (no truncation warnings: truncation is intended). */
void topo_cal_copy_str(char *dst, size_t len, const char *src) {
  size_t n = strnlen(src, len - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

double topo_cal_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int topo_cal_nccl_fail(const char *what, ncclResult_t res) {
  const char *last = ncclGetLastError(NULL);
  topo_cal_warn("%s failed: %s%s%s", what, ncclGetErrorString(res), last && *last ? " - " : "",
                last ? last : "");
  return -1;
}

int topo_cal_sync_all(run_ctx *c) {
  for (int i = 0; i < c->nlocal; i++) {
    CUDA_TRY(cudaSetDevice(c->rk[i].dev));
    CUDA_TRY(cudaStreamSynchronize(c->rk[i].stream));
  }
  return 0;
}

/* Elapsed ms between two recorded events, as us. */
int topo_cal_elapsed_us(cudaEvent_t a, cudaEvent_t b, double *us) {
  float ms = 0;
  CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
  *us = ms * 1e3;
  return 0;
}

double topo_cal_median(double *v, int n) {
  topo_cal_stats s;
  return topo_cal_stats_compute(v, n, &s) == 0 ? s.median : 0;
}

void topo_cal_set_env(const char *name, const char *value) {
  if (value) setenv(name, value, 1);
  else unsetenv(name);
}
