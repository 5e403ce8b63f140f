// SPDX-License-Identifier: Apache-2.0
// Soak: the profiler under everything a host can do to it at once, for a fixed time (60 s, 30 s
// under a sanitizer; the first argument sets it in seconds, 0 = one episode). Each
// episode is a process with 2-4 threads that create communicators, profile a random number of
// collectives and p2p operations, and finalize them - or leave them open to be written at exit -
// with random pool, ring, flush and event settings (small ones force drops); halfway a thread
// forks a child that exits, finalizes an inherited communicator or tries to profile; the
// episode ends normally, by exit() while threads are still inside callbacks, or by SIGKILL at a
// random moment. Afterwards: no crash, no hang, nothing written outside the trace directory
// (the episode's working directory stays empty, every file in the trace directory is a trace of
// one of the episode's own communicators under its own pid), every trace opens with the
// project's reader without a bad block (a killed process may end inside its last block), each
// collective is written at most once and none of the fork child's, a
// process that was not killed has every footer, a communicator whose finalize returned accounts
// for every operation (records + counted drops), and topo-report reads each directory.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "host_profiler.h"
#include "profiler_driver.h"
#include "rel_child.h"
#include "trace_reader.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DEFAULT_SECONDS 30
#else
#define DEFAULT_SECONDS 60
#endif

#define MAX_THREADS 4
#define MAX_COMMS   4096
#define OPS_MAX     300

enum end_kind { END_NORMAL, END_EXIT_IN_FLIGHT, END_KILL, END_KINDS };
enum fork_kind { FORK_NONE, FORK_EXITS, FORK_FINALIZES, FORK_PROFILES, FORK_KINDS };
enum comm_state { COMM_NONE, COMM_OPEN, COMM_FINALIZED };

/* What an episode did, in memory shared with the test (it survives a SIGKILL). */
typedef struct shared {
  atomic_int ncomms;
  atomic_int grandchild; /* pid of the forked child, 0 = none */
  struct {
    uint64_t hash;
    atomic_int state;
    atomic_ullong started; /* operations whose first callback was made */
    atomic_ullong issued;  /* operations whose every callback returned */
    int trace;             /* test side: 1 its trace was found, 2 with a footer */
  } comm[MAX_COMMS];
} shared;

typedef struct episode {
  unsigned seed;
  int threads, active_ms, end, fork, fork_at_ms;
  char dir[256], cwd[256];
  char events[32];
  int pool, ring, flush_ms, sample_every;
} episode;

static shared *sh;
static const episode *ep;
static atomic_int stop_threads;
static topo_host_profiler forkable; /* a communicator of the main thread the fork child sees */

static unsigned next_rand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xffffff;
}

static void one_op(topo_host_profiler *p, int rank, uint64_t seq, unsigned *rnd) {
  drv_op op;
  memset(&op, 0, sizeof op);
  op.p2p = next_rand(rnd) % 8 == 0;
  op.func = op.p2p ? (next_rand(rnd) & 1 ? "Send" : "Recv") : "AllReduce";
  op.dtype = "ncclBfloat16";
  op.algo = "RING";
  op.proto = next_rand(rnd) & 1 ? "LL" : "Simple";
  op.seq = seq;
  op.count = (size_t)1 << (next_rand(rnd) % 24);
  op.nch = 1 + (int)(next_rand(rnd) % 8);
  op.peer = op.p2p ? (rank + 1) % 64 : -1;
  op.rank = rank;
  op.stream = (void *)(uintptr_t)(0x7f0000000000ull + (next_rand(rnd) % 4) * 0x1000);
  drv_set_gpu(&op, 1000000 + seq * 10000, 20, 5000);
  drv_run(p, &op);
}

