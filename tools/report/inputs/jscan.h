/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A streaming JSON scanner for large trace files (kineto.c reads Kineto / Chrome traces with it;
 * input.c sniffs what a JSON file is). The input is a plain file, a gzip file inflated here
 * (zlib's inflate: every byte decoded before a damaged one is kept), or a memory block; a buffer holds the current unit (an event, a top-level key) contiguously, followed
 * by JS_PAD zero bytes so that the scanning primitives may load 16 bytes at a time past its end.
 *
 * The primitives work on [p, end) of that buffer and never allocate: strings are slices (js_str)
 * into the buffer, decoded only when a caller asks (js_unescape); values the caller does not want
 * are skipped without being looked at twice (SSE2 over 16 bytes where the CPU has it). Each returns
 * JS_MORE when the unit runs past `end` (the caller refills and parses the unit again) and JS_BAD
 * when the bytes are not JSON. No recursion: nesting is a counter, so no input exhausts the stack.
 * Single-threaded; one js_in per open file.
 */
#ifndef TOPO_REPORT_JSCAN_H
#define TOPO_REPORT_JSCAN_H

#include <stddef.h>
#include <stdint.h>

#define JS_PAD 64 /* zero bytes kept after the buffer's last byte */

typedef enum js_status { JS_OK = 0, JS_MORE = 1, JS_BAD = 2 } js_status;

/* A string's raw bytes between its quotes (escapes not decoded), or a number's text. */
typedef struct js_str {
  const char *p;
  size_t n;
} js_str;

/* Why the input stopped before its end (js_in.error). */
typedef enum js_error {
  JS_ERR_NONE = 0,
  JS_ERR_IO,    /* a read of the file failed (js_in.io_errno): not the input's fault */
  JS_ERR_GZIP,  /* the gzip stream is corrupt: a malformed input */
  JS_ERR_NOMEM, /* out of memory */
} js_error;

typedef struct js_in {
  int fd, own_fd;       /* the file (own_fd: opened here, closed by js_close); -1 for memory */
  void *z;              /* gzip: the z_stream inflating it (NULL: a plain file) */
  unsigned char *zin;   /* gzip: compressed bytes read, not yet inflated */
  uint64_t zread;       /* gzip: compressed bytes read from the file */
  char *buf;            /* cap + JS_PAD bytes */
  size_t cap, len, pos; /* buf[pos, len) not yet consumed */
  size_t max_cap;       /* the buffer grows up to this for one unit */
  uint64_t off;         /* input offset (decompressed) of buf[0] */
  int eof, gzip;        /* gzip: the file is gzip-compressed */
  js_error error;
  int io_errno;    /* JS_ERR_IO: errno of the failed read */
  const char *src; /* js_open_chunks: the bytes, handed over `chunk` at a time */
  size_t src_len, src_off, chunk;
} js_in;

/* Open a file (gzip when it starts with gzip's magic bytes, else plain). 0 on success; -1 with
 * errno set when it cannot be opened, -2 when out of memory. */
int js_open_file(js_in *in, const char *path);
/* Read from a copy of [data, data + len) (tests, fuzzing). 0 on success, -2 out of memory. */
int js_open_memory(js_in *in, const char *data, size_t len);
/* Read [data, data + len) (kept by the caller) at most `chunk` bytes per refill, into a buffer
 * that starts at `chunk` bytes and grows to max_cap: the refill paths of a file, on any bytes
 * (fuzzing). 0 on success, -2 out of memory. */
int js_open_chunks(js_in *in, const char *data, size_t len, size_t chunk, size_t max_cap);
void js_close(js_in *in);
/* Drop buf[0, pos), read more after buf[len). Grows the buffer (up to max_cap) when pos == 0 and it
 * is full. 1 when bytes arrived; 0 at the end of the input, on an error (in->error says which) or
 * when the buffer is at max_cap with no room. */
int js_refill(js_in *in);
/* Bytes of the file read so far (compressed bytes for gzip), for progress lines. */
uint64_t js_file_offset(const js_in *in);

/* ---- primitives over [*pp, end); each advances *pp past what it read on JS_OK */
/* Skip whitespace. */
static inline const char *js_ws(const char *p, const char *end) {
  while (p < end && (unsigned char)*p <= ' ' &&
         (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
    p++;
  return p;
}
/* A string at *pp (which must point at its opening quote). */
js_status js_string(const char **pp, const char *end, js_str *out);
/* A number's text at *pp: a sign, then digits, '.' and an exponent, or a word (NaN, Infinity,
 * inf, nan: what Python's json and C's printf write for non-finite values; null, true and false
 * too, which js_num_parse finds no number). JS_BAD when there is none. */
js_status js_number(const char **pp, const char *end, js_str *out);
/* 1 when a value starting with c is a scalar js_number reads (not a string, object or array). */
int js_is_scalar(char c);
/* Skip any one value at *pp (after whitespace). */
js_status js_skip(const char **pp, const char *end);
/* Skip an object or array at *pp ('{' or '['), nested values included. */
js_status js_skip_nested(const char **pp, const char *end);
/* Skip the rest of the object or array *pp is inside (between its members), past its close. */
js_status js_skip_rest(const char **pp, const char *end);

/* An object's members, one at a time:
 *   js_first(&p, end, &done)           at its '{'; done when it is empty
 *   while (!done) {
 *     js_key(&p, end, &key)             the key and its ':'; p at the value
 *     ... read the value, or js_skip ...
 *     js_next(&p, end, &done)           past ',' (or past the closing '}': done)
 *   }                                  p is past the object */
js_status js_first(const char **pp, const char *end, int *done);
js_status js_key(const char **pp, const char *end, js_str *key);
js_status js_next(const char **pp, const char *end, int *done);

/* Skip the value at in->buf + in->pos, refilling as it goes and dropping what it passed, so that
 * a value of any size takes the buffer's memory only. JS_MORE here means the input ended inside. */
js_status js_skip_stream(js_in *in);

/* ---- decoding */
/* Copy the string into out (cap >= 1), decoding escapes (\uXXXX outside ASCII becomes '?'),
 * truncated to cap - 1 bytes and NUL-terminated. Returns the length written. */
size_t js_unescape(js_str s, char *out, size_t cap);
/* 1 when the slice equals the NUL-terminated literal (raw bytes, no escapes). */
static inline int js_eq(js_str s, const char *lit, size_t litlen) {
  size_t i = 0;
  if (s.n != litlen) return 0;
  for (; i < litlen; i++)
    if (s.p[i] != lit[i]) return 0;
  return 1;
}
#define JS_EQ(s, lit) js_eq((s), (lit), sizeof(lit) - 1)
/* The one reader of a number's text, whatever field it is in: [+-] then decimal digits with an
 * optional fraction and exponent (JSON's form, leniently: "+1", "1.", ".5"), or one of the words
 * producers write for non-finite values, in any case: nan, inf, infinity ("NaN", "-Infinity",
 * "-nan", "inf"). Surrounding blanks are allowed; anything else is no number (JS_NUM_NONE).
 * The value is sign x m x 10^e10, with m holding the first 19 significant digits and `dropped`
 * the first digit past them (-1: none), for rounding: exact for every time and count a producer
 * writes. */
typedef enum js_num_kind { JS_NUM_NONE = 0, JS_NUM_FINITE, JS_NUM_NAN, JS_NUM_INF } js_num_kind;
typedef struct js_num {
  js_num_kind kind;
  int neg;
  uint64_t m;
  int e10; /* clamped to +-100000 */
  int dropped;
} js_num;
js_num js_num_parse(js_str t);

/* What a number field holds, once read through js_num_parse. */
typedef enum js_val {
  JS_VAL_OK = 0,    /* a finite number in the field's range: *out holds it */
  JS_VAL_ABSENT,    /* no number (null, a word, empty) */
  JS_VAL_NONFINITE, /* NaN or an infinity */
  JS_VAL_RANGE,     /* finite but outside the field's range */
} js_val;
/* Microseconds ("1700000000123.456", "-5", "1.5e3") to ns, rounded half away from zero, exact
 * for decimal text; JS_VAL_RANGE beyond +-2^61 ns. */
js_val js_us_to_ns(js_str t, int64_t *ns);
/* An integer (a fraction truncated toward zero); JS_VAL_RANGE beyond int64. */
js_val js_num_int(js_str t, int64_t *out);
/* A double (JS_VAL_NONFINITE for NaN and the infinities, never stored). */
js_val js_num_double(js_str t, double *out);
/* An integer from a string value: the whole string as a number ("7", "1e3", "NaN"), else the
 * first digits inside it ("stream 7"). */
js_val js_str_int(js_str t, int64_t *out);

#endif
