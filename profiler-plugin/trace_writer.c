// SPDX-License-Identifier: Apache-2.0
// The background trace writer: a bounded lock-free multi-producer ring (Vyukov's sequence-per-
// cell queue) carries finished records from the hot path to one thread per profiler generation,
// which creates the files, packs records into checksummed blocks and writes them, one file per
// communicator and rank. Whole blocks only, so a killed process leaves a file readable up to its
// last block; a partial block is written once its oldest record is TOPO_PROFILER_FLUSH_MS old.
//
// Nothing here makes another thread wait without a limit: init hands a communicator over and
// returns (the file is created on the writer thread), finalize and stop wait at most the time
// they are given and report whether the writer finished, and a writer left behind (a file system
// that stopped answering) finishes the files on its own when it can. The thread sleeps on a
// futex: callbacks wake it only when it sleeps with nothing queued (the first record after a
// quiet spell) or every quarter ring; otherwise it wakes for its own deadlines (partial blocks,
// its tick's: the reaper, the CUPTI schedule) and at least once a second.
//
// The core starts and stops it and hands it communicators; callbacks and the CUPTI timeline push
// records (trace_writer.h). It calls nothing of theirs: a slot's comm, the periodic work and the
// observer of drained records are functions the core passes in topo_writer_config.
#define _GNU_SOURCE 1 /* pthread_setname_np */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "trace_writer.h"

#include "alloc.h"
#include "clock.h"
#include "crc32.h"
#include "log.h"
#include "topo_version.h"

typedef struct cell {
  _Atomic(uint64_t) seq; /* Vyukov's sequence minus the cell's index: zero-filled = empty */
  uint32_t slot, life;   /* the comm's slot and the life the record was made in */
  topo_trace_record rec;
} cell;

/* How a producer treats the writer (w->sleep, a futex word). */
enum { AWAKE = 0, BATCHING = 1, IDLE = 2 };
/* w->fate, a futex word: whoever stops the writer and the writer itself agree on who frees it. */
enum { RUNNING = 0, FINISHED = 1, ABANDONED = 2 };

#define IDLE_MAX_NS  1000000000LL /* the longest sleep: reaper and CUPTI schedule get a look */
#define BATCH_MIN_NS 1000000LL
#define BATCH_MAX_NS 25000000LL

struct topo_writer {
  cell *cells;
  size_t ring_bytes;
  uint64_t mask, wake_every; /* a batching writer is woken every wake_every records */
  _Atomic(uint64_t) enq;
  atomic_int sleep;
  atomic_uint closes; /* bumped (and woken) after each file closed */
  atomic_int fate;
  atomic_int stop;
  atomic_int kicked;             /* topo_writer_wake was called: the next sleep is skipped */
  _Atomic(int64_t) io_since;     /* monotonic start of the write in progress, 0 = none */
  int64_t stop_by;               /* set before stop: records unwritten by then are counted */
  uint64_t stop_at;              /* ring position at the stop: later records are not waited for */
  _Atomic(topo_comm *) arriving; /* initialised comms (->arrive_next) not yet seen */
  _Atomic(topo_comm *) leaving;  /* finalized comms (->leave_next) not yet seen */
  pthread_t thread;
  topo_comm *(*comm_at)(uint32_t slot);
  int64_t (*tick)(topo_writer *w, int64_t now_ns);
  void (*observe)(void *observer, topo_comm *c, uint32_t life, const topo_trace_record *r,
                  int64_t now_ns);
  void *observer;
  int64_t idle_flush_ns, batch_ns;
  char dir[TOPO_WRITER_DIR_MAX + 1];
  /* Writer thread only. */
  uint64_t deq;
  uint64_t resident;  /* cells below this index have their pages faulted in */
  topo_comm *all;     /* every comm adopted and not closed (->writer_next, ->writer_prev) */
  topo_comm *active;  /* comms with a partial block (->active_next) */
  topo_comm *closing; /* finalized, waiting for their records (->leave_next) */
  int dir_made, dir_warned, io_warned_any;
};

/* ---- futex ---- */
static void futex_wait(void *word, int expected, int64_t ns) {
  if (ns <= 0) return;
  struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, ns == INT64_MAX ? NULL : &ts, NULL, 0);
}

