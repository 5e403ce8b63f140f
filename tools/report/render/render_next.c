// SPDX-License-Identifier: Apache-2.0
// What to try next, from evidence (next.h; docs/reading-the-report.md, Next steps): checks of the
// measured figures (exposed communication and where it sits in the step, busbw against the
// reference line, a straggler, a rank's idle GPU), each turned into a step with the figure behind
// it and the command that verifies it; why the skew table is missing; for Kineto-only input the
// time inside NCCL kernels per step, compared across ranks. Text, JSON and HTML. Called by the
// renderers.
#include "next.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "textout.h"
#include "report_analysis.h"
#include "report_render.h"

static void html_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else fputc(*s, f);
  }
}

/* ---- why no skew, and the Kineto-only comparison */
const char *rp_skew_unknown_reason(const rp_report *r) {
  for (int f = 0; f < RP_MAX_FUNC; f++)
    if (r->skew[f].n) return "";
  if (r->nranks < 2) return "";
  if (!r->have_trace)
    return "Kineto traces carry no NCCL sequence number, so one collective cannot be matched "
           "across ranks (the traces of libtopo-profiler.so carry it)";
  for (size_t i = 0; i < r->ncomms; i++)
    if (r->comms[i].ranks_seen >= 2)
      return "no collective was recorded on two ranks of one communicator (their traces do not "
             "overlap in time or in sequence numbers)";
  return "no communicator has the traces of two or more of its ranks (give every rank's trace)";
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* 1 when sorted v[0..n) holds x. */
static int has_value(const uint64_t *v, size_t n, uint64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (v[m] < x) lo = m + 1;
    else hi = m;
  }
  return lo < n && v[lo] == x;
}

void rp_comm_hint_get(const rp_report *r, rp_comm_hint *h) {
  memset(h, 0, sizeof *h);
  h->likely = -1;
  if (r->nranks < 2 || r->have_trace) return;
  int n = r->nranks, base = -1, cand = 0;
  uint64_t **vals = topo_calloc((size_t)n, sizeof *vals);
  h->per_rank = topo_malloc((size_t)n * sizeof *h->per_rank);
  if (!vals || !h->per_rank) goto out;
  for (int i = 0; i < n; i++) {
    const rp_rank *k = &r->ranks[i];
    h->per_rank[i] = -1;
    if (!k->kineto || !k->nsteps) continue;
    if (!(vals[i] = topo_malloc(k->nsteps * sizeof **vals))) goto out;
    for (size_t j = 0; j < k->nsteps; j++) vals[i][j] = k->steps[j].value;
    qsort(vals[i], k->nsteps, sizeof **vals, cmp_u64);
    cand++;
    if (base < 0 || k->nsteps < r->ranks[base].nsteps) base = i;
  }
  if (cand < 2) goto out;
  /* the steps every compared rank has, then each rank's mean comm over them */
  const rp_rank *b = &r->ranks[base];
  for (int i = 0; i < n; i++) {
    const rp_rank *k = &r->ranks[i];
    if (!vals[i]) continue;
    int64_t sum = 0;
    size_t m = 0;
    for (size_t j = 0; j < k->nsteps; j++) {
      uint64_t v = k->steps[j].value;
      int common = has_value(vals[base], b->nsteps, v);
      for (int o = 0; o < n && common; o++)
        if (vals[o]) common = has_value(vals[o], r->ranks[o].nsteps, v);
      if (!common) continue;
      sum = rp_add_sat(sum, k->steps[j].comm);
      m++;
    }
    if (m) h->per_rank[i] = sum / (int64_t)m;
    if (m > h->steps) h->steps = m;
  }
  int64_t *others = topo_malloc((size_t)n * sizeof *others);
  if (!others) goto out;
  for (int i = 0; i < n; i++)
    if (h->per_rank[i] >= 0 && (h->likely < 0 || h->per_rank[i] < h->per_rank[h->likely]))
      h->likely = i;
  size_t no = 0;
  for (int i = 0; i < n; i++)
    if (i != h->likely && h->per_rank[i] >= 0) others[no++] = h->per_rank[i];
  if (h->likely >= 0 && no && h->steps) {
    qsort(others, no, sizeof *others, cmp_i64);
    h->gap = others[(no - 1) / 2] - h->per_rank[h->likely];
    h->ok = 1;
  }
  topo_free(others);
out:
  if (vals)
    for (int i = 0; i < n; i++) topo_free(vals[i]);
  topo_free(vals);
  if (!h->ok) {
    topo_free(h->per_rank);
    h->per_rank = NULL;
  }
}

