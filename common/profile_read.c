// SPDX-License-Identifier: Apache-2.0
// The tuner-profile reader (see profile.h, docs/profile-format.md): any bytes in, the section
// that best matches the communicator out; one warning per malformed line (naming file:line and
// the fault, the first PROFILE_MAX_WARNINGS of them), which is skipped; never crashes. A file
// with no usable section gives the built-in defaults. Called at tuner init, by topo-tune and the
// fuzz target; never on a hot path.
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "file.h"
#include "log.h"
#include "nccl_vocab.h"
#include "profile.h"
#include "profile_internal.h"

#define PROFILE_MAX_FILE     (16u << 20) /* a profile larger than this is not a profile */
#define PROFILE_MAX_LINE     1024
#define PROFILE_MAX_TOKENS   16
#define PROFILE_MAX_WARNINGS 32 /* bad lines warned per file; the rest only counted */

typedef struct parser {
  const char *name;
  int line;
  int nbad;
} parser;

static void bad(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(parser *ps, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (ps->nbad < PROFILE_MAX_WARNINGS)
    TOPO_WARN("%s:%d: %s; line skipped", ps->name, ps->line, what);
  ps->nbad++;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno == ERANGE || !isfinite(v) || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end || errno == ERANGE || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

static int parse_u64(const char *s, uint64_t *out) {
  if (!isdigit((unsigned char)*s)) return 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno == ERANGE) return 0;
  *out = v;
  return 1;
}

/* Split "key=value" in place; returns the value or NULL when there is no '='. */
static char *split_kv(char *tok) {
  char *eq = strchr(tok, '=');
  if (!eq) return NULL;
  *eq = '\0';
  return eq + 1;
}

static int valid_gpu_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= sizeof(((topo_profile_key *)0)->gpu)) return 0;
  if (strcmp(s, "*") == 0) return 1;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return 0;
  return 1;
}

/* `section gpu=H200 nranks=8 nnodes=1 nccl=22809`; absent or "*" fields match anything. */
static int parse_section(parser *ps, char **tok, int ntok, topo_profile_key *key) {
  memset(key, 0, sizeof *key);
  for (int i = 1; i < ntok; i++) {
    char *v = split_kv(tok[i]);
    long n;
    if (!v) return bad(ps, "section: expected key=value, got '%s'", tok[i]), 0;
    if (strcmp(tok[i], "gpu") == 0) {
      if (!valid_gpu_name(v)) return bad(ps, "section: bad gpu name '%s'", v), 0;
      memset(key->gpu, 0, sizeof key->gpu); /* a repeated gpu= leaves no tail of the first */
      snprintf(key->gpu, sizeof key->gpu, "%s", strcmp(v, "*") == 0 ? "" : v);
    } else if (strcmp(tok[i], "nranks") == 0 || strcmp(tok[i], "nnodes") == 0 ||
               strcmp(tok[i], "nccl") == 0) {
      if (strcmp(v, "*") == 0) {
        n = 0;
      } else if (!parse_long(v, 0, 100000000, &n)) {
        return bad(ps, "section: bad number '%s' (want an integer >= 0 or *)", v), 0;
      }
      if (tok[i][1] == 'r') key->nranks = (int)n;
      else if (tok[i][1] == 'n') key->nnodes = (int)n;
      else key->nccl_version = (int)n;
    } else {
      return bad(ps, "section: unknown key '%s' (gpu, nranks, nnodes, nccl)", tok[i]), 0;
    }
  }
  return 1;
}

/* key=value pairs of a link / proto / term line. `names` lists the keys, `vals` receives them,
 * `seen` marks which came; returns 0 after warning on an unknown key or a bad value. */
typedef struct kv_spec {
  const char *key;
  double lo, hi;
} kv_spec;