static void futex_wake_all(void *word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void wake(topo_writer *w) {
  if (atomic_exchange_explicit(&w->sleep, AWAKE, memory_order_seq_cst) != AWAKE)
    futex_wake_all(&w->sleep);
}

/* The flag, then the sleep word; the writer stores the sleep word, then takes the flag
 * (sleep_until): whichever comes second sees the other, so no wake-up is lost to a writer that
 * was about to sleep. A flag already set is left (the writer has yet to take it): callers that
 * wake often (a pool growing) pay a load, not a store. */
void topo_writer_wake(topo_writer *w) {
  if (!w) return;
  if (!atomic_load_explicit(&w->kicked, memory_order_seq_cst))
    atomic_store_explicit(&w->kicked, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&w->sleep, memory_order_seq_cst) != AWAKE) wake(w);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* 20 us: a producer between claiming a cell and publishing it is given the time to finish. */
static void pause_briefly(void) {
  struct timespec ts = {0, 20000};
  nanosleep(&ts, NULL);
}

/* ---- files ---- */
/* Mark a file-system call in progress (topo_writer_close does not wait on a writer stuck in one
 * longer than its wait); nested marks keep the outermost start. */
static int io_begin(topo_writer *w) {
  if (atomic_load_explicit(&w->io_since, memory_order_relaxed)) return 0;
  atomic_store_explicit(&w->io_since, topo_clock_monotonic_ns(), memory_order_relaxed);
  return 1;
}

static void io_end(topo_writer *w, int began) {
  if (began) atomic_store_explicit(&w->io_since, 0, memory_order_relaxed);
}

static int write_all(topo_writer *w, int fd, const struct iovec *iov, int n) {
  struct iovec v[3];
  memcpy(v, iov, sizeof(*iov) * (size_t)n);
  int i = 0, rc = 0;
  int began = io_begin(w);
  while (i < n) {
    ssize_t k = writev(fd, v + i, n - i);
    if (k < 0) {
      if (errno == EINTR) continue;
      rc = -1;
      break;
    }
    while (i < n && (size_t)k >= v[i].iov_len) k -= (ssize_t)v[i++].iov_len;
    if (i < n) {
      v[i].iov_base = (char *)v[i].iov_base + k;
      v[i].iov_len -= (size_t)k;
    }
  }
  int e = errno;
  io_end(w, began);
  errno = e;
  return rc;
}

static void stats_record(topo_comm *c, topo_trace_record *r) {
  memset(r, 0, sizeof *r);
  r->stats.type = TOPO_REC_STATS;
  r->stats.records = c->records_written;
  for (int k = 0; k < TOPO_DROP_KINDS; k++) r->stats.dropped[k] = atomic_load(&c->dropped[k]);
}

/* One warning per generation for failing writes (a full disk fails every file): the first
 * failure is named, every later one is only counted. */
static int first_io_warning(topo_writer *w, topo_comm *c) {
  if (c->io_warned++ || w->io_warned_any) return 0;
  w->io_warned_any = 1;
  return 1;
}

/* Create `path` (its name starts at path + name_at, inside the directory `dfd` when >= 0) with
 * its header already written, never through a link and never over an existing file (EEXIST):
 * an unnamed O_TMPFILE file gets its name only once the header is on disk, so a process killed
 * at any moment leaves no trace without a whole header; where the file system has no O_TMPFILE
 * (or /proc is missing) the name is created directly with O_EXCL. Returns the descriptor, or -1
 * with errno (and *header_failed set when the header could not be written). */
static int create_with_header(topo_writer *w, int dfd, const char *path, size_t name_at,
                              const topo_trace_header *h, int *header_failed) {
  struct iovec iov = {(void *)h, sizeof *h};
  if (dfd >= 0) {
    int fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0640);
    if (fd >= 0) {
      if (write_all(w, fd, &iov, 1) != 0) {
        int e = errno;
        close(fd);
        *header_failed = 1;
        errno = e;
        return -1;
      }
      char proc[64];
      snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
      if (linkat(AT_FDCWD, proc, dfd, path + name_at, AT_SYMLINK_FOLLOW) == 0) return fd;
      int e = errno;
      close(fd);
      errno = e;
      if (e == EEXIST) return -1;
    }
  }
  int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = dfd >= 0 ? openat(dfd, path + name_at, flags, 0640) : open(path, flags, 0640);
  if (fd < 0) return -1;
  if (write_all(w, fd, &iov, 1) != 0) {
    int e = errno;
    close(fd);
    *header_failed = 1;
    errno = e;
    return -1;
  }
  return fd;
}

