// SPDX-License-Identifier: Apache-2.0
// The record pass 1 keeps of a Kineto file's events for pass 2 (rp_kspill), and pass 2's replay of
// it through kn_act, so that pass 2 need not parse the JSON again. Called by kineto.c and input.c.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "jscan.h"
#include "kineto_ctx.h"
#include "log.h"
#include "report.h"
#include "report_inputs.h"

/* ---- the record of pass 1 for pass 2 (rp_kspill): every event deliver hands to kn_act(), as a
 * fixed-size record, written in batches to one unlinked temporary file that every record shares
 * (one descriptor however many JSON inputs there are: a record read back holds none of its own),
 * their strings interned once in memory in one table that the records share too (kernel names
 * repeat across ranks). Replaying it gives pass 2 the same events without parsing the JSON again.
 * Memory: the distinct strings, capped; per record its batches' offsets, a write buffer while
 * pass 1 writes it and a small read buffer while pass 2 reads it. Anything that fails (no
 * temporary file, a write error, too many distinct strings) leaves that record unusable and
 * pass 2 reads its JSON again. */

#define SPILL_BUF              8192 /* records per write batch */
#define SPILL_READ             256  /* records per read */
#define SPILL_MAX_STRINGS      (1u << 20)
#define SPILL_MAX_STRING_BYTES (64u << 20)

typedef struct krec {
  int64_t ts, dur, stream, tid, corr, bytes, in_nelems, out_nelems, group_size;
  double bw;
  uint32_t name, cat_name, coll_name, dtype; /* string ids; 0 = "" */
  int32_t cat, has_dur;
} krec;

/* What the records share while any is alive: the file and the strings. */
static struct spill_shared {
  int fd;
  int users;    /* records alive */
  uint64_t end; /* bytes written to the file */
  char **str;   /* id -> string; str[0] = "" */
  size_t nstr, cap_str, str_bytes;
  uint32_t *slot; /* open addressing: id + 1, 0 empty */
  size_t cap_slot;
} spill_file = {.fd = -1};

struct rp_kspill {
  int failed;   /* unusable: pass 2 reads the JSON again */
  int complete; /* pass 1 reached the end */
  int io_error; /* errno of a failed read back (0: none) */
  uint64_t written, read;
  uint64_t *batch; /* file offset of each batch of SPILL_BUF records */
  size_t nbatch, cap_batch;
  krec *buf; /* pass 1: the batch being filled (SPILL_BUF); pass 2: SPILL_READ records read */
  size_t nbuf, pos;
};

static void shared_release(void) {
  if (--spill_file.users > 0) return;
  if (spill_file.fd >= 0) close(spill_file.fd);
  for (size_t i = 0; i < spill_file.nstr; i++) topo_free(spill_file.str[i]);
  topo_free(spill_file.str), topo_free(spill_file.slot);
  memset(&spill_file, 0, sizeof spill_file);
  spill_file.fd = -1;
}

/* The shared file and string table, made by the first record alive. 0 when they cannot be. */
static int shared_acquire(void) {
  if (spill_file.users++ > 0) return 1;
  spill_file.fd = kn_temp_fd();
  spill_file.str = topo_malloc(64 * sizeof *spill_file.str);
  spill_file.slot = topo_calloc(128, sizeof *spill_file.slot);
  if (spill_file.fd < 0 || !spill_file.str || !spill_file.slot ||
      !(spill_file.str[0] = topo_strdup(""))) {
    shared_release();
    return 0;
  }
  spill_file.nstr = 1, spill_file.cap_str = 64, spill_file.cap_slot = 128;
  return 1;
}

rp_kspill *rp_kspill_new(void) {
  rp_kspill *sp = topo_calloc(1, sizeof *sp);
  if (!sp) return NULL;
  if (!shared_acquire()) {
    topo_free(sp);
    return NULL;
  }
  if (!(sp->buf = topo_malloc(SPILL_BUF * sizeof *sp->buf))) {
    rp_kspill_free(sp);
    return NULL;
  }
  return sp;
}

