/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tuner profile: the measured parameters libtopo-tuner.so's cost model runs on, written by
 * topo-calibrate and by `topo-report fit`, read by the tuner at init (TOPO_TUNER_PROFILE) and by
 * topo-tune. Text file, versioned, diff-able; format in docs/profile-format.md.
 *
 * A file holds one or more sections, each keyed by (GPU model, nRanks, nNodes, NCCL version);
 * a zero / empty key field matches anything. A section carries link parameters per link class,
 * protocol parameters, and optionally fitted per-(collective, algorithm, protocol[, channels])
 * latency/bandwidth terms that take precedence over the link model where they were measured.
 *
 * Ownership: a topo_profile owns its terms array; topo_profile_free releases it (NULL-safe).
 * Thread-safety: functions touch only their arguments. Not for hot paths (they allocate).
 */
#ifndef TOPO_PROFILE_H
#define TOPO_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nccl/nccl_common.h"
#include "nccl_vocab.h"
#include "status.h"

/* Version 2 adds `point` lines (measured medians); a section without them is written as version 1. */
#define TOPO_PROFILE_VERSION 2

/* The values a profile holds, one set of limits for the reader and for topo_profile_set_term /
 * topo_profile_add_point alike (what is written can always be read back): times (lat_us,
 * median_us, noise_us; rel_err too) at most TOPO_PROFILE_MAX_US, a median at least
 * TOPO_PROFILE_MIN_US, bandwidths within [TOPO_PROFILE_MIN_BW, TOPO_PROFILE_MAX_BW] GB/s. A
 * measurement outside them is no measurement (a damaged record). */
#define TOPO_PROFILE_MAX_US 1e9
#define TOPO_PROFILE_MIN_US 1e-9
#define TOPO_PROFILE_MIN_BW 1e-9
#define TOPO_PROFILE_MAX_BW 1e9

enum topo_link_class {
  TOPO_LINK_NVLINK = 0,
  TOPO_LINK_PCI = 1,
  TOPO_LINK_NET = 2,
  TOPO_LINK_COUNT
};

typedef struct topo_profile_key {
  char gpu[32];     /* "H200", "H100", "A100", ... ; "" = any */
  int nranks;       /* 0 = any */
  int nnodes;       /* 0 = any */
  int nccl_version; /* NCCL_VERSION_CODE, 0 = any */
} topo_profile_key;

typedef struct topo_profile_link {
  double bw_gbs; /* per-GPU, per-direction bandwidth collectives reach on this class, GB/s */
  double lat_us; /* latency of one step (hop) over this class, us */
} topo_profile_link;

typedef struct topo_profile_proto {
  double bw_eff;    /* fraction of the link bandwidth this protocol reaches (Simple ~0.95) */
  double lat_us;    /* extra latency per step of this protocol, us */
  double ch_bw_gbs; /* bandwidth cap of one channel with this protocol, GB/s (0 = none) */
} topo_profile_proto;

/* Fitted: time_us = lat_us + nBytes / (bw_gbs * 1e3), nBytes as the tuner sees it (AllGather /
 * ReduceScatter: the full gathered buffer). Valid for min_bytes..max_bytes (measured range). */
typedef struct topo_profile_term {
  int coll;      /* ncclFunc_t 0..4 */
  int algo;      /* NCCL_ALGO_* */
  int proto;     /* NCCL_PROTO_* */
  int nchannels; /* 0 = NCCL's own channel count */
  double lat_us;
  double bw_gbs;
  uint64_t min_bytes, max_bytes;
  double rel_err; /* rms relative error of the fit over its points */
  int npoints;    /* measurements behind it */
} topo_profile_term;

/* One measured size of one setting: the median of its repeats and the noise there (half the spread
 * of its repeats, or an A/A figure), us. The tuner's decisions are made on these alone. */
typedef struct topo_profile_point {
  int coll, algo, proto;
  int nchannels;    /* 0 = NCCL's own channel count */
  uint64_t bytes;   /* as the tuner sees it (see topo_profile_term) */
  double median_us; /* > 0 */
  double noise_us;  /* >= 0 */
  int is_default;   /* 1: NCCL's default ran this setting at this size, 0: it did not,
                          -1: not known (written without default=) */
} topo_profile_point;

typedef struct topo_profile {
  topo_profile_key key;
  topo_profile_link link[TOPO_LINK_COUNT];
  topo_profile_proto proto[NCCL_NUM_PROTOCOLS];
  double launch_us; /* fixed cost of one collective launch on the GPU, us */
  int max_channels; /* channels NCCL runs for collectives on this machine (0 = unknown) */
  int nvls;         /* NVLS available: 1 yes, 0 no, -1 unknown */
  int nterms, cap_terms;
  topo_profile_term *terms;
  char source[256]; /* "builtin:H200" or "path:section" - for logs */
  int npoints, cap_points;
  topo_profile_point *points; /* sorted by (coll, algo, proto, nchannels, bytes) */
} topo_profile;

/* Built-in defaults for a GPU model ("H200", "H100", "A100"; NULL or unknown -> H200 with a
 * warning from the caller's side), or "generic": NCCL's own figures for a GPU none of the models
 * describes (nothing measured; docs/profile-format.md). Returns TOPO_ERR_INVALID for an unknown
 * model (and still fills H200 values). */
topo_status topo_profile_builtin(const char *gpu, topo_profile *out);

/* Built-in GPU models, for CLIs: "H200", "H100", "A100"; NULL past the end. */
const char *topo_profile_builtin_name(int i);