/* This host's name, '/' replaced (it becomes part of a file name); "unknown" if none. */
static void host_name(char *host, size_t size) {
  snprintf(host, size, "unknown");
  gethostname(host, size - 1);
  host[size - 1] = 0;
  for (char *p = host; *p; p++)
    if (*p == '/') *p = '_';
}

/* The header fields known when the file is created (init filled in the event settings). */
static void fill_header(topo_comm *c, const char *host) {
  topo_trace_header *h = &c->header;
  memcpy(h->magic, TOPO_TRACE_MAGIC, 8);
  h->version = TOPO_TRACE_VERSION;
  h->minor_version = TOPO_TRACE_MINOR_VERSION;
  h->header_size = sizeof *h;
  h->record_size = TOPO_TRACE_RECORD_SIZE;
  h->comm_hash = c->hash;
  h->rank = c->rank;
  h->nranks = c->nranks;
  h->nnodes = c->nnodes;
  h->pid = (uint32_t)getpid();
  h->mono_ns = topo_clock_monotonic_ns();
  h->realtime_ns = topo_clock_realtime_ns();
  h->gpu_minus_realtime_ns = TOPO_TRACE_OFFSET_UNKNOWN;
  if (!(h->flags & TOPO_TRACE_F_CUPTI) || h->cupti_minus_realtime_ns == 0)
    h->cupti_minus_realtime_ns = TOPO_TRACE_OFFSET_UNKNOWN;
  snprintf(h->host, sizeof h->host, "%s", host);
  snprintf(h->comm_name, sizeof h->comm_name, "%s", c->name);
  snprintf(h->topo_version, sizeof h->topo_version, "%s", TOPO_VERSION);
}

/* A rankless stream is named by its label: only [A-Za-z0-9_-] of its name reaches the path. */
static void path_label(const topo_comm *c, char *label, size_t size) {
  size_t n = 0;
  for (; c->name[n] && n + 1 < size; n++) {
    char ch = c->name[n];
    int safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               ch == '_' || ch == '-';
    label[n] = safe ? ch : '_';
  }
  label[n] = 0;
}

/* Create the file of `c` (mode 0640) with its header; on failure warn once per generation and
 * leave c->fd = -1 (its records are then counted as TOPO_DROP_IO). */
static void open_file(topo_writer *w, topo_comm *c) {
  char host[64];
  host_name(host, sizeof host);
  fill_header(c, host);
  topo_trace_header *h = &c->header;
  c->fd = -1;
  if (!w->dir_made && mkdir(w->dir, 0750) != 0 && errno != EEXIST) {
    if (!w->dir_warned++)
      TOPO_WARN(
          "TOPO/Profiler: cannot create trace directory %s (%s); records are counted as "
          "dropped, the job is unaffected",
          w->dir, strerror(errno));
    return;
  }
  w->dir_made = 1;
  char label[sizeof c->name];
  path_label(c, label, sizeof label);
  /* The directory itself is opened without following a link at its last level, and the file
   * created inside it: a trace directory replaced by a link sends nothing elsewhere. */
  int dfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (dfd < 0 && (errno == ELOOP || (lstat(w->dir, &st) == 0 && S_ISLNK(st.st_mode)))) {
    if (!w->dir_warned++)
      TOPO_WARN(
          "TOPO/Profiler: trace directory %s is a symbolic link, not followed; records "
          "are counted as dropped, the job is unaffected",
          w->dir);
    return;
  }
  int header_failed = 0;
  for (int attempt = 0; attempt < 100 && c->fd < 0 && !header_failed; attempt++) {
    char suffix[16] = "";
    if (attempt) snprintf(suffix, sizeof suffix, ".%d", attempt);
    if (c->rank >= 0)
      snprintf(c->path, sizeof c->path, "%s/topo-%s-%u-%016llx-r%d%s.trace", w->dir, host, h->pid,
               (unsigned long long)c->hash, c->rank, suffix);
    else
      snprintf(c->path, sizeof c->path, "%s/topo-%s-%u-%s%s.trace", w->dir, host, h->pid, label,
               suffix);
    c->fd = create_with_header(w, dfd, c->path, strlen(w->dir) + 1, h, &header_failed);
    if (c->fd < 0 && errno != EEXIST) break;
  }
  if (dfd >= 0) {
    int e = errno;
    close(dfd);
    errno = e;
  }
  if (c->fd < 0 && header_failed) {
    if (first_io_warning(w, c))
      TOPO_WARN("TOPO/Profiler: writing the header of %s failed (%s)", c->path, strerror(errno));
  } else if (c->fd < 0 && !w->dir_warned++) {
    TOPO_WARN(
        "TOPO/Profiler: cannot create %s (%s); records are counted as dropped, the job "
        "is unaffected",
        c->path, strerror(errno));
  }
}

