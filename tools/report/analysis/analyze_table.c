// SPDX-License-Identifier: Apache-2.0
// The collective table of the analysis (analyze.h): rows by (function, size, message-size
// bucket, user tag), fit points by algorithm and protocol for topo-report fit, and the keys under which
// estimate.c learns and answers durations. Called by pass 1 (binary collectives) and pass 2
// (Kineto NCCL kernels, untimed collectives).
#include <stdint.h>
#include <string.h>

#include "analyze_ctx.h"
#include "report_analysis.h"

/* ---- rows and fit points */
static int bucket_of(uint64_t size) { return size ? 63 - __builtin_clzll(size) : -1; }

/* Rows and fit points are found through maps keyed by their fields packed into 64 bits (func
 * < RP_MAX_FUNC, -1 <= bucket < 64, algo < 7, proto < 3): one lookup per collective, however many
 * distinct communicator sizes the input names. */
/* The small number that stands for `tag` in row keys: 0 untagged, 1.. in order of appearance
 * (the 65535th and later distinct tags share the last). 0 out of memory (c->st set). */
static uint32_t tag_index(ctx *c, uint64_t tag) {
  uint32_t at;
  if (!tag) return 0;
  if (rp_map_find(&c->tag_of, tag, &at)) return at;
  if (c->ntags >= 0xffff) return 0xffff;
  if (!rp_map_add(&c->tag_of, tag, ++c->ntags)) {
    c->st = TOPO_ERR_NOMEM;
    return 0;
  }
  return c->ntags;
}

rp_row *an_row_get(ctx *c, int func, int nranks, int bucket, uint64_t tag) {
  rp_report *r = c->r;
  uint64_t key = rp_row_key(func, nranks, bucket, tag_index(c, tag));
  uint32_t at;
  if (rp_map_find(&c->row_of, key, &at)) return r->rows[at];
  if (r->nrows == r->cap_rows) {
    size_t cap = r->cap_rows ? r->cap_rows * 2 : 32;
    rp_row **v = topo_realloc(r->rows, cap * sizeof *v);
    if (!v) return NULL;
    r->rows = v;
    r->cap_rows = cap;
  }
  rp_row *w = topo_calloc(1, sizeof *w);
  if (!w) return NULL;
  w->func = func;
  w->nranks = nranks;
  w->bucket = bucket;
  w->tag = tag;
  w->ch_min = 1 << 30;
  if (tag) r->have_tags = 1;
  if (!rp_map_add(&c->row_of, key, (uint32_t)r->nrows)) {
    topo_free(w);
    return NULL;
  }
  r->rows[r->nrows++] = w;
  return w;
}

static rp_fitpt *fit_get(ctx *c, int func, int algo, int proto, int nranks, int bucket) {
  rp_report *r = c->r;
  uint64_t key = (uint64_t)(uint32_t)nranks << 32 | (uint64_t)func << 16 | (uint64_t)algo << 12 |
                 (uint64_t)proto << 8 | (uint64_t)(bucket + 1);
  uint32_t at;
  if (rp_map_find(&c->fit_of, key, &at)) return r->fit[at];
  if (r->nfit == r->cap_fit) {
    size_t cap = r->cap_fit ? r->cap_fit * 2 : 32;
    rp_fitpt **v = topo_realloc(r->fit, cap * sizeof *v);
    if (!v) return NULL;
    r->fit = v;
    r->cap_fit = cap;
  }
  rp_fitpt *p = topo_calloc(1, sizeof *p);
  if (!p) return NULL;
  p->func = func;
  p->algo = algo;
  p->proto = proto;
  p->nranks = nranks;
  p->bucket = bucket;
  if (!rp_map_add(&c->fit_of, key, (uint32_t)r->nfit)) {
    topo_free(p);
    return NULL;
  }
  r->fit[r->nfit++] = p;
  return p;
}