void rp_comm_hint_free(rp_comm_hint *h) {
  topo_free(h->per_rank);
  h->per_rank = NULL;
}

void rp_kineto_straggler_hint(const rp_report *r, FILE *f, int width) {
  rp_comm_hint h;
  rp_comm_hint_get(r, &h);
  if (!h.ok) return;
  char a[32], line[1024];
  size_t at = 0;
  for (int i = 0; i < r->nranks && at < sizeof line; i++) {
    if (h.per_rank[i] < 0) continue;
    rp_fmt_ns(h.per_rank[i], a, sizeof a);
    at += (size_t)snprintf(line + at, sizeof line - at, "%srank %d %s", at ? ", " : "",
                           r->ranks[i].world_rank, a);
  }
  rp_note(f, width, 2,
          "time inside NCCL kernels per step (mean over the %zu steps every rank has): %s", h.steps,
          line);
  rp_fmt_ns(h.gap, a, sizeof a);
  rp_note(f, width, 2,
          "the kernels of the ranks that start first wait inside for the last one, so the rank "
          "with the least time inside is the likely straggler: rank %d, %s per step less than the "
          "median of the others. An inference from Kineto alone, not a measured skew: the traces "
          "of libtopo-profiler.so give the joined skew and the delay each rank causes.",
          r->ranks[h.likely].world_rank, a);
  rp_comm_hint_free(&h);
}

/* ---- the checks */
/* 1 when [a, b) lies inside one of rank k's compute-coverage windows. */
static int covered(const rp_rank *k, int64_t a, int64_t b) {
  if (k->cover_whole) return 1;
  for (size_t i = 0; i < k->ncover; i++)
    if (k->cover[2 * i] <= a && b <= k->cover[2 * i + 1]) return 1;
  return 0;
}

static int cmp_iv_start(const void *a, const void *b) {
  const rp_interval *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* Intervals of class `cls` (communication: of the origin the rank's unions use) clipped to
 * [a, b), merged into sorted disjoint pairs in out (2 x n slots); returns the pairs. */
static size_t union_of(const rp_rank *k, rp_interval *tmp, int cls, int64_t a, int64_t b,
                       int64_t *out) {
  size_t n = 0, m = 0;
  for (size_t i = 0; i < k->ntimeline; i++) {
    rp_interval iv = k->timeline[i];
    if (iv.cls != cls) continue;
    if (cls == RP_COMM && (iv.origin == RP_FROM_KERNEL) != (k->comm_from_kernels != 0)) continue;
    if (iv.start < a) iv.start = a;
    if (iv.stop > b) iv.stop = b;
    if (iv.stop > iv.start) tmp[n++] = iv;
  }
  qsort(tmp, n, sizeof *tmp, cmp_iv_start);
  for (size_t i = 0; i < n; i++) {
    if (m && tmp[i].start <= out[2 * m - 1]) {
      if (tmp[i].stop > out[2 * m - 1]) out[2 * m - 1] = tmp[i].stop;
      continue;
    }
    out[2 * m] = tmp[i].start;
    out[2 * m + 1] = tmp[i].stop;
    m++;
  }
  return m;
}

/* Exposed communication (communication no compute kernel runs beside) in each rank's step that the
 * timeline holds, split by where it sits: [0] before the step's first compute kernel, [1] between
 * compute kernels, [2] after the last. Over the ranks whose compute is recorded there; returns
 * how many, and the step number in *step. */
static int exposed_position(const rp_report *r, int64_t pos[3], uint64_t *step) {
  int ranks = 0;
  pos[0] = pos[1] = pos[2] = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    const rp_step *st = NULL;
    for (size_t j = 0; j < k->nsteps && !st; j++)
      if (k->steps[j].start >= r->window_from && k->steps[j].stop <= r->window_to)
        st = &k->steps[j];
    if (!st || !k->ntimeline || !covered(k, st->start, st->stop)) continue;
    rp_interval *tmp = topo_malloc(k->ntimeline * sizeof *tmp);
    int64_t *cu = topo_malloc(2 * k->ntimeline * sizeof *cu),
            *co = topo_malloc(2 * k->ntimeline * sizeof *co);
    if (tmp && cu && co) {
      size_t nc = union_of(k, tmp, RP_COMPUTE, st->start, st->stop, cu);
      size_t nm = union_of(k, tmp, RP_COMM, st->start, st->stop, co);
      if (nc && nm) {
        int64_t first = cu[0], last = cu[2 * nc - 1];
        size_t c = 0;
        for (size_t m = 0; m < nm; m++) {
          int64_t a = co[2 * m], b = co[2 * m + 1];
          while (a < b) { /* the pieces of [a, b) outside compute */
            while (c < nc && cu[2 * c + 1] <= a) c++;
            int64_t e = c < nc && cu[2 * c] < b ? cu[2 * c] : b;
            if (e > a) {
              int where = e <= first ? 0 : a >= last ? 2 : 1;
              pos[where] += e - a;
            }
            a = c < nc && cu[2 * c] < b ? cu[2 * c + 1] : b;
          }
        }
        ranks++;
        *step = st->value;
      }
    }
    topo_free(tmp), topo_free(cu), topo_free(co);
  }
  return ranks;
}

static rp_next *add(rp_next **v, size_t *n, size_t *cap) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 8;
    rp_next *w = topo_realloc(*v, c * sizeof *w);
    if (!w) return NULL;
    *v = w;
    *cap = c;
  }
  rp_next *x = &(*v)[(*n)++];
  memset(x, 0, sizeof *x);
  x->rank = -1;
  return x;
}

