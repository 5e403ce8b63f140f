// SPDX-License-Identifier: Apache-2.0
// The background trace writer: a bounded lock-free multi-producer ring (Vyukov's sequence-per-
// cell queue) carries finished records from the hot path to one thread, which packs them into
// checksummed blocks and writes them to one file per communicator and rank. Whole blocks only,
// so a killed process leaves a file readable up to its last block; a partial block is written
// once its oldest record is TOPO_PROFILER_FLUSH_MS old.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "crc32.h"
#include "internal.h"
#include "log.h"
#include "topo_version.h"

typedef struct cell {
  atomic_ullong seq;
  topo_comm *comm;
  topo_trace_record rec;  /* type 0 = close marker */
} cell;

#define MAX_ACTIVE 1024

static struct {
  cell *cells;
  uint64_t mask;
  atomic_ullong enq;
  uint64_t deq;
  pthread_t thread;
  atomic_int stop;
  int running;
  char dir[TOPO_WRITER_DIR_MAX + 1];
  int64_t idle_flush_ns;
  void (*_Atomic tick)(int64_t);
  topo_comm *active[MAX_ACTIVE]; /* comms with a partial block (writer thread only) */
  int nactive;
} w;

void topo_writer_set_tick(void (*tick)(int64_t)) { atomic_store(&w.tick, tick); }

static int write_all(int fd, const struct iovec *iov, int n) {
  struct iovec v[3];
  memcpy(v, iov, sizeof(*iov) * (size_t)n);
  int i = 0;
  while (i < n) {
    ssize_t k = writev(fd, v + i, n - i);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    while (i < n && (size_t)k >= v[i].iov_len) k -= (ssize_t)v[i++].iov_len;
    if (i < n) {
      v[i].iov_base = (char *)v[i].iov_base + k;
      v[i].iov_len -= (size_t)k;
    }
  }
  return 0;
}

static void stats_record(topo_comm *c, topo_trace_record *r) {
  memset(r, 0, sizeof *r);
  r->stats.type = TOPO_REC_STATS;
  r->stats.records = c->records_written;
  for (int k = 0; k < TOPO_DROP_KINDS; k++) r->stats.dropped[k] = atomic_load(&c->dropped[k]);
}

/* One warning per process for failing writes (a full disk fails every file): the first
 * failure is named, every later one is only counted. */
static atomic_int io_warned_any;

static int first_io_warning(topo_comm *c) {
  return !c->io_warned++ && !atomic_exchange(&io_warned_any, 1);
}

/* Write the current partial block of `c` (plus its STATS record). Writer thread. */
static void flush_block(topo_comm *c) {
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
  if (write_all(c->fd, iov, 2) == 0) {
    c->block_index++;
    c->records_written += n;
  } else {
    if (first_io_warning(c))
      TOPO_WARN("TOPO/Profiler: writing %s failed (%s); its records are counted as dropped",
                c->path, strerror(errno));
    atomic_fetch_add(&c->dropped[TOPO_DROP_IO], n - 1);
  }
  c->block_count = 0;
}

static void append(topo_comm *c, const topo_trace_record *r, int64_t now) {
  if (atomic_load_explicit(&c->closed, memory_order_relaxed)) return;
  if (c->block_count == 0) {
    c->block_first_ns = now;
    if (w.nactive < MAX_ACTIVE) w.active[w.nactive++] = c;
  }
  c->block[c->block_count++] = *r;
  if (c->block_count == TOPO_WRITER_BLOCK_RECORDS - 1) flush_block(c);
}