void an_table_add(ctx *c, const rp_coll *co) {
  int func = co->func < RP_MAX_FUNC ? co->func : RP_MAX_FUNC - 1;
  /* AllGather (2) and ReduceScatter (3) report the per-rank part: without the communicator's
   * size, the nccl-tests size is unknown too */
  int unknown = co->size_unknown || ((func == 2 || func == 3) && co->nranks <= 0);
  uint64_t size = unknown ? 0 : rp_coll_size(func, co->bytes, co->nranks);
  int bucket = unknown ? RP_BUCKET_UNKNOWN : bucket_of(size);
  rp_row *w = an_row_get(c, func, co->nranks, bucket, co->user_tag);
  if (!w) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  w->calls++;
  w->size_sum += size;
  if (co->sym) {
    w->sym++;
    if (!w->variants) snprintf(w->variant, sizeof w->variant, "%s", co->variant);
    if (!w->variants || (w->variants == 1 && strcmp(w->variant, co->variant) != 0)) w->variants++;
  }
  int a = co->algo >= 0 && co->algo < 7 ? co->algo : 7,
      p = co->proto >= 0 && co->proto < 3 ? co->proto : 3;
  w->algo_proto[a][p]++;
  if (co->nchannels > 0) {
    if (co->nchannels < w->ch_min) w->ch_min = co->nchannels;
    if (co->nchannels > w->ch_max) w->ch_max = co->nchannels;
  }
  if (!co->timed) return;
  int64_t d = co->gpu_stop - co->gpu_start;
  w->timed++;
  w->timed_size_sum += size;
  rp_quant_add(&w->time, d);
  if (func <= 4 && a < 7 && p < 3) {
    rp_fitpt *fp = fit_get(c, func, a, p, co->nranks, bucket);
    if (fp) {
      if (!fp->n || size < fp->size_min) fp->size_min = size;
      if (size > fp->size_max) fp->size_max = size;
      if (!fp->n) fp->nchannels = co->nchannels > 0 ? co->nchannels : 0;
      else if (fp->nchannels != (co->nchannels > 0 ? co->nchannels : 0)) fp->nchannels = -1;
      fp->n++;
      fp->size_sum += (double)size;
      rp_quant_add(&fp->time, d);
    }
  }
}

void an_table_xfer(ctx *c, int func, int algo, int proto, uint64_t bytes, int nranks, uint64_t tag,
                   int64_t xfer) {
  if (func >= RP_MAX_FUNC) func = RP_MAX_FUNC - 1;
  uint64_t size = rp_coll_size(func, bytes, nranks);
  int bucket = bucket_of(size);
  rp_row *w = an_row_get(c, func, nranks, bucket, tag);
  if (!w) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  rp_quant_add(&w->xfer, xfer);
  w->xfer_size_sum += size;
  if (func > 4 || algo < 0 || algo >= 7 || proto < 0 || proto >= 3) return;
  rp_fitpt *fp = fit_get(c, func, algo, proto, nranks, bucket);
  if (fp) {
    rp_quant_add(&fp->xfer, xfer);
    fp->xfer_size_sum += (double)size;
  }
}

/* ---- estimates of untimed collectives (estimate.c) */
rp_est_key an_est_key(const rp_coll *co) {
  int func = co->func < RP_MAX_FUNC ? co->func : RP_MAX_FUNC - 1;
  rp_est_key k = {co->nranks,
                  func,
                  bucket_of(rp_coll_size(func, co->bytes, co->nranks)),
                  co->algo,
                  co->proto,
                  co->nchannels,
                  co->src,
                  co->startup != 0};
  return k;
}

void an_est_learn(ctx *c, const rp_coll *co) {
  if (!co->timed) return;
  rp_est_key k = an_est_key(co);
  rp_est_measured(c->est, &k, rp_coll_size(k.func, co->bytes, co->nranks),
                  co->gpu_stop - co->gpu_start);
  if (rp_est_failed(c->est)) c->st = TOPO_ERR_NOMEM;
}

int64_t an_kernel_ns(const ctx *c, const rp_coll *co) {
  if (co->timed) return co->gpu_stop - co->gpu_start;
  rp_est_key k = an_est_key(co);
  rp_estimate e;
  if (rp_est_get(c->est, &k, rp_coll_size(k.func, co->bytes, co->nranks), &e) == RP_EST_UNKNOWN)
    return -1;
  return e.dur;
}