static const char verify_diff[] =
    "topo-report diff BEFORE AFTER (traces of the job before and after the change)";

/* Exposed communication over the span and, from the step the timeline holds, where it sits. */
static void check_exposed(const rp_report *r, rp_next **v, size_t *n, size_t *cap, char *passed,
                          size_t len) {
  rp_derived o;
  rp_derive_overall(r, &o);
  int all = o.exposed_all_known;
  if (!all && !o.known) return;
  double share = all ? o.exposed_all_share : o.exposed_share;
  int64_t ns = all ? o.exposed_all : o.exposed;
  char a[32];
  rp_fmt_ns(ns, a, sizeof a);
  if (share < RP_NEXT_EXPOSED_MIN) {
    size_t at = strlen(passed);
    snprintf(passed + at, len - at, "%sexposed communication %.1f%% of the %s (< %.0f%%)",
             at ? "; " : "", share * 100, all ? "span" : "covered time", RP_NEXT_EXPOSED_MIN * 100);
    return;
  }
  rp_next *x = add(v, n, cap);
  if (!x) return;
  x->kind = RP_NEXT_EXPOSED;
  x->figure = all ? "exposed_all_share" : "exposed_share";
  x->value = share;
  x->unit = "share";
  snprintf(x->what, sizeof x->what,
           "exposed communication is %.1f%% of the %s (%s over %d rank%s%s)", share * 100,
           all ? "GPU span" : "time compute was recorded", a,
           all ? o.ranks_exposed_all : o.ranks_known,
           (all ? o.ranks_exposed_all : o.ranks_known) == 1 ? "" : "s",
           all && o.exposed_all_estimated ? ", part estimated" : "");
  int64_t pos[3];
  uint64_t step = 0;
  int pr = exposed_position(r, pos, &step);
  int64_t tot = pos[0] + pos[1] + pos[2];
  if (pr && tot > 0) {
    int w = pos[2] >= pos[0] && pos[2] >= pos[1] ? 2 : pos[0] >= pos[1] ? 0 : 1;
    size_t at = strlen(x->what);
    snprintf(x->what + at, sizeof x->what - at,
             "; in step %" PRIu64 " (%d rank%s) %.0f%% of it sits %s", step, pr, pr == 1 ? "" : "s",
             100.0 * (double)pos[w] / (double)tot,
             w == 2   ? "after the step's last compute kernel"
             : w == 0 ? "before the step's first compute kernel"
                      : "between compute kernels");
    snprintf(x->todo, sizeof x->todo, "%s",
             w == 2 ? "the last gradient buckets are reduced after the backward pass: smaller "
                      "buckets start them earlier (DDP bucket_cap_mb, FSDP/ZeRO reduce bucket "
                      "size), or overlap them with the optimizer step"
             : w == 0
                 ? "the step waits for a collective before its first kernel (parameters "
                   "gathered on demand): prefetch it (FSDP forward_prefetch / backward_prefetch, "
                   "ZeRO prefetch bucket size)"
                 : "compute waits for collectives in mid-step (gathers issued late, buckets "
                   "ready out of order): prefetch earlier or change the bucket size");
  } else {
    snprintf(x->todo, sizeof x->todo,
             "overlap more of it with compute: the bucket size (DDP bucket_cap_mb, FSDP/ZeRO "
             "bucket sizes) or prefetching (FSDP forward/backward prefetch); the HTML timeline "
             "shows where it sits in a step");
  }
  /* ranks waiting inside their kernels for a late rank count as exposed: that part goes with
   * the straggler, not with the bucket size */
  int64_t wait = 0;
  for (int i = 0; i < r->nranks; i++) wait = rp_add_sat(wait, r->ranks[i].wait_total);
  if (all && !r->align_warn && wait > 0 && ns > 0) {
    char w[32], both[2 * sizeof x->todo];
    rp_fmt_ns(wait > ns ? ns : wait, w, sizeof w);
    snprintf(both, sizeof both,
             "up to %s of it (%.0f%%) is ranks waiting inside their kernels for a late rank (time "
             "waiting): that part goes with the straggler; for the rest: %s",
             w, 100.0 * (double)(wait > ns ? ns : wait) / (double)ns, x->todo);
    size_t k = strlen(both) < sizeof x->todo ? strlen(both) : sizeof x->todo - 1;
    memcpy(x->todo, both, k);
    x->todo[k] = 0;
  }
  snprintf(x->verify, sizeof x->verify, "%s: exposed (all) per rank and step", verify_diff);
}

