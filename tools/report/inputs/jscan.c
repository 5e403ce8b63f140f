// SPDX-License-Identifier: Apache-2.0
// The streaming JSON scanner of jscan.h: buffered input (plain files read, gzip files inflated),
// and the scanning primitives kineto.c and input.c parse trace JSON with. Strings are found with
// memchr, nested values skipped by looking only at quotes and brackets (16 bytes per step with
// SSE2), numbers converted from their text without a copy.
#include "jscan.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "alloc.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define JS_FIRST_CAP (1u << 20)
#define JS_MAX_CAP   (64u << 20)

static int js_alloc(js_in *in, size_t cap) {
  in->buf = topo_malloc(cap + JS_PAD);
  if (!in->buf) return -2;
  in->cap = cap;
  memset(in->buf, 0, JS_PAD);
  return 0;
}

#define JS_ZIN (256u << 10) /* compressed bytes read at a time */

/* All of `len` bytes, or fewer at the end of the file; -1 (errno set) on a read error. */
static ssize_t read_some(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = read(fd, (char *)buf + got, len - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

int js_open_file(js_in *in, const char *path) {
  memset(in, 0, sizeof *in);
  in->max_cap = JS_MAX_CAP;
  in->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (in->fd < 0) return -1;
  in->own_fd = 1;
  if (js_alloc(in, JS_FIRST_CAP) != 0) {
    js_close(in);
    return -2;
  }
  unsigned char magic[2];
  ssize_t n = read_some(in->fd, magic, 2);
  if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) { /* gzip: inflate it */
    z_stream *z = topo_calloc(1, sizeof *z);
    in->zin = topo_malloc(JS_ZIN);
    if (!z || !in->zin || inflateInit2(z, 15 + 16) != Z_OK) {
      topo_free(z);
      js_close(in);
      return -2;
    }
    in->z = z;
    in->gzip = 1;
    memcpy(in->zin, magic, 2);
    z->next_in = in->zin;
    z->avail_in = 2;
    in->zread = 2;
  } else if (n > 0) { /* plain: the bytes are the text */
    memcpy(in->buf, magic, (size_t)n);
    in->len = (size_t)n;
    memset(in->buf + in->len, 0, JS_PAD);
  } else if (n < 0) {
    in->error = JS_ERR_IO;
    in->io_errno = errno;
  }
  return 0;
}

int js_open_memory(js_in *in, const char *data, size_t len) {
  memset(in, 0, sizeof *in);
  in->fd = -1;
  in->max_cap = len;
  if (js_alloc(in, len) != 0) return -2;
  if (len) memcpy(in->buf, data, len);
  memset(in->buf + len, 0, JS_PAD);
  in->len = len;
  in->eof = 1;
  return 0;
}

int js_open_chunks(js_in *in, const char *data, size_t len, size_t chunk, size_t max_cap) {
  memset(in, 0, sizeof *in);
  in->fd = -1;
  in->src = data;
  in->src_len = len;
  in->chunk = chunk ? chunk : 1;
  in->max_cap = max_cap > in->chunk ? max_cap : in->chunk;
  return js_alloc(in, in->chunk);
}

void js_close(js_in *in) {
  if (in->z) inflateEnd((z_stream *)in->z);
  topo_free(in->z);
  topo_free(in->zin);
  if (in->own_fd) close(in->fd);
  topo_free(in->buf);
  memset(in, 0, sizeof *in);
  in->fd = -1;
}

/* Up to `want` decoded bytes into `out`: *got of them. Sets in->eof at the end of the last gzip
 * member (or of the file: a stream cut short ends there, what came before it counts), in->error
 * at damage (the bytes decoded before it are in *got) or a failed read. */
static void inflate_some(js_in *in, char *out, size_t want, size_t *got) {
  z_stream *z = in->z;
  z->next_out = (Bytef *)out;
  z->avail_out = (uInt)want;
  while (z->avail_out && !in->eof && !in->error) {
    if (!z->avail_in) {
      ssize_t r = read_some(in->fd, in->zin, JS_ZIN);
      if (r < 0) {
        in->error = JS_ERR_IO;
        in->io_errno = errno ? errno : EIO;
        break;
      }
      if (r == 0) { /* the file ends inside a member: cut short */
        in->eof = 1;
        break;
      }
      z->next_in = in->zin;
      z->avail_in = (uInt)r;
      in->zread += (uint64_t)r;
    }
    int ret = inflate(z, Z_NO_FLUSH);
    if (ret == Z_STREAM_END) {
      /* another member may follow (gzip files may be concatenated); anything else ends it */
      if (!z->avail_in) {
        ssize_t r = read_some(in->fd, in->zin, JS_ZIN);
        if (r > 0) z->next_in = in->zin, z->avail_in = (uInt)r, in->zread += (uint64_t)r;
      }
      if (z->avail_in >= 2 && z->next_in[0] == 0x1f && z->next_in[1] == 0x8b) inflateReset(z);
      else in->eof = 1;
    } else if (ret == Z_MEM_ERROR) {
      in->error = JS_ERR_NOMEM;
    } else if (ret != Z_OK && !(ret == Z_BUF_ERROR && !z->avail_in)) {
      in->error = JS_ERR_GZIP; /* Z_DATA_ERROR: corrupt data, a bad checksum or length */
    }
  }
  *got = want - z->avail_out;
}

int js_refill(js_in *in) {
  if (in->eof || in->error || (in->fd < 0 && !in->src)) return 0;
  if (in->pos) { /* drop what was consumed */
    memmove(in->buf, in->buf + in->pos, in->len - in->pos);
    in->off += in->pos;
    in->len -= in->pos;
    in->pos = 0;
  }
  if (in->len == in->cap) { /* one unit fills the buffer: grow it */
    if (in->cap >= in->max_cap) return 0;
    size_t cap = in->cap * 2 > in->max_cap ? in->max_cap : in->cap * 2;
    char *b = topo_realloc(in->buf, cap + JS_PAD);
    if (!b) {
      in->error = JS_ERR_NOMEM;
      return 0;
    }
    in->buf = b;
    in->cap = cap;
  }
  size_t want = in->cap - in->len;
  if (want > (unsigned)INT32_MAX) want = (unsigned)INT32_MAX;
  size_t n = 0;
  if (in->src) { /* chunked memory */
    n = in->src_len - in->src_off;
    if (n > want) n = want;
    if (n > in->chunk) n = in->chunk;
    memcpy(in->buf + in->len, in->src + in->src_off, n);
    in->src_off += n;
    in->eof = n == 0;
  } else if (in->z) {
    inflate_some(in, in->buf + in->len, want, &n);
  } else {
    ssize_t r = read_some(in->fd, in->buf + in->len, want);
    if (r < 0) {
      in->error = JS_ERR_IO;
      in->io_errno = errno ? errno : EIO;
    } else {
      n = (size_t)r;
      in->eof = r == 0;
    }
  }
  in->len += n;
  memset(in->buf + in->len, 0, JS_PAD);
  return n > 0;
}

uint64_t js_file_offset(const js_in *in) {
  if (in->fd < 0) return in->off + in->pos;
  if (in->z) return in->zread - ((const z_stream *)in->z)->avail_in;
  return in->off + in->len; /* plain: read up to the buffer's end */
}

/* ---- primitives */

/* The first quote in [p, end) that is not escaped, or NULL. s: where the string's bytes start
 * (a run of backslashes before a quote is counted back to it). */
static inline const char *closing_quote(const char *s, const char *p, const char *end) {
  for (;;) {
    const char *q;
#if defined(__SSE2__)
    if (end - p >= 16) { /* short strings (keys, categories) end in the first 16 bytes */
      unsigned bits = (unsigned)_mm_movemask_epi8(
          _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)p), _mm_set1_epi8('"')));
      q = bits ? p + __builtin_ctz(bits) : memchr(p + 16, '"', (size_t)(end - p - 16));
    } else