/* The writer takes the life `c` was handed over in: listed, file created. Once per life. */
static void adopt(topo_writer *w, topo_comm *c) {
  /* The life is odd, or one more once finalized: a slot is reused only after its close. */
  uint32_t life = atomic_load_explicit(&c->life, memory_order_acquire);
  atomic_store_explicit(&c->wlife, (life - 1) | 1, memory_order_relaxed);
  c->in_active = 0;
  c->block_count = c->block_index = 0;
  c->records_written = 0;
  c->io_warned = 0;
  c->writer_prev = NULL;
  c->writer_next = w->all;
  if (w->all) w->all->writer_prev = c;
  w->all = c;
  int began = io_begin(w);
  open_file(w, c);
  io_end(w, began);
}

/* Write the current partial block of `c` (plus its STATS record). */
static void flush_block(topo_writer *w, topo_comm *c) {
  if (c->block_count == 0) return;
  if (c->fd < 0) {
    atomic_fetch_add(&c->dropped[TOPO_DROP_IO], c->block_count);
    c->block_count = 0;
    return;
  }
  uint32_t n = c->block_count;
  stats_record(c, &c->block[n]);
  c->block[n].stats.records = c->records_written + n;
  n++;
  topo_trace_block b = {TOPO_TRACE_BLOCK_MAGIC, n,
                        topo_crc32c(0, c->block, (size_t)n * TOPO_TRACE_RECORD_SIZE),
                        c->block_index};
  struct iovec iov[2] = {{&b, sizeof b}, {c->block, (size_t)n * TOPO_TRACE_RECORD_SIZE}};
  if (write_all(w, c->fd, iov, 2) == 0) {
    c->block_index++;
    c->records_written += n;
  } else {
    if (first_io_warning(w, c))
      TOPO_WARN("TOPO/Profiler: writing %s failed (%s); its records are counted as dropped",
                c->path, strerror(errno));
    atomic_fetch_add(&c->dropped[TOPO_DROP_IO], n - 1);
  }
  c->block_count = 0;
}

/* A record that will not be written (the stop's time is up): counted as its producer counts a
 * record that finds the ring full. */
static void count_unwritten(topo_comm *c, uint32_t life, const topo_trace_record *r) {
  int kind = r->type == TOPO_REC_COLL || r->type == TOPO_REC_P2P ? TOPO_DROP_RECORD
             : r->type == TOPO_REC_KERNEL || r->type == TOPO_REC_STRING || r->type == TOPO_REC_CUPTI
                 ? TOPO_DROP_CUPTI
                 : TOPO_DROP_CHILD;
  if (atomic_load_explicit(&c->wlife, memory_order_relaxed) == life)
    atomic_fetch_add_explicit(&c->dropped[kind], 1, memory_order_relaxed);
}

static void take_arrivals(topo_writer *w);

/* Into the block of the life the record names; a record of a life closed (a callback that raced
 * its communicator's finalize) is not written, and nothing of the slot is touched for it. */
