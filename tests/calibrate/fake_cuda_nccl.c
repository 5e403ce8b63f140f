// SPDX-License-Identifier: Apache-2.0
// A CPU stand-in for the CUDA runtime and NCCL calls topo-calibrate's GPU engine (runner.c)
// makes, so that the whole run (devices, floors, p2p matrix, forced sweeps, --bench, fit, outputs) executes in CI.
// Two fake "H200" GPUs; device memory is host memory. Each stream has a virtual clock: every
// operation advances it by a modelled time (collectives: latency + bytes / bandwidth per
// algorithm / protocol / channels) and events read it, so timings are deterministic. NCCL's
// behaviour that the engine depends on is imitated: the INFO log in NCCL_DEBUG_FILE (algorithm
// table, channel count, "TUNER/Plugin: Using", one "Bytes -> Algo" line per collective on rank
// 0), the tuner's load status (sticky failure, reload after the last communicator), forcing by
// TOPO_TUNER_FORCE only through a loaded tuner and by NCCL_ALGO / NCCL_PROTO, and refusal of
// collectives nothing allows. FAKE_NCCL_REFUSE_LL128=1 makes the tuner's LL128 force ignored.
// FAKE_NCCL_JITTER=f scales every collective's time by 1 - f, 1 or 1 + f by the communicator's
// unique id (id mod 3), so that repeats and the A/A pair differ, still deterministically.
// Several processes (the fork launcher): fake_nccl_shared_init(n) before forking puts a shared
// memory rendezvous under Broadcast and AllReduce(double, min) - the calls the engine exchanges
// data with - so each process gets the real result.
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_vocab.h"

#define NDEV 2

/* ---- CUDA -------------------------------------------------------------------------------- */

typedef struct fake_graph {
  double us; /* sum of the captured operations */
} fake_graph;

typedef struct fake_stream {
  int dev;
  double clock_us;
  fake_graph *capture; /* non-NULL while capturing */
} fake_stream;

typedef struct fake_event {
  double t_us;
  int recorded;
} fake_event;

static int cur_dev;
static cudaError_t last_error;

static void advance(cudaStream_t s, double us) {
  fake_stream *fs = (fake_stream *)s;
  if (!fs) return;
  if (fs->capture) fs->capture->us += us;
  else fs->clock_us += us;
}