static int parse_pairs(parser *ps, const char *what, char **tok, int first, int ntok,
                       const kv_spec *spec, int nspec, double *vals, int *seen) {
  for (int i = first; i < ntok; i++) {
    char *v = split_kv(tok[i]);
    if (!v) {
      return bad(ps, "%s: expected key=value, got '%s'", what, tok[i]), 0;
    }
    int k;
    for (k = 0; k < nspec; k++)
      if (strcmp(tok[i], spec[k].key) == 0) break;
    if (k == nspec) {
      return bad(ps, "%s: unknown key '%s'", what, tok[i]), 0;
    }
    if (!parse_double(v, spec[k].lo, spec[k].hi, &vals[k])) {
      return bad(ps, "%s: bad value for %s: '%s' (want %g..%g)", what, spec[k].key, v, spec[k].lo,
                 spec[k].hi),
             0;
    }
    seen[k] = 1;
  }
  return 1;
}

static const kv_spec link_spec[] = {{"bw_gbs", 1e-6, 1e6}, {"lat_us", 0, 1e6}};
static const kv_spec proto_spec[] = {
    {"bw_eff", 1e-6, 1.0}, {"lat_us", 0, 1e6}, {"ch_bw_gbs", 0, 1e6}};

static int parse_link(parser *ps, char **tok, int ntok, topo_profile *p) {
  int cls = ntok > 1 ? topo_nccl_name_index(tok[1], topo_profile_link_names, TOPO_LINK_COUNT) : -1;
  if (cls < 0)
    return bad(ps, "link: unknown link class '%s' (nvlink, pci, net)", ntok > 1 ? tok[1] : ""), 0;
  double v[2] = {p->link[cls].bw_gbs, p->link[cls].lat_us};
  int seen[2] = {0, 0};
  if (!parse_pairs(ps, "link", tok, 2, ntok, link_spec, 2, v, seen)) return 0;
  if (!seen[0] && !seen[1]) return bad(ps, "link %s: no bw_gbs= or lat_us=", tok[1]), 0;
  p->link[cls].bw_gbs = v[0];
  p->link[cls].lat_us = v[1];
  return 1;
}

static int parse_proto(parser *ps, char **tok, int ntok, topo_profile *p) {
  int pr = ntok > 1 ? topo_nccl_proto_from_name(tok[1]) : -1;
  if (pr < 0)
    return bad(ps, "proto: unknown protocol '%s' (ll, ll128, simple)", ntok > 1 ? tok[1] : ""), 0;
  double v[3] = {p->proto[pr].bw_eff, p->proto[pr].lat_us, p->proto[pr].ch_bw_gbs};
  int seen[3] = {0, 0, 0};
  if (!parse_pairs(ps, "proto", tok, 2, ntok, proto_spec, 3, v, seen)) return 0;
  if (!seen[0] && !seen[1] && !seen[2])
    return bad(ps, "proto %s: no bw_eff=, lat_us= or ch_bw_gbs=", tok[1]), 0;
  p->proto[pr].bw_eff = v[0];
  p->proto[pr].lat_us = v[1];
  p->proto[pr].ch_bw_gbs = v[2];
  return 1;
}

/* `term <coll> <algo> <proto> [channels=N] lat_us=X bw_gbs=Y [min_bytes= max_bytes= rel_err=
 * npoints=]` */
