// SPDX-License-Identifier: Apache-2.0
// Streaming, damage-tolerant reader of binary traces (see trace_reader.h). Input goes through a
// 1 MiB window (pread for files, a view for memory); each block is checked (magic, count range,
// length, CRC-32C) before its records are handed out; a bad region is skipped by scanning for the
// next block header whose checksum holds. From the first damage on, checksums come from a ring of
// prefix checksums (one per 16 input bytes, combined with topo_crc32c_combine), so each input
// byte is summed a bounded number of times however many overlapping block headers a damaged
// region claims. A suspended file reader holds no descriptor and no buffer and reopens its file
// at the next read.
#define _GNU_SOURCE /* memmem */
#include "trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "crc32.h"
#include "log.h"

#define WINDOW_BYTES (1u << 20)
#define BLOCK_BYTES_MAX \
  (sizeof(topo_trace_block) + (size_t)TOPO_TRACE_MAX_BLOCK_RECORDS * TOPO_TRACE_RECORD_SIZE)
#define PREFIX_STEP  16u        /* input bytes between two prefix checksums */
#define PREFIX_SLOTS 32768u     /* prefix checksums kept (128 KiB): 512 KiB of input */
#define PREFIX_GAP   (1u << 18) /* a range starting further past the ring starts a new one */

_Static_assert(WINDOW_BYTES >= BLOCK_BYTES_MAX + 64, "a whole block fits in the window");
_Static_assert((uint64_t)PREFIX_STEP *PREFIX_SLOTS >= BLOCK_BYTES_MAX + 2 * PREFIX_STEP,
               "the ring reaches back from a block's end to its start");

typedef struct string_entry {
  uint32_t id; /* 0 = free slot */
  uint32_t len;
  int complete;
  char *text; /* len + 1 bytes, NUL-terminated */
} string_entry;

struct topo_trace_reader {
  char name[512];
  char *path; /* file sources: reopened by path after a suspend */
  dev_t dev;  /* the file's identity, checked when it is reopened */
  ino_t ino;
  int suspended; /* no descriptor and no buffers until the next read */
  int fd;        /* -1 for a memory source and while suspended */
  const uint8_t *mem;
  uint64_t size;
  uint8_t *win; /* file window: bytes [win_off, win_off + win_len) */
  uint64_t win_off;
  size_t win_len;
  uint64_t pos;
  int quiet, done;
  topo_trace_header header;
  topo_trace_record *block; /* aligned copy for blocks not 8-byte aligned in the input */
  const topo_trace_record *cur;
  size_t cur_n, cur_i;
  uint32_t next_index;
  int have_index;
  string_entry *strings;
  size_t str_cap, str_used, str_bytes;
  /* prefix checksums: slot k % PREFIX_SLOTS holds the CRC of [origin, origin + k * PREFIX_STEP)
   * for k in [prefix_lo, prefix_hi); none while prefix_hi == 0 */
  uint32_t *prefix;
  uint64_t prefix_origin, prefix_lo, prefix_hi;
  topo_trace_reader_info info;
};