static void *thread_main(void *arg) {
  unsigned rnd = ep->seed * 7919u + (unsigned)(intptr_t)arg;
  int64_t until = rel_now_ms() + ep->active_ms;
  while (!atomic_load(&stop_threads) && rel_now_ms() < until) {
    int i = atomic_fetch_add(&sh->ncomms, 1);
    if (i >= MAX_COMMS) break;
    topo_host_profiler p;
    REL_CHECK(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
    sh->comm[i].hash = 0x50a4000000000000ull | (uint64_t)i;
    REL_CHECK(topo_host_profiler_init(&p, sh->comm[i].hash, "soak", 1, 64, i % 64, NULL) ==
              ncclSuccess);
    if (p.ctx) atomic_store(&sh->comm[i].state, COMM_OPEN);
    int ops = (int)(next_rand(&rnd) % OPS_MAX);
    for (int k = 0; k < ops && !atomic_load(&stop_threads); k++) {
      atomic_fetch_add(&sh->comm[i].started, 1);
      one_op(&p, i % 64, (uint64_t)k, &rnd);
      atomic_fetch_add(&sh->comm[i].issued, 1);
    }
    if (next_rand(&rnd) % 5) { /* most are finalized; the rest stay open until exit */
      REL_CHECK(topo_host_profiler_finalize(&p) == ncclSuccess);
      if (p.ctx) atomic_store(&sh->comm[i].state, COMM_FINALIZED);
    }
    topo_host_profiler_unload(&p);
  }
  return NULL;
}

/* The child forked halfway: whatever it does returns at once and writes nothing. */
static void fork_child(void) {
  int64_t forked = topo_clock_monotonic_ns();
  pid_t pid = fork();
  REL_CHECK(pid >= 0);
  if (pid == 0) {
    rel_forked_child();
    if (ep->fork == FORK_FINALIZES)
      REL_CHECK(topo_host_profiler_finalize(&forkable) == ncclSuccess);
    if (ep->fork == FORK_PROFILES) {
      topo_host_profiler q = forkable; /* the loaded library (no dlopen after a threaded fork) */
      REL_CHECK(topo_host_profiler_init(&q, 0x50a5, "soak-child", 1, 1, 0, NULL) == ncclSuccess);
      REL_CHECK(q.ctx == NULL);
      unsigned rnd = 1;
      for (int k = 0; k < 20; k++) one_op(&forkable, 0, 1000000u + (uint64_t)k, &rnd);
    }
#ifdef __SANITIZE_THREAD__
    _exit(0); /* TSan's own exit work can deadlock in the child of a threaded fork */
#else
    exit(0);
#endif
  }
  atomic_store(&sh->grandchild, pid);
  rel_result r = rel_wait(pid, forked, 10000);
  REL_CHECK(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
}

static void episode_main(void *arg) {
  (void)arg;
  REL_CHECK(chdir(ep->cwd) == 0); /* must stay empty: nothing is written outside the trace dir */
  REL_CHECK(topo_host_profiler_load(&forkable, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  int i = atomic_fetch_add(&sh->ncomms, 1);
  sh->comm[i].hash = 0x50a4000000000000ull | (uint64_t)i;
  REL_CHECK(topo_host_profiler_init(&forkable, sh->comm[i].hash, "soak-main", 1, 64, 63, NULL) ==
            ncclSuccess);
  if (forkable.ctx) atomic_store(&sh->comm[i].state, COMM_OPEN);
  unsigned rnd = ep->seed;
  for (int k = 0; k < 50; k++) {
    atomic_fetch_add(&sh->comm[i].started, 1);
    one_op(&forkable, 63, (uint64_t)k, &rnd);
    atomic_fetch_add(&sh->comm[i].issued, 1);
  }
  pthread_t t[MAX_THREADS];
  for (int k = 0; k < ep->threads; k++)
    REL_CHECK(pthread_create(&t[k], NULL, thread_main, (void *)(intptr_t)k) == 0);
  if (ep->fork != FORK_NONE) {
    rel_sleep_ms(ep->fork_at_ms);
    fork_child();
  }
  if (ep->end == END_EXIT_IN_FLIGHT) {
    for (int k = 0; k < ep->threads; k++) pthread_detach(t[k]); /* never joined */
    rel_sleep_ms(ep->active_ms / 2);
    exit(0);
  }
  for (int k = 0; k < ep->threads; k++) pthread_join(t[k], NULL);
  if (forkable.ctx && ep->fork != FORK_FINALIZES) {
    REL_CHECK(topo_host_profiler_finalize(&forkable) == ncclSuccess);
    atomic_store(&sh->comm[i].state, COMM_FINALIZED);
  }
  if (ep->end == END_KILL) pause(); /* the test kills it */
  exit(0);
}

/* ---- the checks, in the test process ---- */
static int comm_of(uint64_t hash) {
  int n = atomic_load(&sh->ncomms);
  for (int i = 0; i < n && i < MAX_COMMS; i++)
    if (sh->comm[i].hash == hash) return i;
  return -1;
}

typedef struct totals {
  int episodes[END_KINDS], forks, comms, traces;
  uint64_t ops, records, drops;
} totals;

/* `quiet_exit`: the process exited with no callback in flight, so even the communicators it
 * left open account for every operation. */
static void check_trace(const char *path, pid_t pid, int killed, int quiet_exit, totals *tot) {
  const char *base = strrchr(path, '/') + 1;
  char want[64];
  snprintf(want, sizeof want, "-%d-", (int)pid);
  if (strncmp(base, "topo-", 5) || !strstr(base, want))
    fail_msg("%s: not a trace of the episode's own process (pid %d)", path, (int)pid);
  topo_trace_reader *r = NULL;
  assert_int_equal(topo_trace_reader_open(path, 1, &r), TOPO_OK);
  const topo_trace_header *h = topo_trace_reader_header(r);
  if (!h) fail_msg("%s: no usable header", path);
  assert_int_equal(h->pid, (uint32_t)pid);
  int c = comm_of(h->comm_hash);
  if (c < 0)
    fail_msg("%s: communicator %llx was never created", path, (unsigned long long)h->comm_hash);
  /* Each collective at most once, and only those the episode's own process issued (the fork
   * child's carry seq >= OPS_MAX). Completion order, not issue order: a collective whose kernel
   * channels never come (a dropped channel event) is written when the reaper or finalize
   * completes it. */
  uint64_t ops = 0;
  unsigned char seen[OPS_MAX];
  memset(seen, 0, sizeof seen);
  const topo_trace_record *rec;
  while ((rec = topo_trace_reader_next(r))) {
    if (rec->type != TOPO_REC_COLL && rec->type != TOPO_REC_P2P) continue;
    ops++;
    if (rec->type != TOPO_REC_COLL) continue;
    if (rec->coll.seq >= OPS_MAX || seen[rec->coll.seq]++)
      fail_msg("%s: collective seq %llu unexpected or written twice", path,
               (unsigned long long)rec->coll.seq);
  }
  const topo_trace_reader_info *in = topo_trace_reader_info_get(r);
  /* killed: the file may end inside its last block and has no footer; nothing else */
  if (in->bad_blocks || in->problems > (killed ? 2u : 0u))
    fail_msg("%s: %u problems (%s), %llu bad blocks%s", path, in->problems, in->first_message,
             (unsigned long long)in->bad_blocks, killed ? " (killed)" : "");
  if (!killed && !in->footer) fail_msg("%s: no footer, the process exited", path);
  uint64_t issued = atomic_load(&sh->comm[c].issued);
  uint64_t started = atomic_load(&sh->comm[c].started);
  uint64_t drops =
      in->dropped[TOPO_DROP_COLL] + in->dropped[TOPO_DROP_RECORD] + in->dropped[TOPO_DROP_OTHER];
  if (ops > started)
    fail_msg("%s: %llu operations recorded, %llu started", path, (unsigned long long)ops,
             (unsigned long long)started);
  int st = atomic_load(&sh->comm[c].state);
  /* Nothing lost: every issued operation is recorded or counted as dropped. An operation that a
   * callback still holds when finalize counts what NCCL never stopped can be counted as dropped
   * and then recorded by that callback: the count may exceed, never fall short of, what was
   * issued (one seed in a fresh CI run: 65 recorded + 1 drop of 65). */
  if ((st == COMM_FINALIZED || quiet_exit) && in->footer && ops + drops < issued)
    fail_msg(
        "%s: finalized or written at a quiet exit with %llu operations recorded + %llu counted "
        "drops, %llu issued",
        path, (unsigned long long)ops, (unsigned long long)drops, (unsigned long long)issued);
  if (sh->comm[c].trace) fail_msg("%s: a second trace of communicator %d", path, c);
  sh->comm[c].trace = in->footer ? 2 : 1;
  tot->traces++;
  tot->ops += issued;
  tot->records += ops;
  tot->drops += drops;
  topo_trace_reader_close(r);
}

static void check_episode(const episode *e, pid_t pid, int killed, totals *tot) {
  DIR *d = opendir(e->cwd);
  assert_non_null(d);
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.')
      fail_msg("%s/%s written outside the trace directory", e->cwd, de->d_name);
  closedir(d);
  /* No directory: killed before the writer created its first file (checked below). */
  d = opendir(e->dir);
  if (!d && !(killed && errno == ENOENT)) fail_msg("%s: %s", e->dir, strerror(errno));
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", e->dir, de->d_name);
    check_trace(path, pid, killed, !killed && e->end == END_NORMAL, tot);
  }
  if (d) closedir(d);
  /* A finalize that returned wrote the footer; an exit wrote every footer. */
  for (int c = 0; c < atomic_load(&sh->ncomms) && c < MAX_COMMS; c++) {
    int st = atomic_load(&sh->comm[c].state);
    if ((st == COMM_FINALIZED || (st == COMM_OPEN && !killed)) && sh->comm[c].trace != 2)
      fail_msg("%s: communicator %d (%s) has %s", e->dir, c,
               st == COMM_FINALIZED ? "finalized" : "open at exit",
               sh->comm[c].trace ? "a trace without footer" : "no trace");
  }
  /* the project's report reads what is there (1: nothing usable, e.g. killed before any block) */
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' --json -q -o /dev/null '%s' 2>/dev/null", TOPO_TEST_REPORT,
           e->dir);
  int rc = system(cmd);
  if (!WIFEXITED(rc) || WEXITSTATUS(rc) > 1)
    fail_msg("topo-report on %s ended with status %d", e->dir, rc);
  tot->comms += atomic_load(&sh->ncomms);
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)))
      if (de->d_name[0] != '.') {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
      }
    closedir(d);
  }
  rmdir(dir);
}