/* Load the section of `path` that best matches `want` (exact field matches beat wildcards).
 * Malformed lines give one warning each naming file:line and the fault, and are skipped.
 * TOPO_ERR_IO if unreadable, TOPO_ERR_PARSE if no usable section: `out` then holds the built-in
 * defaults for want->gpu. */
topo_status topo_profile_load(const char *path, const topo_profile_key *want, topo_profile *out);

/* As topo_profile_load, from `len` bytes of `text` (need not be NUL-terminated; any byte sequence
 * is safe). `name` names the source in warnings ("name:line: fault"; NULL = "<profile>").
 * *nbad (may be NULL) receives the number of malformed lines skipped. Same status and fallback as
 * topo_profile_load (TOPO_ERR_NOMEM: out holds the defaults, without terms). */
topo_status topo_profile_parse(const char *text, size_t len, const char *name,
                               const topo_profile_key *want, topo_profile *out, int *nbad);

/* 1 when text could be a profile: its first entry (blank and '#' comment lines skipped) is a
 * `topo-profile` or a `section` line. Anything else (another program's file, binary data) is
 * refused by topo_profile_parse with one warning, never one per line. */
int topo_profile_sniff(const char *text, size_t len);

/* Score of section key `have` for `want`: -1 when it does not match, else higher is better
 * (gpu 8, nnodes 4, nranks 2, nccl 1 for each field given exactly on both sides). */
int topo_profile_key_score(const topo_profile_key *have, const topo_profile_key *want);

/* Append one section (as topo_profile_load reads it back, exactly): a `topo-profile 1` line, the
 * section line and every field; numbers in the shortest form that reads back bit-exact. */
topo_status topo_profile_write(FILE *f, const topo_profile *p);

/* Add a fitted term, or replace the one with the same (coll, algo, proto, nchannels) AND the
 * same [min_bytes, max_bytes]. One key may hold several terms (a piecewise fit) whose ranges are
 * disjoint: a term overlapping another of its key with a different range is refused
 * (TOPO_ERR_INVALID), as is an invalid one (a value outside the limits above). Terms stay sorted by (coll, algo, proto, nchannels,
 * min_bytes). */
topo_status topo_profile_set_term(topo_profile *p, const topo_profile_term *t);
/* Every field of a term in its domain (the limits above): what topo_profile_set_term takes. */
int topo_profile_term_valid(const topo_profile_term *t);
/* The term of the key with the lowest min_bytes (the only one for a single-line fit); NULL when
 * the key has none. O(log nterms). */
const topo_profile_term *topo_profile_find_term(const topo_profile *p, int coll, int algo,
                                                int proto, int nchannels);
/* The term of the key whose [min_bytes, max_bytes] covers `bytes`; NULL when none does.
 * O(log nterms), no allocation. */
const topo_profile_term *topo_profile_find_term_at(const topo_profile *p, int coll, int algo,
                                                   int proto, int nchannels, uint64_t bytes);
void topo_profile_free(topo_profile *p);

/* Add a measured point, or replace the one with the same (coll, algo, proto, nchannels, bytes).
 * TOPO_ERR_INVALID for an invalid one (a median or noise outside the limits above, a field out
 * of range),
 * TOPO_ERR_NOMEM. Points stay sorted by (coll, algo, proto, nchannels, bytes). */
topo_status topo_profile_add_point(topo_profile *p, const topo_profile_point *pt);
/* The points of one setting, ascending in bytes: *n of them from the returned pointer (NULL, 0
 * when none). O(log npoints). */
const topo_profile_point *topo_profile_find_points(const topo_profile *p, int coll, int algo,
                                                   int proto, int nchannels, int *n);
/* Median and noise (us) of a setting at `bytes` from its points pt[0..n) (ascending): linear in
 * bytes between the measured sizes bracketing it, the point itself at a measured size. 0 outside
 * the measured range (nothing is invented there). What the tuner's switches are decided on
 * (tuner-plugin/table.c) and topo-tune times a setting by. */
int topo_profile_points_at(const topo_profile_point *pt, int n, double bytes, double *median,
                           double *noise);

/* Least-squares fit of time_us = lat + bytes/(bw*1e3) over n points (n >= 2, weights relative:
 * minimises the relative error). Fills lat_us, bw_gbs, min/max_bytes, rel_err, npoints.
 * TOPO_ERR_INVALID when the points cannot give a positive bandwidth. */
topo_status topo_profile_fit_term(const uint64_t *bytes, const double *time_us, int n,
                                  topo_profile_term *term);

/* Bandwidth given to a segment whose times do not grow with size (a constant fit), GB/s. */
#define TOPO_PROFILE_FLAT_BW_GBS 1e6
/* Relative error each piece of a piecewise fit keeps within, by default (3 %). */
#define TOPO_PROFILE_PIECE_ERR 0.03

/* Piecewise fit of a sweep (any order; equal sizes stay in one piece): the fewest contiguous
 * pieces, found greedily from the smallest size, each fitted (topo_profile_fit_term, or a
 * constant where the times do not grow) with every point within max_rel_err; a piece always
 * holds two sizes at least, and the last of max_terms takes whatever remains. Ranges meet at the
 * geometric midpoints between measured sizes, so the pieces cover [smallest, largest] with no
 * gap. Fills out[0..k) (lat_us, bw_gbs, min/max_bytes, rel_err, npoints; the key fields are the
 * caller's) and returns k >= 1; 0 when the points give no fit (fewer than two sizes, a time not
 * positive), -1 on allocation failure. */
int topo_profile_fit_piecewise(const uint64_t *bytes, const double *time_us, int n,
                               double max_rel_err, topo_profile_term *out, int max_terms);

#endif