static void problem(topo_trace_reader *r, topo_status kind, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void problem(topo_trace_reader *r, topo_status kind, uint64_t offset, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  r->info.problems++;
  if (r->info.problems == 1) {
    r->info.first_problem = kind;
    r->info.first_problem_offset = offset;
    snprintf(r->info.first_message, sizeof r->info.first_message, "%s", msg);
  }
  if (r->quiet) return;
  if (r->info.problems <= TOPO_TRACE_READER_MAX_WARN)
    TOPO_WARN("%s: byte %llu: %s", r->name, (unsigned long long)offset, msg);
  else if (r->info.problems == TOPO_TRACE_READER_MAX_WARN + 1)
    TOPO_WARN("%s: further problems in this file not shown", r->name);
}

/* Bytes [off, off + *avail) of the input, *avail = min(want, size - off). NULL when off >= size
 * or the file cannot be read (then *avail = 0). Valid until the next call. */
static const uint8_t *view(topo_trace_reader *r, uint64_t off, size_t want, size_t *avail) {
  *avail = 0;
  if (off >= r->size) return NULL;
  uint64_t left = r->size - off;
  if (want > left) want = (size_t)left;
  if (r->mem) {
    *avail = want;
    return r->mem + off;
  }
  if (off < r->win_off || off + want > r->win_off + r->win_len) {
    size_t len = left < WINDOW_BYTES ? (size_t)left : WINDOW_BYTES;
    size_t got = 0;
    int err = 0;
    while (got < len) {
      ssize_t n = pread(r->fd, r->win + got, len - got, (off_t)(off + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) err = errno;
      if (n <= 0) break;
      got += (size_t)n;
    }
    r->win_off = off;
    r->win_len = got;
    if (got < want) {
      /* The file failed or shrank under us: what we have is its end, and that is a problem. */
      r->size = off + got;
      want = got;
      if (err) {
        r->info.io_error = err;
        problem(r, TOPO_ERR_IO, off + got, "read failed: %s; the rest of the file is not read",
                strerror(err));
      } else {
        problem(r, TOPO_ERR_PARSE, off + got, "the file shrank to %llu bytes while being read",
                (unsigned long long)r->size);
      }
    }
  }
  *avail = want;
  return r->win + (off - r->win_off);
}

static string_entry *string_slot(const topo_trace_reader *r, uint32_t id) {
  if (!r->str_cap) return NULL;
  size_t mask = r->str_cap - 1;
  for (size_t i = (id * 2654435761u) & mask;; i = (i + 1) & mask) {
    if (r->strings[i].id == id || r->strings[i].id == 0) return &r->strings[i];
  }
}

static int strings_grow(topo_trace_reader *r) {
  size_t cap = r->str_cap ? r->str_cap * 2 : 64;
  string_entry *old = r->strings;
  size_t old_cap = r->str_cap;
  string_entry *fresh = topo_calloc(cap, sizeof *fresh);
  if (!fresh) return 0;
  r->strings = fresh;
  r->str_cap = cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].id) *string_slot(r, old[i].id) = old[i];
  topo_free(old);
  return 1;
}

static void add_string(topo_trace_reader *r, const topo_rec_string *s, uint64_t offset) {
  if (s->id == 0 || s->len > sizeof s->text) {
    problem(r, TOPO_ERR_PARSE, offset, "string record with id %u and length %u ignored", s->id,
            s->len);
    return;
  }
  if ((r->str_used + 1) * 2 > r->str_cap && !strings_grow(r)) return;
  string_entry *e = string_slot(r, s->id);
  if (e->id == 0) {
    e->id = s->id;
    r->str_used++;
  } else if (e->complete) {
    e->len = 0; /* the id was reused: a new string starts */
    e->complete = 0;
  }
  if (e->len + s->len > TOPO_TRACE_READER_MAX_STRING_LEN ||
      r->str_bytes + s->len > TOPO_TRACE_READER_MAX_STRING_BYTES) {
    e->complete = (s->flags & TOPO_STRING_F_LAST) != 0;
    return; /* keep the prefix we have */
  }
  char *text = topo_realloc(e->text, e->len + s->len + 1u);
  if (!text) return;
  memcpy(text + e->len, s->text, s->len);
  e->len += s->len;
  text[e->len] = 0;
  e->text = text;
  r->str_bytes += s->len;
  e->complete = (s->flags & TOPO_STRING_F_LAST) != 0;
}

/* CRC-32C of the prefix [prefix_origin, x), extending the ring forward as far as x needs. 0 when
 * the bytes cannot be read or x lies behind the ring (the caller then sums directly). */
static int prefix_at(topo_trace_reader *r, uint64_t x, uint32_t *out) {
  uint64_t k = (x - r->prefix_origin) / PREFIX_STEP;
  if (k < r->prefix_lo) return 0;
  while (r->prefix_hi <= k) {
    uint64_t off = r->prefix_origin + (r->prefix_hi - 1) * PREFIX_STEP;
    uint64_t want = (k + 1 - r->prefix_hi) * PREFIX_STEP;
    size_t avail;
    const uint8_t *p = view(r, off, want < (1u << 16) ? (size_t)want : (1u << 16), &avail);
    if (!p || avail < PREFIX_STEP) return 0;
    for (size_t i = 0; i + PREFIX_STEP <= avail; i += PREFIX_STEP) {
      uint32_t c = topo_crc32c(r->prefix[(r->prefix_hi - 1) % PREFIX_SLOTS], p + i, PREFIX_STEP);
      r->prefix[r->prefix_hi++ % PREFIX_SLOTS] = c;
      r->info.checked_bytes += PREFIX_STEP;
    }
    if (r->prefix_hi - r->prefix_lo > PREFIX_SLOTS) r->prefix_lo = r->prefix_hi - PREFIX_SLOTS;
  }
  uint64_t at = r->prefix_origin + k * PREFIX_STEP;
  size_t rest = (size_t)(x - at), avail = 0;
  const uint8_t *p = rest ? view(r, at, rest, &avail) : NULL;
  if (avail < rest) return 0;
  *out = rest ? topo_crc32c(r->prefix[k % PREFIX_SLOTS], p, rest) : r->prefix[k % PREFIX_SLOTS];
  r->info.checked_bytes += rest;
  return 1;
}