static void append(topo_writer *w, topo_comm *c, uint32_t life, const topo_trace_record *r,
                   int64_t now) {
  if (atomic_load_explicit(&c->wlife, memory_order_relaxed) != life) {
    take_arrivals(w); /* a comm handed over since the writer last looked */
    if (atomic_load_explicit(&c->wlife, memory_order_relaxed) != life) return;
  }
  if (!c->block) {
    /* Allocated on first use and released when the comm goes quiet: memory follows traffic. */
    c->block = topo_malloc(TOPO_WRITER_BLOCK_RECORDS * sizeof(topo_trace_record));
    if (!c->block) {
      if (first_io_warning(w, c))
        TOPO_WARN(
            "TOPO/Profiler: out of memory for the block of %s; its records are counted "
            "as dropped",
            c->path);
      atomic_fetch_add(&c->dropped[TOPO_DROP_IO], 1);
      return;
    }
  }
  if (c->block_count == 0) {
    c->block_first_ns = now;
    if (!c->in_active) {
      c->in_active = 1;
      c->active_next = w->active;
      w->active = c;
    }
  }
  c->block[c->block_count++] = *r;
  if (c->block_count == TOPO_WRITER_BLOCK_RECORDS - 1) flush_block(w, c);
}

static void close_comm(topo_writer *w, topo_comm *c) {
  if (!atomic_load_explicit(&c->wlife, memory_order_relaxed)) return;
  flush_block(w, c);
  if (c->fd >= 0) {
    topo_trace_footer f;
    memset(&f, 0, sizeof f);
    f.magic = TOPO_TRACE_FOOTER_MAGIC;
    f.blocks = c->block_index;
    f.records = c->records_written;
    for (int k = 0; k < TOPO_DROP_KINDS; k++) f.dropped[k] = atomic_load(&c->dropped[k]);
    struct iovec iov = {&f, sizeof f};
    if (write_all(w, c->fd, &iov, 1) != 0 && first_io_warning(w, c))
      TOPO_WARN("TOPO/Profiler: writing the footer of %s failed (%s)", c->path, strerror(errno));
    int64_t off = atomic_load(&c->gpu_offset_best);
    uint64_t learned = atomic_load(&c->learned_hash);
    if (off != INT64_MIN || (c->header.comm_hash == 0 && learned)) {
      if (off != INT64_MIN) c->header.gpu_minus_realtime_ns = off;
      if (c->header.comm_hash == 0 && learned) {
        c->header.comm_hash = learned;
        c->header.rank = atomic_load(&c->learned_rank);
      }
      int began = io_begin(w);
      ssize_t k = pwrite(c->fd, &c->header, sizeof c->header, 0);
      io_end(w, began);
      if (k != (ssize_t)sizeof c->header && first_io_warning(w, c))
        TOPO_WARN("TOPO/Profiler: updating the header of %s failed", c->path);
    }
    close(c->fd);
    c->fd = -1;
  }
  topo_free(c->block);
  c->block = NULL;
  c->block_count = 0;
  /* Out of every list and its life let go before it is marked closed: from then on the slot
   * may serve another communicator (the core's) and this thread reads nothing of it but wlife. */
  if (c->writer_prev) c->writer_prev->writer_next = c->writer_next;
  else w->all = c->writer_next;
  if (c->writer_next) c->writer_next->writer_prev = c->writer_prev;
  if (c->in_active) {
    for (topo_comm **p = &w->active; *p; p = &(*p)->active_next)
      if (*p == c) {
        *p = c->active_next;
        break;
      }
    c->in_active = 0;
  }
  atomic_store_explicit(&c->wlife, 0, memory_order_relaxed);
  atomic_store(&c->closed, 1);
  atomic_fetch_add(&w->closes, 1);
  futex_wake_all(&w->closes);
}

/* Move published records into their comms' blocks, up to ring position `limit`; when
 * `count_only`, count them as dropped instead. Returns how many. */
static uint64_t drain(topo_writer *w, int64_t now, uint64_t limit, int count_only) {
  uint64_t n = 0;
  while (w->deq < limit) {
    uint64_t i = w->deq & w->mask;
    cell *cl = &w->cells[i];
    if (atomic_load_explicit(&cl->seq, memory_order_acquire) + i != w->deq + 1) break;
    topo_comm *c = w->comm_at(cl->slot);
    if (c && count_only) {
      count_unwritten(c, cl->life, &cl->rec);
    } else if (c) {
      append(w, c, cl->life, &cl->rec, now);
      if (w->observe && (cl->rec.type == TOPO_REC_COLL || cl->rec.type == TOPO_REC_P2P) &&
          !atomic_load_explicit(&w->stop, memory_order_relaxed))
        w->observe(w->observer, c, cl->life, &cl->rec, now);
    }
    atomic_store_explicit(&cl->seq, w->deq + w->mask + 1 - i, memory_order_release);
    w->deq++;
    n++;
  }
  return n;
}