/* busbw against the reference line at sizes where bandwidth, not latency, decides. */
static void check_busbw(const rp_report *r, rp_next **v, size_t *n, size_t *cap, char *passed,
                        size_t len) {
  if (r->ref_busbw <= 0) return;
  const rp_row *worst[RP_MAX_FUNC] = {0};
  double ratio[RP_MAX_FUNC];
  int checked = 0;
  for (size_t i = 0; i < r->nrows; i++) {
    const rp_row *w = r->rows[i];
    if (!w->timed || !w->timed_size_sum || w->bucket < 0 ||
        ((uint64_t)1 << w->bucket) < RP_NEXT_BUSBW_MIN_SIZE || w->func < 0 ||
        w->func >= RP_MAX_FUNC)
      continue;
    checked++;
    double q = rp_row_busbw(w) / r->ref_busbw;
    if (!worst[w->func] || q < ratio[w->func]) worst[w->func] = w, ratio[w->func] = q;
  }
  int found = 0;
  for (int fn = 0; fn < RP_MAX_FUNC; fn++) {
    const rp_row *w = worst[fn];
    if (!w || ratio[fn] >= RP_NEXT_BUSBW_FAR) continue;
    found = 1;
    rp_next *x = add(v, n, cap);
    if (!x) return;
    char size[32];
    rp_bucket_label(w->bucket, size, sizeof size);
    double xf = w->xfer.n ? rp_row_busbw_xfer(w) : 0;
    int waiting = xf >= RP_NEXT_BUSBW_FAR * r->ref_busbw;
    x->kind = waiting ? RP_NEXT_WAIT : RP_NEXT_BUSBW;
    x->figure = waiting ? "busbw_after_last_start_gbs" : "busbw_gbs";
    x->value = waiting ? xf : rp_row_busbw(w);
    x->unit = "GB/s";
    int al, pr;
    double share;
    rp_row_top_choice(w, &al, &pr, &share);
    char after[64] = "";
    if (w->xfer.n) snprintf(after, sizeof after, ", %.1f GB/s after the last rank's start", xf);
    snprintf(x->what, sizeof x->what,
             "%s (%d ranks, %s): busbw %.1f GB/s from the whole kernel time%s, against %.1f GB/s "
             "(%s)",
             rp_func_name(w->func), w->nranks, size, rp_row_busbw(w), after, r->ref_busbw,
             r->ref_label);
    if (waiting) {
      snprintf(x->todo, sizeof x->todo,
               "the transfer itself runs near the line: the gap is time spent waiting for the "
               "last rank to start (the straggler above); nothing to gain from the algorithm");
      snprintf(x->verify, sizeof x->verify, "%s: busbw and busbw after last start of %s at %s",
               verify_diff, rp_func_name(w->func), size);
    } else {
      char ch[32] = "channels unknown", coll[32];
      if (w->ch_max)
        snprintf(ch, sizeof ch, w->ch_min == w->ch_max ? "%d channels" : "%d-%d channels",
                 w->ch_min, w->ch_max);
      snprintf(coll, sizeof coll, "%s", rp_func_name(w->func));
      for (char *c = coll; *c; c++)
        if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
      snprintf(x->todo, sizeof x->todo,
               "the transfer is slow at this size (%s/%s, %s): measure this machine "
               "(topo-calibrate -o machine.profile) and let the tuner choose from it "
               "(NCCL_TUNER_PLUGIN=libtopo-tuner.so TOPO_TUNER_PROFILE=machine.profile)",
               rp_algo_name(al), rp_proto_name(pr), ch);
      snprintf(x->verify, sizeof x->verify,
               "topo-tune --profile machine.profile --nranks %d --coll %s (the switches it makes "
               "and their evidence), then %s",
               w->nranks, coll, verify_diff);
    }
  }
  if (checked && !found) {
    size_t at = strlen(passed);
    snprintf(passed + at, len - at, "%sbusbw within %.0f%% of the %.1f GB/s line at sizes >= 1 MiB",
             at ? "; " : "", RP_NEXT_BUSBW_FAR * 100, r->ref_busbw);
  }
}