/* 1 when the prefix ring is in use near `a`: checksums from `a` on go through it. */
static int ring_near(const topo_trace_reader *r, uint64_t a) {
  if (!r->prefix || !r->prefix_hi) return 0;
  return a >= r->prefix_origin + r->prefix_lo * PREFIX_STEP &&
         a <= r->prefix_origin + (r->prefix_hi - 1) * PREFIX_STEP + PREFIX_GAP;
}

/* CRC-32C of input bytes [a, b), b <= size: two prefix checksums and one combine. Queries come
 * in increasing order of `a` (blocks in file order, resync candidates after them), so the ring
 * only moves forward: each input byte is summed once into the ring, plus at most 2 x 15 bytes
 * per query. Moves the window. */
static uint32_t range_crc(topo_trace_reader *r, uint64_t a, uint64_t b) {
  if (!r->prefix) r->prefix = topo_malloc(PREFIX_SLOTS * sizeof *r->prefix);
  if (r->prefix) {
    uint64_t lo = r->prefix_origin + r->prefix_lo * PREFIX_STEP;
    uint64_t hi = r->prefix_origin + (r->prefix_hi ? r->prefix_hi - 1 : 0) * PREFIX_STEP;
    if (!r->prefix_hi || a < lo || a > hi + PREFIX_GAP) { /* start a new ring at a */
      r->prefix_origin = a;
      r->prefix_lo = 0;
      r->prefix_hi = 1;
      r->prefix[0] = 0;
    }
    uint32_t ca, cb;
    if (prefix_at(r, b, &cb) && prefix_at(r, a, &ca)) return topo_crc32c_combine(ca, 0, b - a) ^ cb;
  }
  size_t avail; /* no ring (out of memory) or the bytes failed: sum the range itself */
  const uint8_t *p = view(r, a, (size_t)(b - a), &avail);
  r->info.checked_bytes += avail;
  return p ? topo_crc32c(0, p, avail) : 0;
}

/* Is there a block at `off` whose header is plausible and whose checksum holds? */
static int block_at(topo_trace_reader *r, uint64_t off, topo_trace_block *out) {
  size_t avail;
  const uint8_t *p = view(r, off, sizeof *out, &avail);
  if (!p || avail < sizeof *out) return 0;
  memcpy(out, p, sizeof *out);
  if (out->magic != TOPO_TRACE_BLOCK_MAGIC || out->count < 1 ||
      out->count > TOPO_TRACE_MAX_BLOCK_RECORDS)
    return 0;
  size_t need = sizeof *out + (size_t)out->count * TOPO_TRACE_RECORD_SIZE;
  p = view(r, off, need, &avail);
  if (!p || avail < need) return 0;
  return range_crc(r, off + sizeof *out, off + need) == out->crc;
}

static int footer_at(topo_trace_reader *r, uint64_t off) {
  size_t avail;
  uint32_t magic;
  const uint8_t *p = view(r, off, sizeof(topo_trace_footer), &avail);
  if (!p || avail < sizeof(topo_trace_footer)) return 0;
  memcpy(&magic, p, sizeof magic);
  return magic == TOPO_TRACE_FOOTER_MAGIC;
}

/* After damage at `bad`: the offset of the next checked block or of a footer that ends the
 * file, or r->size when there is none. */