static topo_status parse_term(parser *ps, char **tok, int ntok, topo_profile_term *out) {
  if (ntok < 4)
    return bad(ps, "term: want <collective> <algorithm> <protocol> key=value..."), TOPO_ERR_PARSE;
  topo_profile_term t;
  memset(&t, 0, sizeof t);
  t.max_bytes = UINT64_MAX;
  if ((t.coll = topo_nccl_coll_from_name(tok[1])) < 0)
    return bad(ps, "term: unknown collective '%s'", tok[1]), TOPO_ERR_PARSE;
  if ((t.algo = topo_nccl_algo_from_name(tok[2])) < 0)
    return bad(ps, "term: unknown algorithm '%s'", tok[2]), TOPO_ERR_PARSE;
  if ((t.proto = topo_nccl_proto_from_name(tok[3])) < 0)
    return bad(ps, "term: unknown protocol '%s'", tok[3]), TOPO_ERR_PARSE;
  int have_lat = 0, have_bw = 0;
  for (int i = 4; i < ntok; i++) {
    char *v = split_kv(tok[i]);
    const char *k = tok[i];
    long n;
    if (!v) return bad(ps, "term: expected key=value, got '%s'", k), TOPO_ERR_PARSE;
    if (strcmp(k, "channels") == 0) {
      if (!parse_long(v, 0, 64, &n))
        return bad(ps, "term: bad channels '%s' (0..64)", v), TOPO_ERR_PARSE;
      t.nchannels = (int)n;
    } else if (strcmp(k, "lat_us") == 0) {
      if (!parse_double(v, 0, TOPO_PROFILE_MAX_US, &t.lat_us))
        return bad(ps, "term: bad lat_us '%s' (>= 0)", v), TOPO_ERR_PARSE;
      have_lat = 1;
    } else if (strcmp(k, "bw_gbs") == 0) {
      if (!parse_double(v, TOPO_PROFILE_MIN_BW, TOPO_PROFILE_MAX_BW, &t.bw_gbs) || !(t.bw_gbs > 0))
        return bad(ps, "term: bad bw_gbs '%s' (must be > 0)", v), TOPO_ERR_PARSE;
      have_bw = 1;
    } else if (strcmp(k, "min_bytes") == 0) {
      if (!parse_u64(v, &t.min_bytes))
        return bad(ps, "term: bad min_bytes '%s'", v), TOPO_ERR_PARSE;
    } else if (strcmp(k, "max_bytes") == 0) {
      if (!parse_u64(v, &t.max_bytes))
        return bad(ps, "term: bad max_bytes '%s'", v), TOPO_ERR_PARSE;
    } else if (strcmp(k, "rel_err") == 0) {
      if (!parse_double(v, 0, TOPO_PROFILE_MAX_US, &t.rel_err))
        return bad(ps, "term: bad rel_err '%s'", v), TOPO_ERR_PARSE;
    } else if (strcmp(k, "npoints") == 0) {
      if (!parse_long(v, 0, 1000000000, &n))
        return bad(ps, "term: bad npoints '%s'", v), TOPO_ERR_PARSE;
      t.npoints = (int)n;
    } else {
      return bad(ps, "term: unknown key '%s'", k), TOPO_ERR_PARSE;
    }
  }
  if (!have_lat || !have_bw)
    return bad(ps, "term: lat_us= and bw_gbs= are required"), TOPO_ERR_PARSE;
  if (t.min_bytes > t.max_bytes) return bad(ps, "term: min_bytes > max_bytes"), TOPO_ERR_PARSE;
  *out = t;
  return TOPO_OK;
}