#endif
      q = p < end ? memchr(p, '"', (size_t)(end - p)) : NULL;
    if (!q) return NULL;
    if (q == s || q[-1] != '\\') return q;
    const char *b = q;
    while (b > s && b[-1] == '\\') b--;
    if (((q - b) & 1) == 0) return q; /* an even run of backslashes: this quote closes */
    p = q + 1;
  }
}

js_status js_string(const char **pp, const char *end, js_str *out) {
  const char *s = *pp + 1, *q = closing_quote(s, s, end);
  if (!q) return JS_MORE;
  if (out) out->p = s, out->n = (size_t)(q - s);
  *pp = q + 1;
  return JS_OK;
}

/* Characters of a number or a literal (true, false, null). */
static const unsigned char scalar_char[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['-'] = 1, ['+'] = 1, ['.'] = 1, ['e'] = 1, ['E'] = 1, ['a'] = 2,
    ['b'] = 2, ['c'] = 2, ['d'] = 2, ['f'] = 2, ['g'] = 2, ['h'] = 2, ['i'] = 2, ['j'] = 2,
    ['k'] = 2, ['l'] = 2, ['m'] = 2, ['n'] = 2, ['o'] = 2, ['p'] = 2, ['q'] = 2, ['r'] = 2,
    ['s'] = 2, ['t'] = 2, ['u'] = 2, ['v'] = 2, ['w'] = 2, ['x'] = 2, ['y'] = 2, ['z'] = 2,
    ['A'] = 2, ['B'] = 2, ['C'] = 2, ['D'] = 2, ['F'] = 2, ['G'] = 2, ['H'] = 2, ['I'] = 2,
    ['J'] = 2, ['K'] = 2, ['L'] = 2, ['M'] = 2, ['N'] = 2, ['O'] = 2, ['P'] = 2, ['Q'] = 2,
    ['R'] = 2, ['S'] = 2, ['T'] = 2, ['U'] = 2, ['V'] = 2, ['W'] = 2, ['X'] = 2, ['Y'] = 2,
    ['Z'] = 2,
};