static uint64_t resync(topo_trace_reader *r, uint64_t bad) {
  static const uint8_t magic[4] = {'T', 'B', 'L', 'K'};
  _Static_assert(TOPO_TRACE_BLOCK_MAGIC == ('T' | 'B' << 8 | 'L' << 16 | (uint32_t)'K' << 24),
                 "block magic spells TBLK in file order");
  uint64_t q = bad + 1;
  while (q + sizeof(topo_trace_block) <= r->size) {
    size_t avail;
    const uint8_t *p = view(r, q, 1u << 16, &avail);
    if (!p || avail < 4) break;
    const uint8_t *hit = memmem(p, avail, magic, sizeof magic);
    if (!hit) {
      q += avail - 3;
      continue;
    }
    q += (uint64_t)(hit - p);
    topo_trace_block b;
    if (block_at(r, q, &b)) return q;
    q++;
  }
  if (r->size >= sizeof(topo_trace_footer) && r->size - sizeof(topo_trace_footer) > bad &&
      footer_at(r, r->size - sizeof(topo_trace_footer)))
    return r->size - sizeof(topo_trace_footer);
  return r->size;
}

static void skip_damage(topo_trace_reader *r, uint64_t bad) {
  uint64_t next = resync(r, bad);
  r->info.skipped_bytes += next - bad;
  if (next < r->size)
    problem(r, TOPO_ERR_PARSE, next, "resumed after skipping %llu damaged bytes",
            (unsigned long long)(next - bad));
  r->pos = next;
}

static void read_footer(topo_trace_reader *r) {
  size_t avail;
  const uint8_t *p = view(r, r->pos, sizeof(topo_trace_footer), &avail);
  if (avail < sizeof(topo_trace_footer)) {
    r->info.truncated = 1;
    r->info.skipped_bytes += avail;
    problem(r, TOPO_ERR_PARSE, r->pos, "file ends inside the footer (%zu of %zu bytes)", avail,
            sizeof(topo_trace_footer));
    r->done = 1;
    return;
  }
  topo_trace_footer f;
  memcpy(&f, p, sizeof f);
  r->info.footer = 1;
  r->info.footer_records = f.records;
  memcpy(r->info.dropped, f.dropped, sizeof f.dropped);
  uint64_t end = r->pos + sizeof f;
  if (end < r->size) {
    r->info.skipped_bytes += r->size - end;
    problem(r, TOPO_ERR_PARSE, end, "%llu unexpected bytes after the footer ignored",
            (unsigned long long)(r->size - end));
  }
  if (f.records != r->info.records && r->info.problems == 0)
    problem(r, TOPO_ERR_PARSE, r->pos, "footer says %llu records were written, %llu were read",
            (unsigned long long)f.records, (unsigned long long)r->info.records);
  r->pos = r->size;
  r->done = 1;
}

static void scan_block(topo_trace_reader *r, const topo_trace_record *recs, size_t n,
                       uint64_t offset) {
  for (size_t i = 0; i < n; i++) {
    const topo_trace_record *rec = &recs[i];
    if (rec->type == TOPO_REC_STRING) {
      add_string(r, &rec->string, offset + i * TOPO_TRACE_RECORD_SIZE);
    } else if (rec->type == TOPO_REC_STATS && !r->info.footer) {
      r->info.footer_records = rec->stats.records;
      memcpy(r->info.dropped, rec->stats.dropped, sizeof rec->stats.dropped);
    }
  }
}

/* What one step of topo_trace_reader_next_block found at r->pos. */
enum block_step { BLOCK_AGAIN, BLOCK_DONE, BLOCK_OK };

/* The block header at r->pos into *b: the footer or the end of the file finish the trace, a
 * header that is not one (bad magic, impossible count) is skipped to the next good block. */
