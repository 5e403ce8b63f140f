// SPDX-License-Identifier: Apache-2.0
// `topo-report export --chrome FILE`: the binary traces as Chrome trace-event JSON that Perfetto
// and chrome://tracing load. One process per rank, one track per CUDA stream for kernels, one
// "NCCL stream N" track per stream for collectives (named with size, algorithm and protocol),
// "CPU enqueue" for collectives without GPU timing, and "steps". Only X (complete) events, one per
// line, never overlapping on a track of their own kind. Streams its inputs; aligned clock in µs.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "log.h"
#include "report.h"
#include "report_analysis.h"
#include "report_inputs.h"
#include "report_render.h"
#include "trace_reader.h"

#define TID_NCCL  100000u
#define TID_CPU   200000u
#define TID_STEPS 200001u

typedef struct exp_ctx {
  FILE *f;
  rp_source *src;
  int *pid_of; /* source -> Chrome pid */
  uint64_t events;
  rp_map named; /* tracks already named: (pid, tid) pairs */
} exp_ctx;

static void ts(FILE *f, int64_t ns) {
  int64_t us = ns / 1000, rem = ns % 1000;
  if (rem < 0) rem += 1000, us--;
  fprintf(f, "%" PRId64 ".%03d", us, (int)rem);
}

static void track(exp_ctx *x, int pid, uint32_t tid, const char *label, uint32_t stream) {
  uint64_t key = (uint64_t)(uint32_t)pid << 32 | tid;
  uint32_t seen;
  if (rp_map_find(&x->named, key, &seen) || !rp_map_add(&x->named, key, 0)) return;
  char name[64];
  if (strstr(label, "stream")) snprintf(name, sizeof name, "%s %u", label, stream);
  else snprintf(name, sizeof name, "%s", label);
  fprintf(x->f,
          ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":",
          pid, tid);
  rp_json_string(x->f, name);
  fprintf(x->f, "}}");
  fprintf(x->f,
          ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%u,\"args\":{\"sort_"
          "index\":%u}}",
          pid, tid, tid);
}

static void complete(exp_ctx *x, int pid, uint32_t tid, const char *name, const char *cat,
                     int64_t start, int64_t stop) {
  fprintf(x->f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"cat\":\"%s\",\"name\":", pid, tid, cat);
  rp_json_string(x->f, name);
  fprintf(x->f, ",\"ts\":");
  ts(x->f, start);
  fprintf(x->f, ",\"dur\":");
  ts(x->f, stop - start);
  x->events++;
}

static void on_coll(void *vc, int src, const rp_coll *c) {
  exp_ctx *x = vc;
  int pid = x->pid_of[src];
  char name[128], size[32];
  rp_fmt_bytes(rp_coll_size(c->func, c->bytes, c->nranks), size, sizeof size);
  snprintf(name, sizeof name, "%s %s %s/%s", rp_func_name(c->func), size, rp_algo_name(c->algo),
           rp_proto_name(c->proto));
  uint32_t tid;
  if (c->timed) {
    tid = TID_NCCL + c->stream;
    track(x, pid, tid, "NCCL stream", c->stream);
    complete(x, pid, tid, name, "nccl", c->gpu_start, c->gpu_stop);
  } else {
    tid = TID_CPU;
    track(x, pid, tid, "CPU enqueue (no GPU timing)", 0);
    complete(x, pid, tid, name, "nccl_cpu", c->cpu_start,
             c->cpu_stop > c->cpu_start ? c->cpu_stop : c->cpu_start + 1);
  }
  fprintf(x->f,
          ",\"args\":{\"bytes\":%" PRIu64 ",\"seq\":%" PRIu64 ",\"comm\":\"%016" PRIx64
          "\",\"algorithm\":\"%s\",\"protocol\":\"%s\",\"channels\":%d}}",
          c->bytes, c->seq, c->comm, rp_algo_name(c->algo), rp_proto_name(c->proto), c->nchannels);
}