int js_is_scalar(char c) { return scalar_char[(unsigned char)c] != 0; }

js_status js_number(const char **pp, const char *end, js_str *out) {
  const char *p = *pp, *s = p;
  while (p < end && scalar_char[(unsigned char)*p]) p++;
  if (p == end) return JS_MORE; /* the number may go on in the next bytes */
  if (p == s) return JS_BAD;
  out->p = s;
  out->n = (size_t)(p - s);
  *pp = p;
  return JS_OK;
}

/* The first quote or bracket in [p, end), or end. */
static inline const char *find_struct(const char *p, const char *end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
  const __m128i low = _mm_set1_epi8(0x20); /* '[' | 0x20 == '{', ']' | 0x20 == '}' */
  while (p < end) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p); /* JS_PAD covers the tail */
    __m128i l = _mm_or_si128(v, low);
    __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, quote),
                             _mm_or_si128(_mm_cmpeq_epi8(l, open), _mm_cmpeq_epi8(l, close)));
    unsigned bits = (unsigned)_mm_movemask_epi8(m);
    if (bits) {
      p += __builtin_ctz(bits);
      return p < end ? p : end;
    }
    p += 16;
  }
  return end;
#else
  while (p < end && *p != '"' && (*p | 0x20) != '{' && (*p | 0x20) != '}') p++;
  return p;
#endif
}

#if defined(__SSE2__)
/* Set bits of a mask (without the popcnt instruction, which the build does not assume). */
static inline int pop64(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (int)((x * 0x0101010101010101ull) >> 56);
}

/* Bit i = xor of bits 0..i: from a mask of quotes, the bytes inside strings (opening quote
 * included, closing one not). */
static inline uint64_t prefix_xor(uint64_t m) {
  m ^= m << 1;
  m ^= m << 2;
  m ^= m << 4;
  m ^= m << 8;
  m ^= m << 16;
  m ^= m << 32;
  return m;
}

static inline uint64_t mask16(__m128i v, __m128i c) {
  return (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, c));
}
#endif

/* Byte by byte over [*pp, stop), the string state and depth carried in and out: 1 with *pp past
 * the bracket that brings depth to 0, else 0 with *pp = stop. */
static int skip_bytes(const char **pp, const char *stop, long *depth, int *in_str, int *esc) {
  for (const char *p = *pp; p < stop; p++) {
    char ch = *p;
    if (*in_str) {
      if (*esc) *esc = 0;
      else if (ch == '\\') *esc = 1;
      else if (ch == '"') *in_str = 0;
    } else if (ch == '"') {
      *in_str = 1;
    } else if (ch == '{' || ch == '[') {
      ++*depth;
    } else if ((ch == '}' || ch == ']') && --*depth == 0) {
      *pp = p + 1;
      return 1;
    }
  }
  *pp = stop;
  return 0;
}