static enum block_step read_block_header(topo_trace_reader *r, topo_trace_block *b) {
  if (r->pos >= r->size) {
    if (!r->info.footer)
      problem(r, TOPO_ERR_PARSE, r->pos,
              "trace ends without a footer (writer killed or still running); "
              "%llu blocks read",
              (unsigned long long)r->info.blocks);
    r->done = 1;
    return BLOCK_DONE;
  }
  size_t avail;
  const uint8_t *p = view(r, r->pos, sizeof(topo_trace_block), &avail);
  uint32_t magic = 0;
  if (avail >= 4) memcpy(&magic, p, 4);
  if (magic == TOPO_TRACE_FOOTER_MAGIC) {
    read_footer(r);
    return BLOCK_DONE;
  }
  if (avail < sizeof(topo_trace_block)) {
    r->info.truncated = 1;
    r->info.skipped_bytes += avail;
    problem(r, TOPO_ERR_PARSE, r->pos, "file ends inside a block header (%zu of %zu bytes)", avail,
            sizeof(topo_trace_block));
    r->done = 1;
    return BLOCK_DONE;
  }
  memcpy(b, p, sizeof *b);
  if (b->magic != TOPO_TRACE_BLOCK_MAGIC) {
    problem(r, TOPO_ERR_PARSE, r->pos, "no block header here (magic 0x%08x)", b->magic);
  } else if (b->count < 1 || b->count > TOPO_TRACE_MAX_BLOCK_RECORDS) {
    problem(r, TOPO_ERR_PARSE, r->pos, "block claims %u records (1..%d allowed)", b->count,
            TOPO_TRACE_MAX_BLOCK_RECORDS);
  } else {
    return BLOCK_OK;
  }
  r->info.bad_blocks++;
  skip_damage(r, r->pos);
  return BLOCK_AGAIN;
}

/* The whole block of header b at r->pos, checksum checked, into *body (header included): a
 * block cut by the end of the file finishes the trace, one cut by the next block's header or
 * with a bad checksum is skipped. */
static enum block_step read_block_body(topo_trace_reader *r, const topo_trace_block *b,
                                       const uint8_t **body) {
  uint64_t at = r->pos;
  size_t avail, need = sizeof *b + (size_t)b->count * TOPO_TRACE_RECORD_SIZE;
  const uint8_t *p = view(r, at, need, &avail);
  if (avail < need) {
    uint64_t next = resync(r, at);
    if (next >= r->size) {
      r->info.truncated = 1;
      r->info.skipped_bytes += r->size - at;
      problem(r, TOPO_ERR_PARSE, at,
              "file ends inside block %u (it needs %zu bytes, %zu remain); "
              "records before it are used",
              b->index, need, avail);
      r->done = 1;
      return BLOCK_DONE;
    }
    problem(r, TOPO_ERR_PARSE, at, "block %u claims %zu bytes but the next block starts earlier",
            b->index, need);
    r->info.bad_blocks++;
    r->info.skipped_bytes += next - at;
    r->pos = next;
    return BLOCK_AGAIN;
  }
  /* A good file is summed block by block; near damage, through the ring (a failed checksum of a
   * header claiming more than what follows must not cost its claim again and again). */
  uint32_t crc;
  if (ring_near(r, at + sizeof *b)) {
    crc = range_crc(r, at + sizeof *b, at + need);
    p = view(r, at, need, &avail); /* the ring may have moved the window */
  } else {
    crc = topo_crc32c(0, p + sizeof *b, need - sizeof *b);
    r->info.checked_bytes += need - sizeof *b;
  }
  if (crc != b->crc) {
    problem(r, TOPO_ERR_PARSE, at,
            "block %u: checksum mismatch (stored 0x%08x, computed 0x%08x); "
            "its %u records skipped",
            b->index, b->crc, crc, b->count);
    r->info.bad_blocks++;
    skip_damage(r, at);
    return BLOCK_AGAIN;
  }
  *body = p;
  return BLOCK_OK;
}

/* Hand out a checked block: its records (copied when the view is not 8-byte aligned), the
 * index sequence checked, strings and stats taken in. */
static const topo_trace_record *deliver_block(topo_trace_reader *r, const topo_trace_block *b,
                                              const uint8_t *p) {
  uint64_t at = r->pos;
  size_t need = sizeof *b + (size_t)b->count * TOPO_TRACE_RECORD_SIZE;
  if (r->have_index && b->index != r->next_index)
    problem(r, TOPO_ERR_PARSE, at, "block index jumps from %u to %u (blocks missing)",
            r->next_index - 1, b->index);
  r->have_index = 1;
  r->next_index = b->index + 1;
  const uint8_t *body = p + sizeof *b;
  const topo_trace_record *recs;
  if (((uintptr_t)body & 7u) == 0) {
    recs = (const topo_trace_record *)(const void *)body;
  } else {
    memcpy(r->block, body, need - sizeof *b);
    recs = r->block;
  }
  r->pos = at + need;
  r->info.blocks++;
  r->info.records += b->count;
  scan_block(r, recs, b->count, at + sizeof *b);
  return recs;
}