/* `point <coll> <algo> <proto> [channels=N] bytes=B median_us=X noise_us=Y [default=0|1]` */
static topo_status parse_point(parser *ps, char **tok, int ntok, topo_profile *p) {
  if (ntok < 4)
    return bad(ps, "point: want <collective> <algorithm> <protocol> key=value..."), TOPO_ERR_PARSE;
  topo_profile_point t;
  memset(&t, 0, sizeof t);
  if ((t.coll = topo_nccl_coll_from_name(tok[1])) < 0)
    return bad(ps, "point: unknown collective '%s'", tok[1]), TOPO_ERR_PARSE;
  if ((t.algo = topo_nccl_algo_from_name(tok[2])) < 0)
    return bad(ps, "point: unknown algorithm '%s'", tok[2]), TOPO_ERR_PARSE;
  if ((t.proto = topo_nccl_proto_from_name(tok[3])) < 0)
    return bad(ps, "point: unknown protocol '%s'", tok[3]), TOPO_ERR_PARSE;
  int have = 0;
  t.is_default = -1; /* no default=: not known */
  for (int i = 4; i < ntok; i++) {
    char *v = split_kv(tok[i]);
    const char *k = tok[i];
    long n;
    if (!v) return bad(ps, "point: expected key=value, got '%s'", k), TOPO_ERR_PARSE;
    if (strcmp(k, "channels") == 0) {
      if (!parse_long(v, 0, 64, &n))
        return bad(ps, "point: bad channels '%s' (0..64)", v), TOPO_ERR_PARSE;
      t.nchannels = (int)n;
    } else if (strcmp(k, "bytes") == 0) {
      if (!parse_u64(v, &t.bytes)) return bad(ps, "point: bad bytes '%s'", v), TOPO_ERR_PARSE;
      have |= 1;
    } else if (strcmp(k, "median_us") == 0) {
      if (!parse_double(v, TOPO_PROFILE_MIN_US, TOPO_PROFILE_MAX_US, &t.median_us) ||
          !(t.median_us > 0))
        return bad(ps, "point: bad median_us '%s' (must be > 0)", v), TOPO_ERR_PARSE;
      have |= 2;
    } else if (strcmp(k, "noise_us") == 0) {
      if (!parse_double(v, 0, TOPO_PROFILE_MAX_US, &t.noise_us))
        return bad(ps, "point: bad noise_us '%s' (>= 0)", v), TOPO_ERR_PARSE;
      have |= 4;
    } else if (strcmp(k, "default") == 0) {
      if (!parse_long(v, 0, 1, &n))
        return bad(ps, "point: bad default '%s' (0 or 1)", v), TOPO_ERR_PARSE;
      t.is_default = (int)n;
    } else {
      return bad(ps, "point: unknown key '%s'", k), TOPO_ERR_PARSE;
    }
  }
  if (have != 7)
    return bad(ps, "point: bytes=, median_us= and noise_us= are required"), TOPO_ERR_PARSE;
  int n = 0;
  const topo_profile_point *same =
      topo_profile_find_points(p, t.coll, t.algo, t.proto, t.nchannels, &n);
  for (int i = 0; i < n; i++)
    if (same[i].bytes == t.bytes)
      return bad(ps,
                 "point: duplicate (collective, algorithm, protocol, channels, bytes) in this "
                 "section"),
             TOPO_ERR_PARSE;
  topo_status st = topo_profile_add_point(p, &t);
  if (st == TOPO_ERR_INVALID) return bad(ps, "point: too many points in one section"), st;
  return st;
}

static int parse_nvls(const char *v, int *out) {
  if (strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0) *out = 1;
  else if (strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0) *out = 0;
  else if (strcmp(v, "-1") == 0 || strcasecmp(v, "unknown") == 0) *out = -1;
  else return 0;
  return 1;
}

/* Parse state across lines: the section being read and the best one so far. */
typedef struct reader {
  parser ps;
  topo_profile_key want;
  int in_section; /* 1: lines apply to cur; 0 before any section; -1 skipping a bad one */
  int version_seen;
  topo_profile cur;
  int cur_score;
  topo_profile best;
  int best_score; /* -1: none yet */
  topo_status nomem;
  /* The section's term lines as read, checked and sorted once when the section ends: one sort
   * instead of an insertion per line keeps any order of lines linear-logarithmic. */
  struct staged_term {
    topo_profile_term t;
    int line;
  } * stage;
  int nstage, cap_stage;
} reader;

static int staged_cmp(const void *pa, const void *pb) {
  const struct staged_term *a = pa, *b = pb;
  int c = topo_profile_term_cmp(&a->t, &b->t);
  return c ? c : (a->line > b->line) - (a->line < b->line);
}

/* Move the staged terms into the section in (coll, algo, proto, nchannels, min_bytes) order. Of
 * two terms of one key whose ranges overlap, the one starting lower (then the earlier line) is
 * kept and the other warned about at its line. */