/* Skip to the bracket that closes `depth` open ones, from *pp (which is not inside a string).
 * 64 bytes a step: quotes, backslashes and brackets as bit masks, the bytes inside strings from
 * the quotes' prefix xor, so brackets inside strings drop out; a block holding a backslash goes
 * byte by byte. The string state carries from block to block. */
static js_status skip_depth(const char **pp, const char *end, long depth) {
  const char *p = *pp;
  int in_str = 0, esc = 0;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
  const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
  const __m128i low = _mm_set1_epi8(0x20); /* '[' | 0x20 == '{', ']' | 0x20 == '}' */
  while (p < end) {
    size_t avail = (size_t)(end - p);
    uint64_t valid = avail < 64 ? ((uint64_t)1 << avail) - 1 : ~(uint64_t)0;
    uint64_t q = 0, bs = 0, o = 0, c = 0;
    for (int i = 0; i < 4; i++) { /* JS_PAD covers the bytes past the end */
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
      __m128i l = _mm_or_si128(v, low);
      q |= mask16(v, quote) << (16 * i);
      bs |= mask16(v, bslash) << (16 * i);
      o |= mask16(l, open) << (16 * i);
      c |= mask16(l, close) << (16 * i);
    }
    if (!((bs & valid) | (uint64_t)esc)) {
      uint64_t inside = prefix_xor(q & valid) ^ (in_str ? ~(uint64_t)0 : 0);
      o &= ~inside & valid;
      c &= ~inside & valid;
      int closes = pop64(c);
      if (depth > closes) { /* the block cannot close the value: count it whole */
        depth += pop64(o) - closes;
      } else {
        for (uint64_t m = o | c; m; m &= m - 1) {
          uint64_t bit = m & -m;
          if (o & bit) depth++;
          else if (--depth == 0) {
            *pp = p + __builtin_ctzll(bit) + 1;
            return JS_OK;
          }
        }
      }
      in_str = (int)(inside >> 63);
      p += 64;
      continue;
    }
    /* a backslash in the block: byte by byte */
    if (skip_bytes(&p, avail < 64 ? end : p + 64, &depth, &in_str, &esc)) {
      *pp = p;
      return JS_OK;
    }
  }
  return JS_MORE;
#else
  if (!skip_bytes(&p, end, &depth, &in_str, &esc)) return JS_MORE;
  *pp = p;
  return JS_OK;
#endif
}

js_status js_skip_nested(const char **pp, const char *end) {
  const char *p = *pp + 1;
  js_status st = skip_depth(&p, end, 1);
  if (st == JS_OK) *pp = p;
  return st;
}

js_status js_skip_rest(const char **pp, const char *end) { return skip_depth(pp, end, 1); }

js_status js_skip(const char **pp, const char *end) {
  const char *p = js_ws(*pp, end);
  if (p >= end) return JS_MORE;
  js_status st;
  if (*p == '"') {
    st = js_string(&p, end, NULL);
  } else if (*p == '{' || *p == '[') {
    st = js_skip_nested(&p, end);
  } else {
    const char *s = p;
    while (p < end && scalar_char[(unsigned char)*p]) p++;
    if (p == end) return JS_MORE;
    st = p == s ? JS_BAD : JS_OK;
  }
  if (st == JS_OK) *pp = p;
  return st;
}

js_status js_first(const char **pp, const char *end, int *done) {
  const char *p = js_ws(*pp + 1, end);
  if (p >= end) return JS_MORE;
  *done = *p == '}';
  *pp = *done ? p + 1 : p;
  return JS_OK;
}

js_status js_key(const char **pp, const char *end, js_str *key) {
  const char *p = *pp;
  if (*p != '"') return JS_BAD;
  js_status st = js_string(&p, end, key);
  if (st != JS_OK) return st;
  p = js_ws(p, end);
  if (p >= end) return JS_MORE;
  if (*p++ != ':') return JS_BAD;
  p = js_ws(p, end);
  if (p >= end) return JS_MORE;
  *pp = p;
  return JS_OK;
}

js_status js_next(const char **pp, const char *end, int *done) {
  const char *p = js_ws(*pp, end);
  if (p >= end) return JS_MORE;
  if (*p == '}') {
    *done = 1;
    *pp = p + 1;
    return JS_OK;
  }
  if (*p++ != ',') return JS_BAD;
  p = js_ws(p, end);
  if (p >= end) return JS_MORE;
  *done = 0;
  *pp = p;
  return JS_OK;
}