/* Reopens a suspended file reader: the same file (device and inode), a fresh window. 0 when that
 * fails: the problem is recorded (info.io_error) and the reader ends. */
static int resume(topo_trace_reader *r) {
  int fd = open(r->path, O_RDONLY | O_CLOEXEC), err = 0;
  struct stat st;
  if (fd < 0) err = errno;
  else if (fstat(fd, &st) != 0) err = errno;
  else if (st.st_dev != r->dev || st.st_ino != r->ino) err = ESTALE;
  if (!err) {
    r->win = topo_malloc(WINDOW_BYTES);
    r->block = topo_malloc((size_t)TOPO_TRACE_MAX_BLOCK_RECORDS * TOPO_TRACE_RECORD_SIZE);
    if (!r->win || !r->block) err = ENOMEM;
  }
  if (err) {
    if (fd >= 0) close(fd);
    r->info.io_error = err;
    problem(r, TOPO_ERR_IO, r->pos, "cannot reopen: %s; the rest of the file is not read",
            err == ESTALE ? "the file was replaced" : strerror(err));
    r->done = 1;
    return 0;
  }
  r->fd = fd;
  r->suspended = 0;
  r->win_off = r->win_len = 0;
  return 1;
}

int topo_trace_reader_suspend(topo_trace_reader *r) {
  if (!r || !r->path || r->suspended || r->cur_i < r->cur_n) return 0;
  close(r->fd);
  r->fd = -1;
  topo_free(r->win), topo_free(r->block), topo_free(r->prefix);
  r->win = NULL, r->block = NULL, r->prefix = NULL;
  r->win_off = r->win_len = 0;
  r->prefix_hi = 0;
  r->suspended = 1;
  return 1;
}

size_t topo_trace_reader_next_block(topo_trace_reader *r, const topo_trace_record **records) {
  *records = NULL;
  if (r && !r->done && r->suspended && !resume(r)) return 0;
  while (r && !r->done) {
    topo_trace_block b;
    const uint8_t *p = NULL;
    enum block_step step = read_block_header(r, &b);
    if (step == BLOCK_OK) step = read_block_body(r, &b, &p);
    if (step == BLOCK_DONE) break;
    if (step == BLOCK_AGAIN) continue;
    *records = deliver_block(r, &b, p);
    return b.count;
  }
  return 0;
}

const topo_trace_record *topo_trace_reader_next(topo_trace_reader *r) {
  if (!r) return NULL;
  if (r->cur_i >= r->cur_n) {
    r->cur_n = topo_trace_reader_next_block(r, &r->cur);
    r->cur_i = 0;
    if (!r->cur_n) return NULL;
  }
  return &r->cur[r->cur_i++];
}

static void read_header(topo_trace_reader *r) {
  size_t avail;
  const uint8_t *p = view(r, 0, sizeof(topo_trace_header), &avail);
  r->done = 1;
  if (avail < 8 || memcmp(p, TOPO_TRACE_MAGIC, 8) != 0) {
    if (avail >= 8 || (avail > 0 && memcmp(p, TOPO_TRACE_MAGIC, avail) != 0)) {
      problem(r, TOPO_ERR_PARSE, 0, "not a topo trace (bad magic)");
    } else {
      r->info.truncated = 1;
      problem(r, TOPO_ERR_PARSE, avail, "file ends inside the header (%zu of %zu bytes)", avail,
              sizeof(topo_trace_header));
    }
    r->info.skipped_bytes = r->size;
    return;
  }
  if (avail >= 10) {
    uint16_t version;
    memcpy(&version, p + 8, 2);
    if (version != TOPO_TRACE_VERSION) {
      problem(r, TOPO_ERR_UNSUPPORTED, 8, "unknown trace version %u (this reader knows %d)",
              version, TOPO_TRACE_VERSION);
      r->info.skipped_bytes = r->size;
      return;
    }
  }
  if (avail < sizeof(topo_trace_header)) {
    r->info.truncated = 1;
    r->info.skipped_bytes = r->size;
    problem(r, TOPO_ERR_PARSE, avail, "file ends inside the header (%zu of %zu bytes)", avail,
            sizeof(topo_trace_header));
    return;
  }
  memcpy(&r->header, p, sizeof r->header);
  if (r->header.header_size != sizeof(topo_trace_header) ||
      r->header.record_size != TOPO_TRACE_RECORD_SIZE) {
    problem(r, TOPO_ERR_UNSUPPORTED, 10, "header size %u / record size %u (expected %zu / %d)",
            r->header.header_size, r->header.record_size, sizeof(topo_trace_header),
            TOPO_TRACE_RECORD_SIZE);
    r->info.skipped_bytes = r->size;
    return;
  }
  r->header.host[sizeof r->header.host - 1] = 0;
  r->header.comm_name[sizeof r->header.comm_name - 1] = 0;
  r->header.topo_version[sizeof r->header.topo_version - 1] = 0;
  r->info.header_ok = 1;
  r->pos = sizeof(topo_trace_header);
  r->done = 0;
}