/* Fault the ring's pages in ahead of the producers (as far ahead as they have come, at most a
 * quarter ring, at least 64 KiB), so that their first lap through the ring takes no page fault
 * inside a callback while resident memory still follows use. An atomic add of 0 dirties a page
 * without changing a value a producer may be storing at the same moment. */
static void fault_ring_ahead(topo_writer *w) {
  uint64_t size = w->mask + 1;
  if (w->resident >= size) return;
  uint64_t enq = atomic_load_explicit(&w->enq, memory_order_relaxed);
  if (enq == 0) return; /* no traffic yet */
  uint64_t ahead = enq < w->wake_every ? enq : w->wake_every;
  uint64_t want = enq + ahead + (65536 / sizeof(cell));
  if (want > size) want = size;
  uint64_t step = (uint64_t)sysconf(_SC_PAGESIZE) / sizeof(cell);
  if (step == 0) step = 1;
  for (; w->resident < want; w->resident += step)
    atomic_fetch_add_explicit(&w->cells[w->resident].seq, 0, memory_order_relaxed);
}

/* Comms handed over by init, adopted in the order they came. */
static void take_arrivals(topo_writer *w) {
  topo_comm *list = atomic_exchange_explicit(&w->arriving, NULL, memory_order_acquire), *rev = NULL;
  while (list) {
    topo_comm *next = list->arrive_next;
    list->arrive_next = rev;
    rev = list;
    list = next;
  }
  for (; rev; rev = rev->arrive_next) adopt(w, rev);
}

/* Close the finalized comms whose records have all been drained; returns how many still wait
 * (a producer between claiming a cell and publishing it). Each was handed over before it was
 * finalized: the arrivals taken after the leavings include it, so no comm is closed while it
 * is still on the arriving list (its slot could be reused and handed over again). */
static int close_ready(topo_writer *w) {
  topo_comm *list = atomic_exchange_explicit(&w->leaving, NULL, memory_order_acquire);
  take_arrivals(w);
  while (list) {
    topo_comm *next = list->leave_next;
    list->leave_next = w->closing;
    w->closing = list;
    list = next;
  }
  int waiting = 0;
  for (topo_comm **p = &w->closing; *p;) {
    topo_comm *c = *p;
    if (w->deq >= c->close_after) {
      *p = c->leave_next;
      close_comm(w, c);
    } else {
      waiting++;
      p = &c->leave_next;
    }
  }
  return waiting;
}

/* Write the partial blocks that are old enough; returns when the next one will be. A comm whose
 * block was written idle gives its buffer back. */
static int64_t flush_idle(topo_writer *w, int64_t now) {
  int64_t due = INT64_MAX;
  for (topo_comm **p = &w->active; *p;) {
    topo_comm *c = *p;
    if (c->block_count == 0) {
      *p = c->active_next;
      c->in_active = 0;
    } else if (now - c->block_first_ns >= w->idle_flush_ns) {
      flush_block(w, c);
      topo_free(c->block);
      c->block = NULL;
      *p = c->active_next;
      c->in_active = 0;
    } else {
      due = min64(due, c->block_first_ns + w->idle_flush_ns);
      p = &c->active_next;
    }
  }
  return due;
}

/* Sleep until `due` or a wake. After a pass that found records, producers do not wake us (more
 * are coming: they are picked up within batch_ns, or at the next quarter ring); after an empty
 * pass, the first record does. */