/* Streaming skip: the state (depth, inside a string, a pending backslash) survives refills. */
js_status js_skip_stream(js_in *in) {
  long depth = 0;
  int in_str = 0, scalar = 0, started = 0;
  for (;;) {
    const char *p = in->buf + in->pos, *end = in->buf + in->len;
    if (!started) {
      p = js_ws(p, end);
      if (p < end) {
        started = 1;
        if (*p == '"') in_str = 1, p++;
        else if (*p == '{' || *p == '[') depth = 1, p++;
        else if (scalar_char[(unsigned char)*p]) scalar = 1;
        else return JS_BAD;
      }
    }
    while (started && p < end) {
      if (in_str) {
        const char *q = memchr(p, '"', (size_t)(end - p)), *b;
        if (!q) { /* keep a trailing run of backslashes: it decides the next quote */
          b = end;
          while (b > p && b[-1] == '\\') b--;
          p = b;
          break;
        }
        b = q;
        while (b > p && b[-1] == '\\') b--;
        p = q + 1;
        if (((q - b) & 1) == 0) {
          in_str = 0;
          if (!depth) {
            in->pos = (size_t)(p - in->buf);
            return JS_OK;
          }
        }
        continue;
      }
      if (scalar) {
        while (p < end && scalar_char[(unsigned char)*p]) p++;
        if (p < end) {
          in->pos = (size_t)(p - in->buf);
          return JS_OK;
        }
        break;
      }
      p = find_struct(p, end);
      if (p >= end) break;
      char c = *p++;
      if (c == '"') in_str = 1;
      else if (c == '{' || c == '[') depth++;
      else if (--depth == 0) {
        in->pos = (size_t)(p - in->buf);
        return JS_OK;
      }
    }
    in->pos = (size_t)((p < end ? p : end) - in->buf);
    if (!js_refill(in)) {
      /* a literal that ends exactly at the end of the input is complete */
      if (scalar && in->pos == in->len && in->eof) return JS_OK;
      return in->len > in->pos && in->len == in->cap ? JS_BAD : JS_MORE;
    }
  }
}

/* ---- decoding */

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t js_unescape(js_str s, char *out, size_t cap) {
  size_t n = 0;
  if (!s.n) { /* also the empty slice of a field never read (p NULL) */
    out[0] = 0;
    return 0;
  }
  const char *p = s.p, *end = s.p + s.n;
  if (!memchr(p, '\\', s.n)) { /* the common case */
    n = s.n < cap - 1 ? s.n : cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
    return n;
  }
  while (p < end && n + 1 < cap) {
    char c = *p++;
    if (c == '\\' && p < end) {
      char e = *p++;
      switch (e) {
      case 'n': c = '\n'; break;
      case 't': c = '\t'; break;
      case 'r': c = '\r'; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'u': {
        int v = 0, ok = end - p >= 4;
        for (int i = 0; ok && i < 4; i++) {
          int h = hexval((unsigned char)p[i]);
          if (h < 0) ok = 0;
          v = v * 16 + h;
        }
        if (ok) p += 4;
        c = ok && v < 0x80 && v > 0 ? (char)v : '?';
        break;
      }
      default: c = e; break; /* \" \\ \/ and anything else: the character itself */
      }
    }
    out[n++] = c;
  }
  out[n] = 0;
  return n;
}

static int isdig(char c) { return c >= '0' && c <= '9'; }

static int blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* 1 when [p, end) is the word w (lower case), in any case. */
static int word_is(const char *p, const char *end, const char *w) {
  for (; *w; w++, p++)
    if (p >= end || (*p | 0x20) != *w) return 0;
  return p == end;
}