static topo_status reader_new(const char *name, int quiet, topo_trace_reader **out) {
  topo_trace_reader *r = topo_calloc(1, sizeof *r);
  if (!r) return TOPO_ERR_NOMEM;
  snprintf(r->name, sizeof r->name, "%s", name ? name : "(trace)");
  r->fd = -1;
  r->quiet = quiet;
  r->block = topo_malloc((size_t)TOPO_TRACE_MAX_BLOCK_RECORDS * TOPO_TRACE_RECORD_SIZE);
  if (!r->block) {
    topo_free(r);
    return TOPO_ERR_NOMEM;
  }
  *out = r;
  return TOPO_OK;
}

topo_status topo_trace_reader_open(const char *path, int quiet, topo_trace_reader **out) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
  if (fd < 0) {
    int err = errno;
    if (!quiet) TOPO_WARN("%s: cannot open: %s", path, strerror(err));
    errno = err;
    return TOPO_ERR_IO;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (!quiet) TOPO_WARN("%s: not a regular file", path);
    close(fd);
    errno = EINVAL;
    return TOPO_ERR_IO;
  }
  topo_trace_reader *r;
  topo_status st2 = reader_new(path, quiet, &r);
  if (st2 != TOPO_OK) {
    close(fd);
    return st2;
  }
  r->win = topo_malloc(WINDOW_BYTES);
  r->path = topo_strdup(path);
  if (!r->win || !r->path) {
    close(fd);
    topo_trace_reader_close(r);
    return TOPO_ERR_NOMEM;
  }
  r->fd = fd;
  r->dev = st.st_dev;
  r->ino = st.st_ino;
  r->size = (uint64_t)st.st_size;
  r->info.file_bytes = r->size;
  read_header(r);
  *out = r;
  return TOPO_OK;
}

topo_status topo_trace_reader_open_memory(const void *data, size_t size, const char *name,
                                          int quiet, topo_trace_reader **out) {
  *out = NULL;
  topo_trace_reader *r;
  topo_status st = reader_new(name, quiet, &r);
  if (st != TOPO_OK) return st;
  static const uint8_t empty[1];
  r->mem = data ? data : empty;
  r->size = data ? size : 0;
  r->info.file_bytes = r->size;
  read_header(r);
  *out = r;
  return TOPO_OK;
}

void topo_trace_reader_close(topo_trace_reader *r) {
  if (!r) return;
  if (r->fd >= 0) close(r->fd);
  for (size_t i = 0; i < r->str_cap; i++) topo_free(r->strings[i].text);
  topo_free(r->strings);
  topo_free(r->block);
  topo_free(r->win);
  topo_free(r->prefix);
  topo_free(r->path);
  topo_free(r);
}

const topo_trace_header *topo_trace_reader_header(const topo_trace_reader *r) {
  return r && r->info.header_ok ? &r->header : NULL;
}

const char *topo_trace_reader_string(const topo_trace_reader *r, uint32_t id) {
  if (!r || id == 0) return "";
  string_entry *e = string_slot(r, id);
  return e && e->id == id && e->text ? e->text : "";
}

uint64_t topo_trace_reader_offset(const topo_trace_reader *r) { return r ? r->pos : 0; }
const topo_trace_reader_info *topo_trace_reader_info_get(const topo_trace_reader *r) {
  return &r->info;
}