cudaError_t cudaGetDeviceCount(int *count) {
  *count = NDEV;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  if (device < 0 || device >= NDEV) return cudaErrorInvalidDevice;
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "NVIDIA H200");
  prop->multiProcessorCount = 132;
  prop->totalGlobalMem = 141ull << 30;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= NDEV) return cudaErrorInvalidDevice;
  cur_dev = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  *device = cur_dev;
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "fake CUDA error";
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  fake_stream *fs = calloc(1, sizeof *fs);
  fs->dev = cur_dev;
  *s = (cudaStream_t)fs;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  free(s);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaMalloc(void **p, size_t size) {
  /* Sizes up to the sweep's maximum: keep it small in tests (the runner allocates max_bytes). */
  *p = calloc(1, size ? size : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p) {
  free(p);
  return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int v, size_t n) {
  memset(p, v, n);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
  memset(p, v, n);
  advance(s, 1.5);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
  memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s) {
  memmove(dst, src, n);
  advance(s, 2.0 + (double)n / 1500e3); /* device copy ~1.5 TB/s */
  return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n,
                                cudaStream_t s) {
  memmove(dst, src, n);
  advance(s, 2.0 + (double)n / 380e3); /* NVLink copy engine ~380 GB/s */
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int a, int b) {
  *can = a != b;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = (cudaEvent_t)calloc(1, sizeof(fake_event));
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  free(e);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  fake_event *fe = (fake_event *)e;
  fake_stream *fs = (fake_stream *)s;
  if (fs->capture) return cudaErrorStreamCaptureUnsupported;
  fe->t_us = fs->clock_us;
  fe->recorded = 1;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  fake_event *x = (fake_event *)a, *y = (fake_event *)b;
  if (!x->recorded || !y->recorded) return cudaErrorInvalidResourceHandle;
  *ms = (float)((y->t_us - x->t_us) / 1e3);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  fake_stream *fs = (fake_stream *)s;
  if (fs->capture) return cudaErrorIllegalState;
  fs->capture = calloc(1, sizeof(fake_graph));
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
  fake_stream *fs = (fake_stream *)s;
  if (!fs->capture) return cudaErrorIllegalState;
  *g = (cudaGraph_t)fs->capture;
  fs->capture = NULL;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *ge, cudaGraph_t g, unsigned long long flags) {
  fake_graph *copy = malloc(sizeof *copy);
  *copy = *(fake_graph *)g;
  *ge = (cudaGraphExec_t)copy;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t ge, cudaStream_t s) {
  advance(s, ((fake_graph *)ge)->us);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t ge) {
  free(ge);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  free(g);
  return cudaSuccess;
}

/* ---- NCCL -------------------------------------------------------------------------------- */

struct ncclComm {
  int rank, nranks, channels;
  int force_algo, force_proto, force_ch; /* through the tuner */
  int env_algo, env_proto;               /* NCCL_ALGO / NCCL_PROTO, -1 = any */
  int tuner;                             /* holds a reference on the tuner */
  double scale;                          /* FAKE_NCCL_JITTER: this communicator's time factor */
};

/* Cross-process rendezvous for the data-carrying calls (multi-process tests only). */
typedef struct fake_shared {
  pthread_barrier_t barrier;
  int nranks;
  _Alignas(16) unsigned char slot[8][65536];
} fake_shared;
static fake_shared *shared;

void fake_nccl_shared_init(int nranks);
void fake_nccl_shared_init(int nranks) {
  shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) abort();
  pthread_barrierattr_t attr;
  pthread_barrierattr_init(&attr);
  pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&shared->barrier, &attr, (unsigned)nranks);
  shared->nranks = nranks;
}

static FILE *debug_file;
static int debug_init_done;
static int tuner_status; /* 0 ready, 1 loaded, -1 failed (sticky) */
static int tuner_refs;

static void debug_init(void) {
  if (debug_init_done) return;
  debug_init_done = 1;
  const char *lvl = getenv("NCCL_DEBUG"), *path = getenv("NCCL_DEBUG_FILE");
  if (lvl && strcasecmp(lvl, "INFO") == 0 && path) {
    debug_file = fopen(path, "w");
    if (debug_file) setvbuf(debug_file, NULL, _IOLBF, 0);
  }
  const char *host = getenv("NCCL_HOSTID");
  if (host && debug_file)
    fprintf(debug_file, "fake:1:1 [0] NCCL INFO NCCL_HOSTID set by environment to %s\n", host);
}

static void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void info(const char *fmt, ...) {
  if (!debug_file) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(debug_file, "fake:1:1 [0] NCCL INFO ");
  vfprintf(debug_file, fmt, ap);
  fputc('\n', debug_file);
  va_end(ap);
}

ncclResult_t ncclGetVersion(int *version) {
  *version = 22809;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  debug_init();
  static int n;
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "fake-%d", ++n);
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
  return r == ncclSuccess ? "no error" : "fake NCCL error";
}
const char *ncclGetLastError(ncclComm_t comm) { return "fake last error"; }

ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

/* What this fake NCCL allows: AllReduce tree and ring, everything else ring; any protocol. */
static int allowed(int coll, int algo, int proto, const struct ncclComm *c) {
  if (c->env_algo >= 0 && algo != c->env_algo) return 0;
  if (c->env_proto >= 0 && proto != c->env_proto) return 0;
  if (algo == NCCL_ALGO_RING) return 1;
  return algo == NCCL_ALGO_TREE && coll == ncclFuncAllReduce;
}