static void on_interval(void *vc, int src, const rp_interval *iv) {
  exp_ctx *x = vc;
  if (iv->origin != RP_FROM_KERNEL) return;
  int pid = x->pid_of[src];
  const rp_source *s = &x->src[src];
  const char *name = s->impl ? topo_trace_reader_string(s->impl, iv->name) : "";
  track(x, pid, iv->stream, "stream", iv->stream);
  complete(x, pid, iv->stream, *name ? name : (iv->cls == RP_MEMORY ? "memory" : "kernel"),
           iv->cls == RP_COMM     ? "nccl_kernel"
           : iv->cls == RP_MEMORY ? "memory"
                                  : "kernel",
           iv->start, iv->stop);
  fprintf(x->f, "}");
}

static void on_step(void *vc, int src, int64_t start, int64_t stop, uint64_t value) {
  exp_ctx *x = vc;
  int pid = x->pid_of[src];
  char name[48];
  snprintf(name, sizeof name, "step %" PRIu64, value);
  track(x, pid, TID_STEPS, "steps", 0);
  complete(x, pid, TID_STEPS, name, "step", start, stop > start ? stop : start + 1);
  fprintf(x->f, "}");
}

/* A process of the export: (host, pid), labelled by its rank in its largest communicator. */
typedef struct exp_proc {
  char host[64];
  uint32_t pid;
  int rank, size;
} exp_proc;

/* Numbers the processes of the opened sources 1, 2, ... in order of their first source, into
 * pid_of: sorted by (host, pid), not searched. 0 out of memory. */
static int number_processes(exp_ctx *x, int n, int *nprocs) {
  rp_proc_ref *ref = topo_malloc((size_t)(n ? n : 1) * sizeof *ref);
  int *first = topo_malloc((size_t)(n ? n : 1) * sizeof *first);
  if (!ref || !first) {
    topo_free(ref), topo_free(first);
    return 0;
  }
  int m = 0;
  for (int i = 0; i < n; i++)
    if (x->src[i].impl) ref[m++] = (rp_proc_ref){x->src[i].header.host, x->src[i].header.pid, i};
  qsort(ref, (size_t)m, sizeof *ref, rp_cmp_proc_ref);
  for (int k = 0, g = 0; k < m; k++) { /* g: the first of k's process (its lowest index) */
    if (k && (ref[k].pid != ref[g].pid || strcmp(ref[k].host, ref[g].host))) g = k;
    first[ref[k].index] = ref[g].index;
  }
  *nprocs = 0;
  for (int i = 0; i < n; i++)
    if (x->src[i].impl) x->pid_of[i] = first[i] == i ? ++*nprocs : x->pid_of[first[i]];
  topo_free(ref), topo_free(first);
  return 1;
}

/* Opens every binary input (JSON ones are Chrome traces already: said, not exported), gives each
 * the export pid of its process (pid_of) and writes one header per process. */