js_num js_num_parse(js_str t) {
  js_num r = {JS_NUM_NONE, 0, 0, 0, -1};
  const char *p = t.p, *end = t.p + t.n;
  while (p < end && blank(*p)) p++;
  while (end > p && blank(end[-1])) end--;
  if (p < end && (*p == '-' || *p == '+')) r.neg = *p++ == '-';
  if (p < end && !isdig(*p) && *p != '.') {
    if (word_is(p, end, "nan")) r.kind = JS_NUM_NAN;
    else if (word_is(p, end, "inf") || word_is(p, end, "infinity")) r.kind = JS_NUM_INF;
    return r;
  }
  int digits = 0, sig = 0;
  int64_t e = 0;
  for (int frac = 0; p < end; p++) {
    if (*p == '.' && !frac) {
      frac = 1;
      continue;
    }
    if (!isdig(*p)) break;
    int d = *p - '0';
    digits++;
    if (sig < 19) {
      r.m = r.m * 10 + (uint64_t)d;
      sig += r.m > 0;
      e -= frac;
    } else {
      if (r.dropped < 0) r.dropped = d;
      e += !frac;
    }
  }
  if (!digits) return r;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    int eneg = p < end && *p == '-';
    if (p < end && (*p == '-' || *p == '+')) p++;
    if (p >= end || !isdig(*p)) return r;
    int64_t x = 0;
    for (; p < end && isdig(*p); p++)
      if (x < 1000000) x = x * 10 + (*p - '0');
    e += eneg ? -x : x;
  }
  if (p != end) return r;
  r.kind = JS_NUM_FINITE;
  r.e10 = e < -100000 ? -100000 : e > 100000 ? 100000 : (int)e;
  return r;
}

/* n's magnitude x 10^shift as an integer no larger than `lim`: rounded half away from zero when
 * `nearest`, else truncated. 0 when it is larger. The digits past m cannot change a rounding
 * below m's last digit (they add less than one unit to an even divisor's remainder), and at it
 * the first of them decides. */
static int scale(const js_num *n, int shift, int nearest, uint64_t lim, uint64_t *out) {
  uint64_t m = n->m;
  int e10 = n->e10 + shift;
  if (!m) {
    *out = 0;
    return 1;
  }
  if (e10 >= 0) {
    for (int i = 0; i < e10; i++)
      if (__builtin_mul_overflow(m, 10, &m)) return 0;
    if (nearest && !e10 && n->dropped >= 5 && __builtin_add_overflow(m, 1, &m)) return 0;
  } else if (e10 < -19) {
    m = 0; /* below 1 (m < 10^19): nothing, and under one half */
  } else {
    uint64_t div = 1;
    for (int i = 0; i < -e10; i++) div *= 10;
    uint64_t q = m / div, rem = m % div;
    m = q + (nearest && rem >= div - rem);
  }
  if (m > lim) return 0;
  *out = m;
  return 1;
}

/* A number read by js_num_parse into [-lim, lim] (lim <= INT64_MAX). */
static js_val to_int(js_str t, int e_shift, int nearest, int64_t lim, int64_t *out) {
  js_num n = js_num_parse(t);
  if (n.kind == JS_NUM_NONE) return JS_VAL_ABSENT;
  if (n.kind != JS_NUM_FINITE) return JS_VAL_NONFINITE;
  uint64_t v;
  if (!scale(&n, e_shift, nearest, (uint64_t)lim, &v)) return JS_VAL_RANGE;
  *out = n.neg ? -(int64_t)v : (int64_t)v;
  return JS_VAL_OK;
}

js_val js_us_to_ns(js_str t, int64_t *ns) { return to_int(t, 3, 1, ((int64_t)1 << 61) - 1, ns); }

js_val js_num_int(js_str t, int64_t *out) { return to_int(t, 0, 0, INT64_MAX, out); }

js_val js_num_double(js_str t, double *out) {
  js_num n = js_num_parse(t);
  if (n.kind == JS_NUM_NONE) return JS_VAL_ABSENT;
  if (n.kind != JS_NUM_FINITE) return JS_VAL_NONFINITE;
  double d = (double)n.m;
  if (n.m) d = n.e10 >= 0 ? d * pow(10, n.e10) : d / pow(10, -n.e10);
  if (!(d <= DBL_MAX)) return JS_VAL_RANGE;
  *out = n.neg ? -d : d;
  return JS_VAL_OK;
}

js_val js_str_int(js_str t, int64_t *out) {
  js_val v = js_num_int(t, out);
  if (v != JS_VAL_ABSENT) return v;
  const char *p = t.p, *end = t.p + t.n; /* the first digits inside: "stream 7" */
  while (p < end && !isdig(*p)) p++;
  if (p == end) return JS_VAL_ABSENT;
  const char *q = p;
  while (q < end && isdig(*q)) q++;
  js_str digits = {p > t.p && p[-1] == '-' ? p - 1 : p,
                   (size_t)(q - p) + (p > t.p && p[-1] == '-')};
  return js_num_int(digits, out);
}
