/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's run, before the first NCCL call and around it: the user's NCCL settings that
 * would distort a calibration, NCCL's INFO log (NCCL_DEBUG_FILE, read back to verify what ran),
 * the libtopo-tuner.so that forces each setting, and which NCCL library answered. Called by
 * topo_cal_run (runner.c), the communicators (gpu_comms.c, NCCL's log) and the sweep
 * (gpu_sweep.c, the tuner); the run's state is run_state.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "calibrate.h"
#include "gpu_setup.h"
#include "run_state.h"

static int file_exists(const char *p) {
  struct stat st;
  return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The installed libdir relative to the installed bindir (tools/calibrate/CMakeLists.txt). */
#ifndef TOPO_CALIBRATE_LIBDIR_REL
#define TOPO_CALIBRATE_LIBDIR_REL "../lib"
#endif

/* libtopo-tuner.so: --tuner, else the installed one beside this binary, else the build tree's. */
void topo_cal_find_tuner(run_ctx *c) {
  c->tuner_path[0] = '\0';
  if (c->o->tuner) {
    if (file_exists(c->o->tuner) && !realpath(c->o->tuner, c->tuner_path))
      snprintf(c->tuner_path, sizeof c->tuner_path, "%s", c->o->tuner);
    return;
  }
  char exe[768];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const char *cand[4];
  int nc = 0;
  char a[1024], b[1024], d[1024];
  if (n > 0) { /* an installed topo-calibrate takes the installed tuner before the build tree's */
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    const char *rel = TOPO_CALIBRATE_LIBDIR_REL;
    if (rel[0] == '/') snprintf(b, sizeof b, "%s/libtopo-tuner.so", rel);
    else snprintf(b, sizeof b, "%s/%s/libtopo-tuner.so", exe, rel);
    cand[nc++] = b;
  }
#ifdef TOPO_CALIBRATE_TUNER_PATH
  cand[nc++] = TOPO_CALIBRATE_TUNER_PATH;
#endif
  if (n > 0) {
    snprintf(a, sizeof a, "%s/../../tuner-plugin/libtopo-tuner.so", exe);
    snprintf(d, sizeof d, "%s/libtopo-tuner.so", exe);
    cand[nc++] = a;
    cand[nc++] = d;
  }
  for (int i = 0; i < nc; i++)
    if (file_exists(cand[i])) {
      if (!realpath(cand[i], c->tuner_path))
        snprintf(c->tuner_path, sizeof c->tuner_path, "%s", cand[i]);
      return;
    }
}

void topo_cal_nccl_identity(run_ctx *c) {
  int v = 0;
  if (ncclGetVersion(&v) == ncclSuccess) c->r->nccl_version = v;
  Dl_info info;
  if (dladdr((void *)ncclGetVersion, &info) && info.dli_fname)
    snprintf(c->r->nccl_path, sizeof c->r->nccl_path, "%s", info.dli_fname);
}

/* The user's NCCL settings that would distort a calibration: NCCL_ALGO / NCCL_PROTO restrict
 * what NCCL allows (unset, with a warning: every forced setting sets its own); channel limits
 * that NCCL reads once per process or that override ncclConfig_t (warned: forced channel counts
 * may not apply - the log verification still marks what ran). */
void topo_cal_check_user_env(run_ctx *c) {
  static const char *const restrict_vars[] = {"NCCL_ALGO", "NCCL_PROTO"};
  for (size_t i = 0; i < sizeof restrict_vars / sizeof restrict_vars[0]; i++) {
    const char *v = getenv(restrict_vars[i]);
    if (v) {
      if (c->leader)
        topo_cal_warn(
            "%s=%s in the environment: unset for the calibration (each setting forces its own)",
            restrict_vars[i], v);
      unsetenv(restrict_vars[i]);
    }
  }
  static const char *const channel_vars[] = {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
                                             "NCCL_MIN_NRINGS",    "NCCL_MAX_NRINGS",
                                             "NCCL_MIN_CTAS",      "NCCL_MAX_CTAS"};
  for (size_t i = 0; i < sizeof channel_vars / sizeof channel_vars[0]; i++) {
    const char *v = getenv(channel_vars[i]);
    if (v && c->leader)
      topo_cal_warn(
          "%s=%s is set: NCCL applies it to every communicator, so forced channel counts may not "
          "hold",
          channel_vars[i], v);
  }
}

void topo_cal_setup_log(run_ctx *c) {
  const char *dir = c->o->workdir ? c->o->workdir : getenv("TMPDIR");
  if (dir && strlen(dir) > TOPO_CAL_WORKDIR_MAX) { /* --workdir is checked; TMPDIR here */
    topo_cal_warn("TMPDIR is longer than %d bytes: /tmp instead", TOPO_CAL_WORKDIR_MAX);
    dir = NULL;
  }
  if (!dir || !*dir) dir = "/tmp";
  snprintf(c->workdir, sizeof c->workdir, "%s", dir);
  c->log_on = 0;
  topo_cal_nccl_log_init(&c->log);
  if (!c->o->verify || c->pp->proc != 0) return;
  if (getenv("NCCL_DEBUG_FILE")) {
    topo_cal_warn(
        "NCCL_DEBUG_FILE is set: not reading NCCL's log, so what NCCL ran is not verified");
    return;
  }
  snprintf(c->log_path, sizeof c->log_path, "%s/topo-calibrate-nccl.%d.log", c->workdir,
           (int)getpid());
  setenv("NCCL_DEBUG_FILE", c->log_path, 1);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,TUNING,ENV", 1);
  c->log_on = 1;
}

int topo_cal_open_log(run_ctx *c) {
  if (!c->log_on || c->log.f) return 0;
  if (topo_cal_nccl_log_open(&c->log, c->log_path)) {
    topo_cal_warn("cannot read NCCL's log %s: what NCCL ran is not verified", c->log_path);
    c->log_on = 0;
  }
  return 0;
}
