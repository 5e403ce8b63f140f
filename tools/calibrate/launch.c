/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Several processes on one host without MPI: `--nodes N` (or --procs) forks one worker per GPU
 * before anything touches CUDA. Worker r drives GPU r as rank r, with NCCL_HOSTID set to its
 * "node" (ranks split into N contiguous blocks), so NCCL sees N hosts and talks between them
 * through its network transport (sockets here): the multi-node code paths, at socket speed, and
 * labelled as such. Only the first NCCL unique id travels out of band, through pipes from worker
 * 0; everything else goes over NCCL itself (gpu_comms.c). The parent only waits: when a worker fails
 * its peers would wait forever inside a collective, so the parent stops them (SIGTERM, then
 * SIGKILL) and returns the worst exit code.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "calibrate.h"

typedef struct fork_share {
  int proc, nprocs;
  int *fds; /* [2*nprocs]: pipe r = fds[2r] (read), fds[2r+1] (write); r >= 1 */
} fork_share;

static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w, len -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *buf, size_t len) {
  char *p = buf;
  while (len) {
    ssize_t r = read(fd, p, len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r, len -= (size_t)r;
  }
  return 0;
}

static int share_id(void *ctx, void *id, size_t len) {
  fork_share *s = ctx;
  if (s->proc == 0) {
    for (int r = 1; r < s->nprocs; r++)
      if (write_all(s->fds[2 * r + 1], id, len)) return -1;
    return 0;
  }
  return read_all(s->fds[2 * s->proc], id, len);
}

/* The parent forwards SIGTERM/SIGINT to its workers (they stop after their current point, in
 * step, and write what they measured) and keeps waiting for them. */
static pid_t *signal_pids;
static int signal_npids;

static void forward_signal(int sig) {
  for (int i = 0; i < signal_npids; i++)
    if (signal_pids[i] > 0) kill(signal_pids[i], sig);
}

/* Workers: every SIGTERM/SIGINT only asks for a stop (the signal may come twice: from a process
 * group kill and from the parent's forward). */
static void worker_signal(int sig) {
  (void)sig;
  topo_cal_request_stop();
}

static void stop_all(pid_t *pids, int n) {
  for (int i = 0; i < n; i++)
    if (pids[i] > 0) kill(pids[i], SIGTERM);
  struct timespec ts = {0, 100 * 1000 * 1000};
  for (int tries = 0; tries < 50; tries++) {
    int alive = 0;
    for (int i = 0; i < n; i++) {
      if (pids[i] <= 0) continue;
      if (waitpid(pids[i], NULL, WNOHANG) == pids[i]) pids[i] = 0;
      else alive = 1;
    }
    if (!alive) return;
    nanosleep(&ts, NULL);
  }
  for (int i = 0; i < n; i++)
    if (pids[i] > 0) {
      kill(pids[i], SIGKILL);
      waitpid(pids[i], NULL, 0);
      pids[i] = 0;
    }
}

/* SIGTERM and SIGINT go to `handler`, restarting interrupted calls. */
static void handle_stop_signals(void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
}

/* Worker r of n in the forked child: rank r on GPU r, NCCL_HOSTID of its "node", the first
 * unique id over fds from worker 0. Never returns. */
__attribute__((noreturn)) static void run_worker(const topo_cal_options *o, int r, int n, int nodes,
                                                 int *fds) {
  /* Keep the write ends (worker 0) or its own read end. */
  for (int q = 1; q < n; q++) {
    if (r == 0) close(fds[2 * q]);
    else {
      close(fds[2 * q + 1]);
      if (q != r) close(fds[2 * q]);
    }
  }
  handle_stop_signals(worker_signal);
  char host[64];
  int node = (int)((long)r * nodes / n);
  if (nodes > 1) {
    snprintf(host, sizeof host, "topo-calibrate-node%d", node);
    setenv("NCCL_HOSTID", host, 1);
  }
  fork_share share = {r, n, fds};
  topo_cal_proc proc = {.nprocs = n,
                        .proc = r,
                        .nodes = nodes,
                        .local_first = r,
                        .nlocal = 1,
                        .nranks = n,
                        .device_base = r,
                        .share_id = share_id,
                        .share_ctx = &share};
  topo_cal_log_setup(NULL, o->verbose, r != 0);
  topo_cal_results res;
  topo_cal_results_init(&res);
  int rc = topo_cal_run(o, &proc, &res);
  topo_cal_results_free(&res);
  fflush(stdout);
  fflush(stderr);
  _exit(rc);
}

/* Wait for the n workers; the first that fails stops the others. Returns the worst exit code. */
static int wait_workers(pid_t *pids, int n) {
  int worst = 0, left = n;
  while (left > 0) {
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int idx = -1;
    for (int i = 0; i < n; i++)
      if (pids[i] == pid) idx = i;
    if (idx < 0) continue;
    pids[idx] = 0;
    left--;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (!WIFEXITED(status))
      fprintf(stderr, "topo-calibrate: error: rank %d died (signal %d)\n", idx,
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (rc > worst) worst = rc;
    if (rc != 0 && left > 0) {
      fprintf(stderr, "topo-calibrate: error: rank %d failed (exit %d); stopping the other ranks\n",
              idx, rc);
      stop_all(pids, n);
      left = 0;
    }
  }
  return worst;
}

int topo_cal_launch_fork(const topo_cal_options *o, int ngpus) {
  int n = ngpus, nodes = o->nodes > 0 ? o->nodes : 1;
  if (nodes > n) {
    fprintf(stderr, "topo-calibrate: error: --nodes %d needs at least %d GPUs, %d visible\n", nodes,
            nodes, n);
    return 1;
  }
  int *fds = topo_calloc((size_t)2 * n, sizeof(int));
  pid_t *pids = topo_calloc((size_t)n, sizeof(pid_t));
  int rc = fds && pids ? 0 : 1;
  for (int r = 1; r < n && !rc; r++)
    if (pipe(&fds[2 * r])) {
      fprintf(stderr, "topo-calibrate: error: pipe: %s\n", strerror(errno));
      rc = 1;
    }
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n && !rc; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "topo-calibrate: error: fork: %s\n", strerror(errno));
      stop_all(pids, r);
      rc = 1;
    } else if (pid == 0) {
      run_worker(o, r, n, nodes, fds);
    } else {
      pids[r] = pid;
    }
  }
  if (!rc) {
    for (int q = 1; q < n; q++) {
      close(fds[2 * q]);
      close(fds[2 * q + 1]);
    }
    signal_pids = pids;
    signal_npids = n;
    handle_stop_signals(forward_signal);
    rc = wait_workers(pids, n);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal_npids = 0;
  }
  topo_free(fds);
  topo_free(pids);
  return rc;
}