void rp_kspill_free(rp_kspill *sp) {
  if (!sp) return;
  topo_free(sp->buf), topo_free(sp->batch), topo_free(sp);
  shared_release();
}

int rp_kspill_ready(const rp_kspill *sp) { return sp && sp->complete && !sp->failed; }

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The id of `s` in the shared table, added when new; 0 for "" and on failure (then the record
 * is unusable). */
static uint32_t spill_str(rp_kspill *sp, const char *s) {
  struct spill_shared *t = &spill_file;
  if (!*s) return 0;
  size_t j = str_hash(s) & (t->cap_slot - 1);
  for (; t->slot[j]; j = (j + 1) & (t->cap_slot - 1))
    if (!strcmp(t->str[t->slot[j] - 1], s)) return t->slot[j] - 1;
  size_t len = strlen(s);
  if (t->nstr >= SPILL_MAX_STRINGS || t->str_bytes + len > SPILL_MAX_STRING_BYTES) {
    sp->failed = 1;
    return 0;
  }
  if (t->nstr == t->cap_str) {
    char **v = topo_realloc(t->str, 2 * t->cap_str * sizeof *v);
    if (!v) return sp->failed = 1, 0;
    t->str = v, t->cap_str *= 2;
  }
  char *copy = topo_strdup(s);
  if (!copy) return sp->failed = 1, 0;
  uint32_t id = (uint32_t)t->nstr;
  t->str[t->nstr++] = copy;
  t->str_bytes += len;
  t->slot[j] = id + 1;
  if (2 * t->nstr > t->cap_slot) { /* rehash at half full */
    size_t cap = 2 * t->cap_slot;
    uint32_t *slot = topo_calloc(cap, sizeof *slot);
    if (!slot) return sp->failed = 1, 0;
    for (size_t i = 1; i < t->nstr; i++) {
      size_t k = str_hash(t->str[i]) & (cap - 1);
      while (slot[k]) k = (k + 1) & (cap - 1);
      slot[k] = (uint32_t)i + 1;
    }
    topo_free(t->slot);
    t->slot = slot, t->cap_slot = cap;
  }
  return id;
}

/* The batch filled so far, at the end of the shared file; 0 when the record became unusable. */
static int spill_flush(rp_kspill *sp) {
  if (sp->failed || !sp->nbuf) return !sp->failed;
  if (sp->nbatch == sp->cap_batch) { /* most records are a batch or two */
    size_t cap = sp->cap_batch ? 2 * sp->cap_batch : 4;
    uint64_t *b = topo_realloc(sp->batch, cap * sizeof *b);
    if (!b) return !(sp->failed = 1);
    sp->batch = b, sp->cap_batch = cap;
  }
  const char *p = (const char *)sp->buf;
  size_t left = sp->nbuf * sizeof *sp->buf;
  uint64_t at = spill_file.end;
  while (left) {
    ssize_t w = pwrite(spill_file.fd, p, left, (off_t)at);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      return !(sp->failed = 1); /* a full disk, say: pass 2 reads the JSON again */
    }
    p += w, left -= (size_t)w, at += (uint64_t)w;
  }
  sp->batch[sp->nbatch++] = spill_file.end;
  spill_file.end = at;
  sp->written += sp->nbuf;
  sp->nbuf = 0;
  return 1;
}

/* The end of pass 1: the record is whole (unless a write failed); its write buffer goes. */
void kn_spill_finish(rp_kspill *sp) {
  if (spill_flush(sp)) sp->complete = 1;
  topo_free(sp->buf);
  sp->buf = NULL;
}