static void close_comm(topo_comm *c) {
  if (atomic_load(&c->closed)) return;
  flush_block(c);
  if (c->fd >= 0) {
    topo_trace_footer f;
    memset(&f, 0, sizeof f);
    f.magic = TOPO_TRACE_FOOTER_MAGIC;
    f.blocks = c->block_index;
    f.records = c->records_written;
    for (int k = 0; k < TOPO_DROP_KINDS; k++) f.dropped[k] = atomic_load(&c->dropped[k]);
    struct iovec iov = {&f, sizeof f};
    if (write_all(c->fd, &iov, 1) != 0 && first_io_warning(c))
      TOPO_WARN("TOPO/Profiler: writing the footer of %s failed (%s)", c->path, strerror(errno));
    int64_t off = atomic_load(&c->gpu_offset_best);
    uint64_t learned = atomic_load(&c->learned_hash);
    if (off != INT64_MIN || (c->header.comm_hash == 0 && learned)) {
      if (off != INT64_MIN) c->header.gpu_minus_realtime_ns = off;
      if (c->header.comm_hash == 0 && learned) {
        c->header.comm_hash = learned;
        c->header.rank = atomic_load(&c->learned_rank);
      }
      if (pwrite(c->fd, &c->header, sizeof c->header, 0) != (ssize_t)sizeof c->header &&
          first_io_warning(c))
        TOPO_WARN("TOPO/Profiler: updating the header of %s failed", c->path);
    }
    close(c->fd);
    c->fd = -1;
  }
  /* Closed comms stay listed until the last finalize; their block buffer need not. */
  topo_free(c->block);
  c->block = NULL;
  c->block_count = 0;
  atomic_store(&c->closed, 1);
}

static int drain(int64_t now) {
  int n = 0;
  for (;;) {
    cell *cl = &w.cells[w.deq & w.mask];
    uint64_t seq = atomic_load_explicit(&cl->seq, memory_order_acquire);
    if (seq != w.deq + 1) break;
    topo_comm *c = cl->comm;
    if (cl->rec.type == 0) close_comm(c);
    else append(c, &cl->rec, now);
    atomic_store_explicit(&cl->seq, w.deq + w.mask + 1, memory_order_release);
    w.deq++;
    n++;
  }
  return n;
}

static void flush_idle(int64_t now, int64_t age) {
  for (int i = 0; i < w.nactive;) {
    topo_comm *c = w.active[i];
    if (c->block_count == 0 || atomic_load(&c->closed)) {
      w.active[i] = w.active[--w.nactive];
    } else if (now - c->block_first_ns >= age) {
      flush_block(c);
      w.active[i] = w.active[--w.nactive];
    } else {
      i++;
    }
  }
}

static void *writer_main(void *arg) {
  (void)arg;
  int64_t last_tick = 0;
  for (;;) {
    int stopping = atomic_load(&w.stop);
    int64_t now = topo_clock_monotonic_ns();
    int n = drain(now);
    if (now - last_tick >= 5000000) {
      void (*tick)(int64_t) = atomic_load(&w.tick);
      if (tick) tick(now);
      topo_cupti_poll(now);
      last_tick = now;
    }
    flush_idle(now, w.idle_flush_ns);
    if (stopping && n == 0) break;
    if (n == 0) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
  drain(topo_clock_monotonic_ns());
  flush_idle(0, INT64_MIN);
  return NULL;
}

int topo_writer_start(const topo_writer_config *cfg) {
  memset(&w, 0, sizeof w);
  w.cells = topo_calloc(cfg->ring_size, sizeof(cell));
  if (!w.cells) return -1;
  w.mask = cfg->ring_size - 1;
  for (uint64_t i = 0; i <= w.mask; i++) atomic_init(&w.cells[i].seq, i);
  snprintf(w.dir, sizeof w.dir, "%s", cfg->dir);
  w.idle_flush_ns = cfg->idle_flush_ns;
  if (pthread_create(&w.thread, NULL, writer_main, NULL) != 0) {
    topo_free(w.cells);
    w.cells = NULL;
    return -1;
  }
  w.running = 1;
  return 0;
}

void topo_writer_stop(topo_comm *open) {
  if (!w.running) return;
  atomic_store(&w.stop, 1);
  pthread_join(w.thread, NULL);
  w.running = 0;
  for (topo_comm *c = open; c; c = c->next) close_comm(c);
  topo_free(w.cells);
  w.cells = NULL;
}

int topo_writer_push(topo_comm *c, const topo_trace_record *rec) {
  if (!w.cells) return 0;
  uint64_t pos = atomic_load_explicit(&w.enq, memory_order_relaxed);
  for (;;) {
    cell *cl = &w.cells[pos & w.mask];
    uint64_t seq = atomic_load_explicit(&cl->seq, memory_order_acquire);
    int64_t dif = (int64_t)(seq - pos);
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&w.enq, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        cl->comm = c;
        cl->rec = *rec;
        atomic_store_explicit(&cl->seq, pos + 1, memory_order_release);
        return 1;
      }
    } else if (dif < 0) {
      return 0; /* full */
    } else {
      pos = atomic_load_explicit(&w.enq, memory_order_relaxed);
    }
  }
}

