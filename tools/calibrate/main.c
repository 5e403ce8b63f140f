/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate: measures this machine's GPU links and NCCL collectives and writes the tuner
 * profile libtopo-tuner.so reads. Parses the command line (options.c: getopt_long through
 * common/cli), then runs in one process (every local GPU), in one forked process per GPU
 * (--nodes N / --procs), or under MPI (TOPO_CALIBRATE_MPI builds started by mpirun/srun). Exit
 * (common/cli.h): 0 success, 1 a measurement or output failed or no usable GPU, 2 misuse
 * ("topo-calibrate: WHAT (try --help)").
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "calibrate.h"
#include "cli.h"
#include "topo_version.h"

static const char prog[] = "topo-calibrate";

/* First SIGTERM/SIGINT: finish the current point and write what was measured; a second one
 * kills (SA_RESETHAND). */
static void on_signal(int sig) {
  (void)sig;
  topo_cal_request_stop();
}

static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
}

#ifdef TOPO_CALIBRATE_MPI
static int under_mpi(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                     "MV2_COMM_WORLD_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return 1;
  return 0;
}
#endif

int main(int argc, char **argv) {
  topo_cal_options o;
  topo_cal_options_default(&o);
  char err[256];
  topo_cli_init(prog, 0);
  if (topo_cal_options_parse(&o, argc, argv, err, sizeof err)) return topo_cli_usage("%s", err);
  if (o.help) {
    topo_cal_usage(stdout, prog);
    return 0;
  }
  if (o.version) {
    printf("%s %s (built against NCCL %d.%d.%d headers)\n", prog, TOPO_VERSION, NCCL_MAJOR,
           NCCL_MINOR, NCCL_PATCH);
    return 0;
  }
  topo_cal_log_setup(prog, o.verbose, 0);
  install_signals();
#ifdef TOPO_CALIBRATE_MPI
  if (under_mpi()) return topo_cal_launch_mpi(&o, &argc, &argv);
#endif
  if (o.nodes > 1 || o.procs) {
    int n = o.ngpus;
    if (n <= 0) {
      n = topo_cal_probe_devices(err, sizeof err);
      if (n < 0) return topo_cli_error("%s", err);
    }
    if (n < 2) return topo_cli_error("--nodes/--procs need at least 2 GPUs (%d visible)", n);
    return topo_cal_launch_fork(&o, n);
  }
  topo_cal_proc proc = {.nprocs = 1,
                        .proc = 0,
                        .nodes = 1,
                        .local_first = 0,
                        .nlocal = o.ngpus,
                        .nranks = 0,
                        .device_base = 0,
                        .share_id = NULL,
                        .share_ctx = NULL};
  topo_cal_results res;
  topo_cal_results_init(&res);
  int rc = topo_cal_run(&o, &proc, &res);
  topo_cal_results_free(&res);
  return rc;
}