static topo_status process_headers(exp_ctx *x, char **files, int n, const rp_options *opt) {
  exp_proc *procs = topo_calloc((size_t)(n ? n : 1), sizeof *procs);
  int nprocs = 0;
  if (!procs) return TOPO_ERR_NOMEM;
  for (int i = 0; i < n; i++) {
    rp_source *s = &x->src[i];
    s->index = i;
    s->path = files[i];
    s->quiet = opt && opt->quiet;
    s->kind = rp_path_is_json(files[i]) ? RP_SRC_KINETO : RP_SRC_TRACE;
    if (s->kind == RP_SRC_KINETO) {
      TOPO_WARN("%s: JSON inputs are already Chrome traces; not exported", files[i]);
      continue;
    }
    if (rp_source_open(s, 1) != TOPO_OK || !s->header_ok) {
      rp_source_close(s);
      continue;
    }
    rp_source_suspend(s); /* read one at a time below: no descriptor held meanwhile */
  }
  if (!number_processes(x, n, &nprocs)) {
    topo_free(procs);
    return TOPO_ERR_NOMEM;
  }
  for (int i = 0, named = 0; i < n; i++) { /* a process is named by its first source */
    const rp_source *s = &x->src[i];
    if (!s->impl) continue;
    exp_proc *pr = &procs[x->pid_of[i] - 1];
    if (x->pid_of[i] > named) {
      named = x->pid_of[i];
      snprintf(pr->host, sizeof pr->host, "%s", s->header.host);
      pr->pid = s->header.pid;
      pr->rank = -1;
    }
    if (s->header.nranks > pr->size) pr->size = s->header.nranks, pr->rank = s->header.rank;
  }
  for (int p = 0; p < nprocs; p++) {
    char pname[sizeof procs[p].host + 48];
    snprintf(pname, sizeof pname, "rank %d (%s:%u)", procs[p].rank, procs[p].host, procs[p].pid);
    fprintf(x->f,
            ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":", p + 1);
    rp_json_string(x->f, pname);
    fprintf(x->f, "}}");
    fprintf(
        x->f,
        ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
        p + 1, procs[p].rank >= 0 ? procs[p].rank : 1000000 + p);
  }
  topo_free(procs);
  return TOPO_OK;
}

/* Every opened input's records, one input at a time. */
static void export_events(exp_ctx *x, int n) {
  rp_sink sink = {x, on_coll, on_interval, on_step, NULL, NULL};
  for (int i = 0; i < n; i++) {
    rp_source *s = &x->src[i];
    if (!s->impl) continue;
    while (rp_source_step(s, &sink, 1)) {}
    rp_source_close(s);
  }
}

topo_status rp_export_chrome(const char *const *paths, int npaths, const rp_options *opt,
                             const char *out_path) {
  char **files;
  int n;
  topo_status st = rp_paths_expand(paths, npaths, &files, &n);
  if (st != TOPO_OK) return st;
  exp_ctx x;
  memset(&x, 0, sizeof x);
  x.src = topo_calloc((size_t)(n ? n : 1), sizeof *x.src);
  x.pid_of = topo_calloc((size_t)(n ? n : 1), sizeof *x.pid_of);
  FILE *f = fopen(out_path, "w");
  if (!x.src || !x.pid_of || !f) {
    if (!f) TOPO_WARN("cannot write %s", out_path);
    st = f ? TOPO_ERR_NOMEM : TOPO_ERR_IO;
    goto out;
  }
  static char buf[1 << 20];
  setvbuf(f, buf, _IOFBF, sizeof buf);
  x.f = f;
  fprintf(
      f,
      "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"topo-report\"},\"traceEvents\":[\n");
  fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{\"name\":\"topo\"}}");
  /* Headers first: a process per (host, pid); its label is its rank in its largest comm. */
  if ((st = process_headers(&x, files, n, opt)) != TOPO_OK) goto out;
  int opened = 0;
  for (int i = 0; i < n; i++) opened += x.src[i].impl != NULL;
  if (!opened) { /* nothing to export: no file is left behind */
    st = TOPO_ERR_PARSE;
    fclose(f);
    f = NULL;
    unlink(out_path);
    goto out;
  }
  export_events(&x, n);
  fprintf(f, "\n]}\n");
  int unreadable = 0;
  for (int i = 0; i < n; i++) unreadable += x.src[i].unreadable != 0;
  if (unreadable) {
    TOPO_WARN("%d of %d input files could not be read; the export lacks them", unreadable, n);
    st = TOPO_ERR_IO;
  }
  if (opt && opt->progress > 0)
    fprintf(stderr, "topo-report: wrote %" PRIu64 " events to %s\n", x.events, out_path);
out:
  if (f && fclose(f) != 0) st = TOPO_ERR_IO;
  for (int i = 0; x.src && i < n; i++) rp_source_close(&x.src[i]);
  topo_free(x.src);
  topo_free(x.pid_of);
  rp_map_free(&x.named);
  rp_paths_free(files, n);
  return st;
}