void topo_writer_close(topo_comm *c) {
  topo_trace_record marker;
  memset(&marker, 0, sizeof marker);
  struct timespec ts = {0, 1000000};
  if (!w.running) {
    close_comm(c);
    return;
  }
  while (!topo_writer_push(c, &marker)) nanosleep(&ts, NULL);
  while (!atomic_load(&c->closed)) nanosleep(&ts, NULL);
}

void topo_writer_open(topo_comm *c) {
  static atomic_int dir_warned;
  char host[64] = "unknown";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  for (char *p = host; *p; p++)
    if (*p == '/') *p = '_';
  topo_trace_header *h = &c->header;
  memcpy(h->magic, TOPO_TRACE_MAGIC, 8);
  h->version = TOPO_TRACE_VERSION;
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

  c->fd = -1;
  if (mkdir(w.dir, 0750) != 0 && errno != EEXIST) {
    if (!atomic_exchange(&dir_warned, 1))
      TOPO_WARN("TOPO/Profiler: cannot create trace directory %s (%s); records are counted as "
                "dropped, the job is unaffected", w.dir, strerror(errno));
    return;
  }
  /* A rankless stream is named by its label; only [A-Za-z0-9_-] of it reaches the path. */
  char label[sizeof c->name];
  size_t n = 0;
  for (; c->name[n] && n + 1 < sizeof label; n++) {
    char ch = c->name[n];
    int safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               ch == '_' || ch == '-';
    label[n] = safe ? ch : '_';
  }
  label[n] = 0;
  /* The directory itself is opened without following a link at its last level, and the file
   * created inside it: a trace directory replaced by a link sends nothing elsewhere. */
  int dfd = open(w.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (dfd < 0 && (errno == ELOOP || (lstat(w.dir, &st) == 0 && S_ISLNK(st.st_mode)))) {
    if (!atomic_exchange(&dir_warned, 1))
      TOPO_WARN("TOPO/Profiler: trace directory %s is a symbolic link, not followed; records "
                "are counted as dropped, the job is unaffected", w.dir);
    return;
  }
  for (int attempt = 0; attempt < 100 && c->fd < 0; attempt++) {
    char suffix[16] = "";
    if (attempt) snprintf(suffix, sizeof suffix, ".%d", attempt);
    if (c->rank >= 0)
      snprintf(c->path, sizeof c->path, "%s/topo-%s-%u-%016llx-r%d%s.trace", w.dir, host,
               h->pid, (unsigned long long)c->hash, c->rank, suffix);
    else
      snprintf(c->path, sizeof c->path, "%s/topo-%s-%u-%s%s.trace", w.dir, host, h->pid,
               label, suffix);
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    c->fd = dfd >= 0 ? openat(dfd, c->path + strlen(w.dir) + 1, flags, 0640)
                     : open(c->path, flags, 0640);
    if (c->fd < 0 && errno != EEXIST) break;
  }
  if (dfd >= 0) {
    int e = errno;
    close(dfd);
    errno = e;
  }
  if (c->fd < 0) {
    if (!atomic_exchange(&dir_warned, 1))
      TOPO_WARN("TOPO/Profiler: cannot create %s (%s); records are counted as dropped, the job "
                "is unaffected", c->path, strerror(errno));
    return;
  }
  struct iovec iov = {h, sizeof *h};
  if (write_all(c->fd, &iov, 1) != 0) {
    if (first_io_warning(c))
      TOPO_WARN("TOPO/Profiler: writing the header of %s failed (%s)", c->path, strerror(errno));
    close(c->fd);
    c->fd = -1;
  }
}