/* The rank the others wait for most, when its delay is resolved by the clock alignment. */
static void check_straggler(const rp_report *r, rp_next **v, size_t *n, size_t *cap, char *passed,
                            size_t len) {
  int best = -1, joined = 0;
  for (int i = 0; i < r->nranks; i++) {
    joined |= r->ranks[i].joined > 0;
    if (r->ranks[i].late_total > 0 &&
        (best < 0 || r->ranks[i].late_total > r->ranks[best].late_total))
      best = i;
  }
  if (!joined || r->align_warn) return; /* no join, or skew below the alignment error */
  rp_derived d;
  if (best >= 0) rp_derive_rank(&r->ranks[best], &d);
  double share = best >= 0 && d.span > 0 ? (double)r->ranks[best].late_total / (double)d.span : 0;
  if (best < 0 || share < RP_NEXT_DELAY_MIN) {
    size_t at = strlen(passed);
    snprintf(passed + at, len - at, "%sno rank delays the others by %.0f%% of its span or more",
             at ? "; " : "", RP_NEXT_DELAY_MIN * 100);
    return;
  }
  const rp_rank *k = &r->ranks[best];
  rp_next *x = add(v, n, cap);
  if (!x) return;
  char a[32], c[160] = "";
  rp_fmt_ns(k->late_total, a, sizeof a);
  x->kind = RP_NEXT_STRAGGLER;
  x->rank = k->world_rank;
  x->figure = "delay_caused_ns";
  x->value = (double)k->late_total;
  x->unit = "ns";
  uint64_t pairs = 0;
  for (size_t i = 0; i < r->ncomms; i++) pairs += r->comms[i].p2p_pairs;
  snprintf(x->what, sizeof x->what,
           "rank %d started %" PRIu64 " of its %" PRIu64
           " joined collectives%s last; the others waited %s for it (%.1f%% of its span; judged "
           "by %s starts)",
           k->world_rank, k->last_count, k->joined, pairs ? " and Send/Recv pairs" : "", a,
           share * 100, k->joined_gpu == k->joined ? "GPU" : "GPU and CPU enqueue");
  if (d.known) { /* its compute beside the others' median, where all are known */
    int64_t *o = topo_malloc((size_t)r->nranks * sizeof *o);
    size_t no = 0;
    for (int i = 0; o && i < r->nranks; i++) {
      rp_derived e;
      if (i == best) continue;
      rp_derive_rank(&r->ranks[i], &e);
      if (e.known) o[no++] = e.compute;
    }
    if (no) {
      qsort(o, no, sizeof *o, cmp_i64);
      char m[32], own[32];
      rp_fmt_ns(o[(no - 1) / 2], m, sizeof m);
      rp_fmt_ns(d.compute, own, sizeof own);
      snprintf(c, sizeof c, "; its GPU compute is %s against a median of %s on the others", own, m);
    }
    topo_free(o);
  }
  snprintf(x->todo, sizeof x->todo,
           "find what delays rank %d before its collectives: host-side work (data loading, "
           "logging, checkpoints), a slower GPU or clock, CPU contention or affinity%s",
           k->world_rank, c);
  snprintf(x->verify, sizeof x->verify, "%s: delay caused and time waiting per rank", verify_diff);
}