static void sleep_until(topo_writer *w, uint64_t drained, int64_t due) {
  int64_t now = topo_clock_monotonic_ns();
  int mode = drained ? BATCHING : IDLE;
  if (drained) due = min64(due, now + w->batch_ns);
  if (due <= now) return;
  atomic_store_explicit(&w->sleep, mode, memory_order_seq_cst);
  int busy = atomic_load_explicit(&w->stop, memory_order_seq_cst) ||
             atomic_load_explicit(&w->arriving, memory_order_seq_cst) ||
             atomic_load_explicit(&w->leaving, memory_order_seq_cst) ||
             atomic_exchange_explicit(&w->kicked, 0, memory_order_seq_cst);
  uint64_t queued = atomic_load_explicit(&w->enq, memory_order_seq_cst);
  if (busy || (mode == IDLE && queued != w->deq)) {
    atomic_store_explicit(&w->sleep, AWAKE, memory_order_relaxed);
    if (!busy) pause_briefly(); /* a record claimed, not yet published */
    return;
  }
  futex_wait(&w->sleep, mode, due - now);
  atomic_store_explicit(&w->sleep, AWAKE, memory_order_relaxed);
}

/* The stop: what was queued before it is written while time allows (counted as dropped after),
 * then every comm is closed. */
static void finish(topo_writer *w) {
  take_arrivals(w);
  for (;;) {
    int64_t now = topo_clock_monotonic_ns();
    int late = now >= w->stop_by;
    drain(w, now, w->stop_at, late);
    if (w->deq >= w->stop_at || late) break;
    pause_briefly(); /* a producer still publishing */
  }
  close_ready(w);
  for (topo_comm *c = w->all, *next; c; c = next) {
    next = c->writer_next;
    close_comm(w, c);
  }
}

static void *writer_main(void *arg) {
  topo_writer *w = arg;
  pthread_setname_np(pthread_self(), "topo-writer");
  for (;;) {
    take_arrivals(w);
    if (atomic_load_explicit(&w->stop, memory_order_acquire)) break;
    int64_t now = topo_clock_monotonic_ns();
    uint64_t n = drain(w, now, UINT64_MAX, 0);
    fault_ring_ahead(w);
    int waiting = close_ready(w);
    int64_t due = flush_idle(w, now);
    /* The tick belongs to the live generation: a writer asked to stop (a write may have held it
     * up until long after) leaves it alone. */
    if (atomic_load_explicit(&w->stop, memory_order_acquire)) continue;
    if (w->tick) due = min64(due, w->tick(w, now));
    due = min64(due, now + (waiting ? 1000000LL : IDLE_MAX_NS));
    sleep_until(w, n, due);
  }
  finish(w);
  if (atomic_exchange(&w->fate, FINISHED) == ABANDONED) {
    /* Nobody waits for this writer any more: it frees what is its own. */
    topo_unmap(w->cells, w->ring_bytes);
    topo_free(w);
    return NULL;
  }
  futex_wake_all(&w->fate);
  return NULL;
}

topo_writer *topo_writer_start(const topo_writer_config *cfg) {
  topo_writer *w = topo_calloc(1, sizeof *w);
  if (!w) return NULL;
  w->ring_bytes = (size_t)cfg->ring_size * sizeof(cell);
  w->cells = topo_map(w->ring_bytes);
  if (!w->cells) {
    topo_free(w);
    return NULL;
  }
  w->mask = cfg->ring_size - 1;
  w->wake_every = cfg->ring_size >= 4 ? cfg->ring_size / 4 : 1;
  snprintf(w->dir, sizeof w->dir, "%s", cfg->dir);
  w->idle_flush_ns = cfg->idle_flush_ns;
  w->batch_ns = cfg->idle_flush_ns / 4;
  if (w->batch_ns < BATCH_MIN_NS) w->batch_ns = BATCH_MIN_NS;
  if (w->batch_ns > BATCH_MAX_NS) w->batch_ns = BATCH_MAX_NS;
  w->comm_at = cfg->comm_at;
  w->tick = cfg->tick;
  w->observe = cfg->observe;
  w->observer = cfg->observer;
  /* The writer takes no signal of the host's: they go to the host's own threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&w->thread, NULL, writer_main, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    topo_unmap(w->cells, w->ring_bytes);
    topo_free(w);
    return NULL;
  }
  return w;
}

int topo_writer_stop(topo_writer *w, int64_t wait_ns, int release) {
  if (!w) return 1;
  int64_t now = topo_clock_monotonic_ns();
  w->stop_by = now + wait_ns / 2;
  w->stop_at = atomic_load(&w->enq);
  atomic_store_explicit(&w->stop, 1, memory_order_release);
  wake(w);
  int64_t deadline = now + wait_ns;
  while (atomic_load(&w->fate) == RUNNING && (now = topo_clock_monotonic_ns()) < deadline)
    futex_wait(&w->fate, RUNNING, deadline - now);
  if (!release) {
    if (atomic_load(&w->fate) != FINISHED) return 0;
    pthread_join(w->thread, NULL); /* it has finished: no wait */
    return 1;
  }
  if (atomic_load(&w->fate) != FINISHED && atomic_exchange(&w->fate, ABANDONED) != FINISHED) {
    pthread_detach(w->thread);
    return 0;
  }
  pthread_join(w->thread, NULL);
  topo_unmap(w->cells, w->ring_bytes);
  topo_free(w);
  return 1;
}