static void flush_terms(reader *r) {
  topo_profile *p = &r->cur;
  if (r->nstage == 0) return;
  qsort(r->stage, (size_t)r->nstage, sizeof *r->stage, staged_cmp);
  size_t want = (size_t)(p->nterms + r->nstage);
  topo_profile_term *terms = topo_realloc(p->terms, want * sizeof *terms);
  if (!terms) {
    r->nomem = TOPO_ERR_NOMEM;
    r->nstage = 0;
    return;
  }
  p->terms = terms;
  p->cap_terms = p->nterms + r->nstage;
  int line = r->ps.line;
  for (int i = 0; i < r->nstage; i++) {
    const topo_profile_term *t = &r->stage[i].t;
    const topo_profile_term *prev = p->nterms ? &p->terms[p->nterms - 1] : NULL;
    r->ps.line = r->stage[i].line;
    if (prev && topo_profile_term_of_key(prev, t->coll, t->algo, t->proto, t->nchannels) &&
        prev->max_bytes >= t->min_bytes) {
      if (prev->min_bytes == t->min_bytes && prev->max_bytes == t->max_bytes)
        bad(&r->ps,
            "term: duplicate (collective, algorithm, protocol, channels, range) in "
            "this section");
      else
        bad(&r->ps,
            "term: byte range overlaps another term of this (collective, algorithm, "
            "protocol, channels) in this section");
      continue;
    }
    if (!topo_profile_term_valid(t)) {
      bad(&r->ps, "term: invalid");
      continue;
    }
    p->terms[p->nterms++] = *t;
  }
  r->ps.line = line;
  r->nstage = 0;
}

static void finish_section(reader *r) {
  if (r->in_section != 1) return;
  flush_terms(r);
  r->in_section = 0;
  if (r->cur_score > r->best_score) {
    topo_profile_free(&r->best);
    r->best = r->cur;
    r->best_score = r->cur_score;
  } else {
    topo_profile_free(&r->cur);
  }
  memset(&r->cur, 0, sizeof r->cur);
}

/* Split `line` in place into at most PROFILE_MAX_TOKENS blank-separated fields, up to a '#'.
 * Returns the count, or -1 after a warning when there are more. */
static int tokenize(parser *ps, char *line, char **tok) {
  int ntok = 0;
  for (char *s = line;;) {
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\v' || *s == '\f') s++;
    if (!*s || *s == '#') break;
    if (ntok == PROFILE_MAX_TOKENS) {
      bad(ps, "more than %d fields", PROFILE_MAX_TOKENS);
      return -1;
    }
    tok[ntok++] = s;
    while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\v' && *s != '\f' && *s != '#')
      s++;
    if (*s == '#') {
      *s = '\0';
      break;
    }
    if (*s) *s++ = '\0';
  }
  return ntok;
}

/* `topo-profile <version>`: warned when newer than this reader. */
static void handle_version(reader *r, char **tok, int ntok) {
  parser *ps = &r->ps;
  long v;
  r->version_seen = 1; /* a malformed one still counts: no second warning for its absence */
  if (ntok != 2 || !parse_long(tok[1], 1, 1000000, &v)) {
    bad(ps, "version line: want 'topo-profile <version>'");
    return;
  }
  if (v > TOPO_PROFILE_VERSION) {
    TOPO_WARN(
        "%s:%d: profile version %ld is newer than this reader's %d; keys it does not know "
        "will be skipped",
        ps->name, ps->line, v, TOPO_PROFILE_VERSION);
  }
}

/* `section ...`: ends the current section and starts the next from the built-in defaults of
 * its GPU (a bad section line skips every line up to the next one). */