void kn_spill_put(rp_kineto *k, jev *e) {
  rp_kspill *sp = k->spill;
  if (sp->failed || !sp->buf) return;
  krec *r = &sp->buf[sp->nbuf];
  r->ts = e->ts, r->dur = e->dur, r->has_dur = e->has_dur, r->cat = e->cat;
  r->stream = e->stream, r->corr = e->corr, r->bytes = e->bytes, r->bw = e->bw_gbps;
  r->tid = e->stream >= 0 ? -1 : kn_ev_tid(e);
  r->in_nelems = e->in_nelems, r->out_nelems = e->out_nelems, r->group_size = e->group_size;
  r->name = spill_str(sp, kn_ev_name(e));
  r->cat_name = spill_str(sp, kn_ev_cat(e));
  r->coll_name = spill_str(sp, e->coll_name);
  r->dtype = spill_str(sp, e->dtype);
  if (++sp->nbuf == SPILL_BUF) spill_flush(sp);
}

/* The next records of the record from the shared file into sp->buf (at most SPILL_READ, within
 * one batch). 0 at its end; 0 with sp->io_error set when the read fails. */
static int spill_read(rp_kspill *sp) {
  if (sp->read == sp->written) return 0;
  uint64_t in_batch = sp->read % SPILL_BUF, batch = sp->read / SPILL_BUF;
  uint64_t want = sp->written - sp->read;
  if (want > SPILL_BUF - in_batch) want = SPILL_BUF - in_batch;
  if (want > SPILL_READ) want = SPILL_READ;
  size_t len = (size_t)want * sizeof *sp->buf, got = 0;
  uint64_t at = sp->batch[batch] + in_batch * sizeof *sp->buf;
  while (got < len) {
    ssize_t r = pread(spill_file.fd, (char *)sp->buf + got, len - got, (off_t)(at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      sp->io_error = r < 0 && errno ? errno : EIO;
      return 0;
    }
    got += (size_t)r;
  }
  sp->nbuf = (size_t)want, sp->pos = 0, sp->read += want;
  return 1;
}

/* Pass 2 from the record: up to max events through kn_act(). 0 when all are delivered, or when
 * the record cannot be read back (k->io_error: the events after it are missing). */
int kn_replay_step(rp_kineto *k, rp_source *s, const rp_sink *sink, size_t max) {
  rp_kspill *sp = k->replay;
  struct spill_shared *t = &spill_file;
  jev *e = &k->ev;
  for (size_t n = 0; n < max; n++) {
    if (sp->pos == sp->nbuf && !spill_read(sp)) {
      if (sp->io_error) {
        k->io_error = sp->io_error;
        if (!k->quiet)
          TOPO_WARN("%s: cannot read back the first pass's record (%s); later events are missing",
                    k->path, strerror(sp->io_error));
      }
      return 0;
    }
    const krec *r = &sp->buf[sp->pos++];
    kn_event_reset(e);
    e->ph_x = 1, e->has_ts = 1;
    e->ts = r->ts, e->dur = r->dur, e->has_dur = r->has_dur, e->cat = r->cat;
    e->stream = r->stream, e->tid = r->tid, e->corr = r->corr, e->bytes = r->bytes,
    e->bw_gbps = r->bw;
    e->in_nelems = r->in_nelems, e->out_nelems = r->out_nelems, e->group_size = r->group_size;
    e->name_c = t->str[r->name < t->nstr ? r->name : 0];
    e->cat_c = t->str[r->cat_name < t->nstr ? r->cat_name : 0];
    snprintf(e->coll_name, sizeof e->coll_name, "%s",
             t->str[r->coll_name < t->nstr ? r->coll_name : 0]);
    snprintf(e->dtype, sizeof e->dtype, "%s", t->str[r->dtype < t->nstr ? r->dtype : 0]);
    int64_t start = e->ts + k->base_ns, stop = start + (e->has_dur ? e->dur : 0);
    k->events++;
    kn_act(k, s, sink, e, start, stop);
  }
  return 1;
}

int kn_spill_rewind(rp_kspill *sp) {
  if (!sp->buf && !(sp->buf = topo_malloc(SPILL_READ * sizeof *sp->buf))) return 0;
  sp->read = 0, sp->nbuf = sp->pos = 0, sp->io_error = 0;
  return 1;
}