static double model_us(int coll, double bytes, int algo, int proto, int nch, int nranks) {
  static const double lat[3] = {6.0, 9.0, 12.0}, bw[3] = {120.0, 300.0, 360.0};
  double b = bw[proto] * (nch < 16 ? nch / 16.0 : 1.0);
  double traffic = coll == ncclFuncAllReduce ? 2.0 * (nranks - 1) / nranks
                   : coll == ncclFuncAllGather || coll == ncclFuncReduceScatter
                       ? (double)(nranks - 1) / nranks
                       : 1.0;
  return lat[proto] + (algo == NCCL_ALGO_TREE ? 1.0 : 0.0) + bytes * traffic / (b * 1e3);
}

static void print_table(const struct ncclComm *c) {
  const char *const *funcs = topo_nccl_func_names[TOPO_NCCL_TABLE];
  const char *const *algos = topo_nccl_algo_names[TOPO_NCCL_TABLE];
  for (int block = 0; block < 3; block++) {
    char line[1024];
    int off = snprintf(line, sizeof line, "  Algorithm   |");
    for (int a = block * 3; a < block * 3 + 3 && a < 7; a++)
      off += snprintf(line + off, sizeof line - off, " %14s   %14s   %14s |", "", algos[a], "");
    info("%s", line);
    info("  Protocol    |             LL |          LL128 |         Simple |");
    for (int f = 0; f < 5; f++) {
      off = snprintf(line, sizeof line, "%13s |", funcs[f]);
      for (int a = block * 3; a < block * 3 + 3 && a < 7; a++)
        for (int p = 0; p < 3; p++)
          off += snprintf(line + off, sizeof line - off, "%8.1f/%6.1f |", 7.0,
                          allowed(f, a, p, c) ? 100.0 : 0.0);
      info("%s", line);
    }
  }
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config) {
  debug_init();
  struct ncclComm *c = calloc(1, sizeof *c);
  c->rank = rank;
  c->nranks = nranks;
  c->channels = 24;
  const char *jit = getenv("FAKE_NCCL_JITTER");
  int serial = strncmp(id.internal, "fake-", 5) == 0 ? atoi(id.internal + 5) : 0;
  c->scale = 1.0 + (jit ? atof(jit) : 0.0) * (double)(serial % 3 - 1);
  if (config && config->maxCTAs > 0 && config->maxCTAs != NCCL_CONFIG_UNDEF_INT)
    c->channels = config->maxCTAs;
  c->force_algo = c->force_proto = -1;
  const char *ea = getenv("NCCL_ALGO"), *ep = getenv("NCCL_PROTO");
  c->env_algo = ea ? topo_nccl_algo_from_name(ea) : -1;
  c->env_proto = ep ? topo_nccl_proto_from_name(ep) : -1;
  /* Tuner plugin: as NCCL 2.28 (src/plugin/tuner.cc). */
  if (tuner_status == 1) {
    c->tuner = 1;
    tuner_refs++;
  } else if (tuner_status == 0) {
    const char *t = getenv("NCCL_TUNER_PLUGIN");
    struct stat st;
    if (t && strcasecmp(t, "none") != 0 && stat(t, &st) == 0) {
      tuner_status = 1;
      tuner_refs = 1;
      c->tuner = 1;
      if (rank == 0) info("TUNER/Plugin: Using fake-topo (v5)");
    } else {
      tuner_status = -1;
    }
  }
  if (c->tuner) {
    const char *f = getenv("TOPO_TUNER_FORCE");
    char a[32], p[32];
    int ch = 0;
    if (f && sscanf(f, "%31[^,],%31[^,],%d", a, p, &ch) >= 2) {
      c->force_algo = topo_nccl_algo_from_name(a);
      c->force_proto = topo_nccl_proto_from_name(p);
      c->force_ch = ch;
    }
  }
  if (rank == 0) {
    print_table(c);
    info(
        "%d coll channels, %d collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels "
        "per peer",
        c->channels, c->channels);
  }
  *comm = c;
  return ncclSuccess;
}