static void handle_section(reader *r, char **tok, int ntok) {
  parser *ps = &r->ps;
  finish_section(r);
  topo_profile_key key;
  if (!parse_section(ps, tok, ntok, &key)) {
    r->in_section = -1; /* its lines belong to no usable section: skipped quietly */
    return;
  }
  topo_profile_builtin(key.gpu, &r->cur);
  r->cur.key = key;
  snprintf(r->cur.source, sizeof r->cur.source, "%s:%d", ps->name, ps->line);
  r->cur_score = topo_profile_key_score(&key, &r->want);
  r->in_section = 1;
}

/* A term line, staged until its section ends (flush_terms). */
static void stage_term(reader *r, char **tok, int ntok) {
  parser *ps = &r->ps;
  topo_profile_term t;
  if (parse_term(ps, tok, ntok, &t) != TOPO_OK) return;
  if (r->cur.nterms + r->nstage >= TOPO_PROFILE_MAX_TERMS) {
    bad(ps, "term: too many terms in one section");
    return;
  }
  if (r->nstage == r->cap_stage) {
    int cap = r->cap_stage ? 2 * r->cap_stage : 64;
    struct staged_term *grown = topo_realloc(r->stage, (size_t)cap * sizeof *grown);
    if (!grown) {
      r->nomem = TOPO_ERR_NOMEM;
      return;
    }
    r->stage = grown;
    r->cap_stage = cap;
  }
  r->stage[r->nstage].t = t;
  r->stage[r->nstage++].line = ps->line;
}

/* One line of a section: launch_us, max_channels, nvls, link, proto, term or point. */
static void handle_entry(reader *r, char **tok, int ntok) {
  parser *ps = &r->ps;
  topo_profile *p = &r->cur;
  const char *k = tok[0];
  long n;
  double d;
  if (strcmp(k, "launch_us") == 0) {
    if (ntok != 2 || !parse_double(tok[1], 0, 1e6, &d)) bad(ps, "launch_us: want one number >= 0");
    else p->launch_us = d;
  } else if (strcmp(k, "max_channels") == 0) {
    if (ntok != 2 || !parse_long(tok[1], 0, 64, &n))
      bad(ps, "max_channels: want one integer 0..64");
    else p->max_channels = (int)n;
  } else if (strcmp(k, "nvls") == 0) {
    int v;
    if (ntok != 2 || !parse_nvls(tok[1], &v)) bad(ps, "nvls: want yes, no or unknown");
    else p->nvls = v;
  } else if (strcmp(k, "link") == 0) {
    parse_link(ps, tok, ntok, p);
  } else if (strcmp(k, "proto") == 0) {
    parse_proto(ps, tok, ntok, p);
  } else if (strcmp(k, "term") == 0) {
    stage_term(r, tok, ntok);
  } else if (strcmp(k, "point") == 0) {
    if (parse_point(ps, tok, ntok, p) == TOPO_ERR_NOMEM) r->nomem = TOPO_ERR_NOMEM;
  } else {
    bad(ps, "unknown key '%s'", k);
  }
}

static void handle_line(reader *r, char *line) {
  parser *ps = &r->ps;
  char *tok[PROFILE_MAX_TOKENS];
  int ntok = tokenize(ps, line, tok);
  if (ntok <= 0) return;
  const char *k = tok[0];
  if (strcmp(k, "topo-profile") == 0) {
    handle_version(r, tok, ntok);
    return;
  }
  if (!r->version_seen) {
    TOPO_WARN("%s:%d: no 'topo-profile %d' line before the first entry; reading it as version %d",
              ps->name, ps->line, TOPO_PROFILE_VERSION, TOPO_PROFILE_VERSION);
    r->version_seen = 1;
  }
  if (strcmp(k, "section") == 0) handle_section(r, tok, ntok);
  else if (r->in_section == 0) bad(ps, "'%s' before any 'section' line", k);
  else if (r->in_section == 1) handle_entry(r, tok, ntok);
}

