/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What to try next, from evidence (docs/reading-the-report.md, Next steps): each step is tied to a
 * figure the report measured and to the command that verifies it, and none is drawn from a figure
 * that is unknown. Also, where the cross-rank skew cannot be computed, why, and for Kineto-only
 * input the one cross-rank comparison it allows (time inside NCCL kernels per step). The
 * renderers (render_text.c, render_json.c, render_html.c) call the rp_render_next_* functions;
 * the lists are computed from rp_report on each call. Single-threaded.
 */
#ifndef TOPO_REPORT_NEXT_H
#define TOPO_REPORT_NEXT_H

#include <stdio.h>

#include "report.h"

/* Thresholds of the checks (docs/reading-the-report.md, Next steps). */
#define RP_NEXT_EXPOSED_MIN    0.05    /* exposed communication >= 5 % of the span */
#define RP_NEXT_DELAY_MIN      0.02    /* delay a rank caused >= 2 % of its span */
#define RP_NEXT_IDLE_MIN       0.10    /* a rank's GPU idle >= 10 % of its covered time */
#define RP_NEXT_BUSBW_FAR      0.60    /* busbw below 60 % of the reference line ... */
#define RP_NEXT_BUSBW_MIN_SIZE 1048576 /* ... at sizes of 1 MiB and more (smaller: latency) */

enum rp_next_kind {
  RP_NEXT_EXPOSED = 0, /* exposed communication, and where it sits in the step */
  RP_NEXT_BUSBW,       /* busbw far from the reference line at a size */
  RP_NEXT_WAIT,        /* busbw far from the line only because of waiting for a late rank */
  RP_NEXT_STRAGGLER,   /* a rank the others wait for */
  RP_NEXT_IDLE,        /* a rank's GPU idle */
  RP_NEXT_KINDS
};

typedef struct rp_next {
  int kind;           /* enum rp_next_kind */
  int rank;           /* the rank it is about (world rank), -1 none */
  const char *figure; /* the measured figure's name (JSON key) */
  double value;       /* its value (ns, a share, GB/s: `unit` says) */
  const char *unit;   /* "ns", "share", "GB/s" */
  char what[768];     /* what was measured, in words */
  char todo[512];     /* what to try */
  char verify[320];   /* the command that verifies it */
} rp_next;

/* The next steps of `r` (malloc'ed, *n of them; NULL and 0 when there are none or out of memory)
 * and, in `passed` (len bytes), the checks that found nothing to do, with their figures. */
rp_next *rp_next_list(const rp_report *r, size_t *n, char *passed, size_t len);

/* Why there is no start-skew table ("" when there is one, or nothing to compare: one rank). */
const char *rp_skew_unknown_reason(const rp_report *r);

/* Kineto-only input: each rank's mean time inside NCCL kernels per step, over the steps every
 * rank has. A rank whose kernels start last waits least inside them: the rank with the least time
 * is the likely straggler. ok = 0 when it cannot be computed (fewer than 2 ranks with common
 * steps). */
typedef struct rp_comm_hint {
  int ok;
  size_t steps;      /* steps every compared rank has */
  int64_t *per_rank; /* r->nranks entries: mean ns per step; -1 for a rank not compared */
  int likely;        /* index in r->ranks of the rank with the least time */
  int64_t gap;       /* median of the others' means - its mean, ns */
} rp_comm_hint;
void rp_comm_hint_get(const rp_report *r, rp_comm_hint *h);
void rp_comm_hint_free(rp_comm_hint *h);

/* The sections in each format: the hint under a missing skew table, and the next steps. */
void rp_kineto_straggler_hint(const rp_report *r, FILE *f, int width);
void rp_render_next_text(const rp_report *r, FILE *f, int width);
void rp_render_next_json(const rp_report *r, FILE *f); /* ,"skew_unknown_reason":...,"next_steps" */
void rp_render_next_html(const rp_report *r, FILE *f);

#endif