static ncclResult_t release(ncclComm_t c) {
  if (c->tuner && --tuner_refs == 0) tuner_status = 0;
  free(c);
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) { return release(c); }
ncclResult_t ncclCommAbort(ncclComm_t c) { return release(c); }

static ncclResult_t coll(int func, size_t count, size_t elem, ncclComm_t c, cudaStream_t s) {
  double bytes = (double)count * elem *
                 (func == ncclFuncAllGather || func == ncclFuncReduceScatter ? c->nranks : 1);
  int algo = -1, proto = -1, nch = c->channels;
  const char *refuse = getenv("FAKE_NCCL_REFUSE_LL128");
  if (c->force_algo >= 0 && allowed(func, c->force_algo, c->force_proto, c) &&
      !(refuse && *refuse == '1' && c->force_proto == NCCL_PROTO_LL128)) {
    algo = c->force_algo, proto = c->force_proto;
    if (c->force_ch > 0) nch = c->force_ch < c->channels ? c->force_ch : c->channels;
  } else {
    double best = 0;
    for (int a = 0; a < 7; a++)
      for (int p = 0; p < 3; p++)
        if (allowed(func, a, p, c)) {
          double t = model_us(func, bytes, a, p, c->channels, c->nranks);
          if (algo < 0 || t < best) best = t, algo = a, proto = p;
        }
  }
  if (algo < 0) return ncclInvalidUsage;
  advance(s, c->scale * model_us(func, bytes, algo, proto, nch, c->nranks));
  if (c->rank == 0) {
    int used = bytes < 65536 ? 1 : nch;
    info("%s: %zu Bytes -> Algo %s proto %s channel{Lo..Hi}={0..%d}",
         topo_nccl_func_name(func, TOPO_NCCL_EVENT), count * elem,
         topo_nccl_algo_name(algo, TOPO_NCCL_EVENT), topo_nccl_proto_name(proto, TOPO_NCCL_EVENT),
         used - 1);
  }
  return ncclSuccess;
}

static size_t elem_size(ncclDataType_t t) { return (size_t)topo_nccl_datatype_size((int)t); }

ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t c, cudaStream_t st) {
  if (shared && c->nranks > 1 && t == ncclDouble && op == ncclMin &&
      count * 8 <= sizeof shared->slot[0]) {
    memcpy(shared->slot[c->rank], s, count * 8);
    pthread_barrier_wait(&shared->barrier);
    double *out = r;
    for (size_t i = 0; i < count; i++) {
      double m = ((const double *)shared->slot[0])[i];
      for (int k = 1; k < c->nranks; k++) {
        double v = ((const double *)shared->slot[k])[i];
        if (v < m) m = v;
      }
      out[i] = m;
    }
    pthread_barrier_wait(&shared->barrier);
  }
  return coll(ncclFuncAllReduce, count, elem_size(t), c, st);
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t t, ncclComm_t c,
                           cudaStream_t st) {
  return coll(ncclFuncAllGather, count, elem_size(t), c, st);
}
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t c, cudaStream_t st) {
  return coll(ncclFuncReduceScatter, count, elem_size(t), c, st);
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t t, int root,
                           ncclComm_t c, cudaStream_t st) {
  size_t bytes = count * elem_size(t);
  if (shared && c->nranks > 1 && bytes <= sizeof shared->slot[0]) {
    if (c->rank == root) memcpy(shared->slot[root], s, bytes);
    pthread_barrier_wait(&shared->barrier);
    memmove(r, shared->slot[root], bytes);
    pthread_barrier_wait(&shared->barrier);
  }
  return coll(ncclFuncBroadcast, count, elem_size(t), c, st);
}
ncclResult_t ncclReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                        int root, ncclComm_t c, cudaStream_t st) {
  return coll(ncclFuncReduce, count, elem_size(t), c, st);
}