/* The rank whose GPU is idle longest, over the time its compute is recorded. */
static void check_idle(const rp_report *r, rp_next **v, size_t *n, size_t *cap, char *passed,
                       size_t len) {
  int best = -1, known = 0;
  double worst = 0;
  for (int i = 0; i < r->nranks; i++) {
    rp_derived d;
    rp_derive_rank(&r->ranks[i], &d);
    if (!d.known || d.covered <= 0) continue;
    known = 1;
    if (d.idle_share > worst) worst = d.idle_share, best = i;
  }
  if (!known) return;
  if (worst < RP_NEXT_IDLE_MIN) {
    size_t at = strlen(passed);
    snprintf(passed + at, len - at, "%sGPU idle at most %.1f%% of a rank's covered time (< %.0f%%)",
             at ? "; " : "", worst * 100, RP_NEXT_IDLE_MIN * 100);
    return;
  }
  rp_derived d;
  rp_derive_rank(&r->ranks[best], &d);
  rp_next *x = add(v, n, cap);
  if (!x) return;
  char a[32];
  rp_fmt_ns(d.idle, a, sizeof a);
  x->kind = RP_NEXT_IDLE;
  x->rank = r->ranks[best].world_rank;
  x->figure = "idle_share";
  x->value = d.idle_share;
  x->unit = "share";
  snprintf(x->what, sizeof x->what,
           "rank %d's GPU is idle %.1f%% of the time its compute is recorded (%s: no kernel, copy "
           "or collective running)",
           r->ranks[best].world_rank, d.idle_share * 100, a);
  snprintf(x->todo, sizeof x->todo,
           "the GPU waits for the host: the input pipeline, Python overhead, synchronisations "
           "(.item(), cudaStreamSynchronize); CUDA graphs or more data-loader workers");
  snprintf(x->verify, sizeof x->verify,
           "a torch.profiler trace of a few steps: topo-report TRACE.pt.trace.json (idle time per "
           "stream: host wait against kernel wait), then %s: idle per rank",
           verify_diff);
}

rp_next *rp_next_list(const rp_report *r, size_t *n, char *passed, size_t len) {
  rp_next *v = NULL;
  size_t cap = 0;
  *n = 0;
  passed[0] = 0;
  check_exposed(r, &v, n, &cap, passed, len);
  check_straggler(r, &v, n, &cap, passed, len);
  check_busbw(r, &v, n, &cap, passed, len);
  check_idle(r, &v, n, &cap, passed, len);
  return v;
}