int topo_profile_sniff(const char *text, size_t len) {
  size_t pos = 0;
  while (pos < len) {
    while (pos < len && strchr(" \t\r\v\f\n", text[pos]) && text[pos]) pos++;
    if (pos >= len) return 0;
    if (text[pos] == '#') { /* a comment line */
      while (pos < len && text[pos] != '\n') pos++;
      continue;
    }
    static const char *const first[] = {"topo-profile", "section"};
    for (int i = 0; i < 2; i++) {
      size_t n = strlen(first[i]);
      if (len - pos > n && !memcmp(text + pos, first[i], n) &&
          strchr(" \t\r\v\f#", text[pos + n]) && text[pos + n])
        return 1;
    }
    return 0;
  }
  return 0;
}

topo_status topo_profile_parse(const char *text, size_t len, const char *name,
                               const topo_profile_key *want, topo_profile *out, int *nbad) {
  if (nbad) *nbad = 0;
  if (!out) return TOPO_ERR_INVALID;
  reader r;
  memset(&r, 0, sizeof r);
  r.ps.name = name ? name : "<profile>";
  if (want) r.want = *want;
  r.best_score = -1;
  if (!text) len = 0;
  if (!topo_profile_sniff(text, len)) { /* one line, not one per line of someone else's file */
    topo_profile_builtin(want && want->gpu[0] ? want->gpu : NULL, out);
    TOPO_WARN(
        "%s: not a topo profile (it starts with neither 'topo-profile' nor 'section'); "
        "using %s",
        r.ps.name, out->source);
    return TOPO_ERR_PARSE;
  }

  char line[PROFILE_MAX_LINE];
  size_t pos = 0;
  while (pos < len && r.nomem == TOPO_OK) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    r.ps.line++;
    size_t n = end - pos;
    if (memchr(text + pos, '\0', n)) {
      bad(&r.ps, "NUL byte in line");
    } else if (n >= sizeof line) {
      bad(&r.ps, "line longer than %d bytes", PROFILE_MAX_LINE - 1);
    } else {
      memcpy(line, text + pos, n);
      line[n] = '\0';
      handle_line(&r, line);
    }
    pos = end + 1;
  }
  finish_section(&r);
  topo_profile_free(&r.cur);
  topo_free(r.stage);
  if (nbad) *nbad = r.ps.nbad;
  if (r.ps.nbad > PROFILE_MAX_WARNINGS)
    TOPO_WARN("%d more bad lines in %s; skipped", r.ps.nbad - PROFILE_MAX_WARNINGS, r.ps.name);

  const char *gpu = want && want->gpu[0] ? want->gpu : NULL;
  if (r.nomem != TOPO_OK) {
    topo_profile_free(&r.best);
    TOPO_WARN("%s: out of memory while reading; using the built-in defaults", r.ps.name);
    topo_profile_builtin(gpu, out);
    return TOPO_ERR_NOMEM;
  }
  if (r.best_score < 0) {
    topo_profile_builtin(gpu, out);
    TOPO_WARN("%s: no section matches gpu=%s nranks=%d nnodes=%d nccl=%d; using %s", r.ps.name,
              gpu ? gpu : "*", want ? want->nranks : 0, want ? want->nnodes : 0,
              want ? want->nccl_version : 0, out->source);
    return TOPO_ERR_PARSE;
  }
  *out = r.best;
  return TOPO_OK;
}

topo_status topo_profile_load(const char *path, const topo_profile_key *want, topo_profile *out) {
  if (!out) return TOPO_ERR_INVALID;
  const char *gpu = want && want->gpu[0] ? want->gpu : NULL;
  char *buf, why[96];
  size_t len;
  topo_status st = topo_file_read(path, PROFILE_MAX_FILE, &buf, &len, why, sizeof why);
  if (st != TOPO_OK) {
    topo_profile_builtin(gpu, out);
    TOPO_WARN("cannot read profile '%s': %s; using %s", path ? path : "(null)", why, out->source);
    return st;
  }
  st = topo_profile_parse(buf, len, path, want, out, NULL);
  topo_free(buf);
  return st;
}