static int soak_seconds = DEFAULT_SECONDS;

static void test_soak_create_destroy_fork_exit_kill(void **state) {
  (void)state;
  char root[] = "/tmp/topo-soak-XXXXXX";
  assert_non_null(mkdtemp(root));
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(sh != MAP_FAILED);
  totals tot;
  memset(&tot, 0, sizeof tot);
  unsigned rnd = (unsigned)topo_clock_monotonic_ns();
  print_message("soak: %d s, seed %u\n", soak_seconds, rnd);
  int64_t until = rel_now_ms() + (int64_t)soak_seconds * 1000;
  for (int n = 0; n == 0 || rel_now_ms() < until; n++) {
    static const char *const events[] = {"coll,kernel", "coll,channel", "coll,kernel,proxy",
                                         "coll"};
    episode e;
    memset(&e, 0, sizeof e);
    e.seed = next_rand(&rnd);
    e.threads = 2 + (int)(next_rand(&rnd) % (MAX_THREADS - 1));
    e.active_ms = 100 + (int)(next_rand(&rnd) % 400);
    e.end = (int)(next_rand(&rnd) % END_KINDS);
    e.fork = (int)(next_rand(&rnd) % FORK_KINDS);
    e.fork_at_ms = (int)(next_rand(&rnd) % (unsigned)(e.active_ms / 2 + 1));
    snprintf(e.events, sizeof e.events, "%s", events[next_rand(&rnd) % 4]);
    e.pool = 16 << (next_rand(&rnd) % 10);
    e.ring = 64 << (next_rand(&rnd) % 11);
    e.flush_ms = 1 + (int)(next_rand(&rnd) % 100);
    e.sample_every = next_rand(&rnd) % 2 ? 1 : 32;
    snprintf(e.dir, sizeof e.dir, "%s/traces-%d", root, n);
    snprintf(e.cwd, sizeof e.cwd, "%s/cwd-%d", root, n);
    assert_int_equal(mkdir(e.cwd, 0700), 0);
    char v[32];
    setenv("TOPO_PROFILER_DIR", e.dir, 1);
    setenv("TOPO_PROFILER_EVENTS", e.events, 1);
    snprintf(v, sizeof v, "%d", e.pool);
    setenv("TOPO_PROFILER_POOL", v, 1);
    snprintf(v, sizeof v, "%d", e.ring);
    setenv("TOPO_PROFILER_RING", v, 1);
    snprintf(v, sizeof v, "%d", e.flush_ms);
    setenv("TOPO_PROFILER_FLUSH_MS", v, 1);
    snprintf(v, sizeof v, "%d", e.sample_every);
    setenv("TOPO_PROFILER_SAMPLE", v, 1);
    memset(sh, 0, sizeof *sh);
    atomic_store(&stop_threads, 0);
    ep = &e;

    fflush(NULL);
    int64_t started = topo_clock_monotonic_ns();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      episode_main(NULL);
      _exit(0);
    }
    rel_result r;
    if (e.end == END_KILL) {
      rel_sleep_ms((int)(next_rand(&rnd) % (unsigned)(e.active_ms + 100)));
      kill(pid, SIGKILL);
    }
    r = rel_wait(pid, started, 60000);
    char how[64];
    int killed = e.end == END_KILL && WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL;
    if (r.timed_out || (!killed && (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)))
      fail_msg("episode %d (seed %u, end %d, fork %d, events %s, pool %d, ring %d) ended with %s",
               n, e.seed, e.end, e.fork, e.events, e.pool, e.ring,
               rel_describe(&r, how, sizeof how));
    int grandchild = atomic_load(&sh->grandchild);
    if (grandchild) tot.forks++;
    check_episode(&e, pid, killed, &tot);
    tot.episodes[e.end]++;
    remove_tree(e.dir);
    rmdir(e.cwd);
    if (soak_seconds == 0) break;
  }
  munmap(sh, sizeof *sh);
  rmdir(root);
  print_message(
      "soak: %d episodes (%d ended normally, %d by exit with callbacks in flight, %d "
      "killed), %d forks, %d communicators, %d traces, %llu operations: %llu recorded, "
      "%llu counted as dropped\n",
      tot.episodes[0] + tot.episodes[1] + tot.episodes[2], tot.episodes[END_NORMAL],
      tot.episodes[END_EXIT_IN_FLIGHT], tot.episodes[END_KILL], tot.forks, tot.comms, tot.traces,
      (unsigned long long)tot.ops, (unsigned long long)tot.records, (unsigned long long)tot.drops);
}

int main(int argc, char **argv) {
  if (argc > 1) soak_seconds = atoi(argv[1]);
  if (soak_seconds < 0) soak_seconds = 0;
  setenv("TOPO_PROFILER_CUPTI", "off", 1);
  setenv("TOPO_PROFILER_WAIT_MS", "20000", 1); /* on a loaded machine, still no finalize gives up */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_soak_create_destroy_fork_exit_kill),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