/* ---- the sections */
void rp_render_next_text(const rp_report *r, FILE *f, int width) {
  size_t n;
  char passed[640];
  rp_next *v = rp_next_list(r, &n, passed, sizeof passed);
  if (!n && !passed[0]) {
    topo_free(v);
    return;
  }
  fprintf(f, "\n");
  rp_note(f, width, 0, "Next steps (from the figures above; docs/reading-the-report.md)");
  for (size_t i = 0; i < n; i++) {
    rp_note(f, width, 2, "%zu. %s", i + 1, v[i].what);
    rp_note(f, width, 5, "try: %s", v[i].todo);
    rp_note(f, width, 5, "verify: %s", v[i].verify);
  }
  if (passed[0]) rp_note(f, width, 2, "checked, nothing to do: %s", passed);
  if (!r->ref_busbw && r->nrows)
    rp_note(f, width, 2,
            "busbw not checked: no reference line (give --profile with a calibrated profile, or "
            "--gpu H200|H100|A100 for the built-in link peak)");
  topo_free(v);
}

void rp_render_next_json(const rp_report *r, FILE *f) {
  const char *why = rp_skew_unknown_reason(r);
  fprintf(f, ",\n\"skew_unknown_reason\":");
  if (*why) rp_json_string(f, why);
  else fprintf(f, "null");
  rp_comm_hint h;
  rp_comm_hint_get(r, &h);
  fprintf(f, ",\"kineto_comm_per_step\":");
  if (h.ok) {
    fprintf(f, "{\"steps\":%zu,\"likely_straggler\":%d,\"gap_ns\":%" PRId64 ",\"ranks\":[", h.steps,
            r->ranks[h.likely].world_rank, h.gap);
    int first = 1;
    for (int i = 0; i < r->nranks; i++) {
      if (h.per_rank[i] < 0) continue;
      fprintf(f, "%s{\"rank\":%d,\"comm_per_step_ns\":%" PRId64 "}", first ? "" : ",",
              r->ranks[i].world_rank, h.per_rank[i]);
      first = 0;
    }
    fprintf(f, "]}");
  } else {
    fprintf(f, "null");
  }
  rp_comm_hint_free(&h);
  size_t n;
  char passed[640];
  rp_next *v = rp_next_list(r, &n, passed, sizeof passed);
  static const char *const kinds[] = {"exposed", "busbw", "busbw_waiting", "straggler", "idle"};
  fprintf(f, ",\n\"next_steps\":[");
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "%s{\"kind\":\"%s\",\"rank\":", i ? "," : "", kinds[v[i].kind]);
    if (v[i].rank >= 0) fprintf(f, "%d", v[i].rank);
    else fprintf(f, "null");
    fprintf(f, ",\"figure\":\"%s\",\"value\":", v[i].figure);
    if (!strcmp(v[i].unit, "ns")) fprintf(f, "%" PRId64, (int64_t)v[i].value);
    else fprintf(f, "%.6g", v[i].value);
    fprintf(f, ",\"unit\":\"%s\",\"measured\":", v[i].unit);
    rp_json_string(f, v[i].what);
    fprintf(f, ",\"try\":");
    rp_json_string(f, v[i].todo);
    fprintf(f, ",\"verify\":");
    rp_json_string(f, v[i].verify);
    fputc('}', f);
  }
  fprintf(f, "],\"checks_passed\":");
  if (passed[0]) rp_json_string(f, passed);
  else fprintf(f, "null");
  topo_free(v);
}

void rp_render_next_html(const rp_report *r, FILE *f) {
  size_t n;
  char passed[640];
  rp_next *v = rp_next_list(r, &n, passed, sizeof passed);
  if (!n && !passed[0]) {
    topo_free(v);
    return;
  }
  fprintf(f,
          "<h2 id=next>Next steps</h2><p class=note>From the figures measured above; each with "
          "the command that verifies it (docs/reading-the-report.md).</p>\n<ol class=next>\n");
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "<li><b>");
    html_text(f, v[i].what);
    fprintf(f, "</b><br>try: ");
    html_text(f, v[i].todo);
    fprintf(f, "<br>verify: <code>");
    html_text(f, v[i].verify);
    fprintf(f, "</code></li>\n");
  }
  fprintf(f, "</ol>\n");
  if (passed[0]) {
    fprintf(f, "<p class=note>Checked, nothing to do: ");
    html_text(f, passed);
    fprintf(f, ".</p>\n");
  }
  topo_free(v);
}