int topo_writer_push(topo_comm *c, const topo_trace_record *rec) {
  return topo_writer_push_life(c, atomic_load_explicit(&c->life, memory_order_relaxed), rec);
}

int topo_writer_push_life(topo_comm *c, uint32_t life, const topo_trace_record *rec) {
  topo_writer *w = c->writer;
  if (!w) return 0;
  uint64_t pos = atomic_load_explicit(&w->enq, memory_order_relaxed);
  for (;;) {
    uint64_t i = pos & w->mask;
    cell *cl = &w->cells[i];
    uint64_t seq = atomic_load_explicit(&cl->seq, memory_order_acquire) + i;
    int64_t dif = (int64_t)(seq - pos);
    if (dif == 0) {
      /* seq_cst with the load of w->sleep below, against the writer's store of it and load of
       * enq: either the writer sees this record or this producer sees the writer asleep. */
      if (atomic_compare_exchange_weak_explicit(&w->enq, &pos, pos + 1, memory_order_seq_cst,
                                                memory_order_relaxed)) {
        cl->slot = c->slot;
        cl->life = life;
        cl->rec = *rec;
        atomic_store_explicit(&cl->seq, pos + 1 - i, memory_order_release);
        int s = atomic_load_explicit(&w->sleep, memory_order_seq_cst);
        if (s == IDLE || (s == BATCHING && ((pos + 1) & (w->wake_every - 1)) == 0)) wake(w);
        return 1;
      }
    } else if (dif < 0) {
      if (atomic_load_explicit(&w->sleep, memory_order_relaxed) != AWAKE) wake(w);
      return 0; /* full */
    } else {
      pos = atomic_load_explicit(&w->enq, memory_order_relaxed);
    }
  }
}

void topo_writer_append_local(topo_writer *w, uint32_t slot, uint32_t life,
                              const topo_trace_record *r, int64_t now) {
  topo_comm *c = w->comm_at(slot);
  if (c) append(w, c, life, r, now);
}

void topo_writer_open(topo_writer *w, topo_comm *c) {
  c->writer = w;
  topo_comm *head = atomic_load_explicit(&w->arriving, memory_order_relaxed);
  do c->arrive_next = head;
  while (!atomic_compare_exchange_weak_explicit(&w->arriving, &head, c, memory_order_seq_cst,
                                                memory_order_relaxed));
  wake(w);
}

int topo_writer_close(topo_comm *c, int64_t wait_ns) {
  topo_writer *w = c->writer;
  c->close_after = atomic_load_explicit(&w->enq, memory_order_seq_cst);
  topo_comm *head = atomic_load_explicit(&w->leaving, memory_order_relaxed);
  do c->leave_next = head;
  while (!atomic_compare_exchange_weak_explicit(&w->leaving, &head, c, memory_order_seq_cst,
                                                memory_order_relaxed));
  wake(w);
  int64_t deadline = topo_clock_monotonic_ns() + wait_ns;
  for (;;) {
    unsigned seen = atomic_load(&w->closes);
    if (atomic_load(&c->closed)) return 1;
    int64_t now = topo_clock_monotonic_ns();
    int64_t io = atomic_load_explicit(&w->io_since, memory_order_relaxed);
    /* A write that has outlasted a whole wait: the file system is not answering; no wait. */
    if (now >= deadline || (io && now - io > wait_ns)) return 0;
    futex_wait(&w->closes, (int)seen, min64(deadline - now, 50000000LL));
  }
}
