// SPDX-License-Identifier: Apache-2.0
// NCCL's vocabulary (see nccl_vocab.h): one row per index with its spellings, datatype sizes,
// nccl-tests factors and NCCL 2.28's channel and thread choice. Pure tables and functions, linked
// into both plugins and every tool through topo_common.
#define _GNU_SOURCE 1 /* RTLD_DEFAULT */
#include "nccl_vocab.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#define NCCL_MAX_NTHREADS        640 /* NCCL_MAX_NTHREADS */
#define NCCL_SIMPLE_MAX_NTHREADS 512
#define NCCL_LL_MAX_NTHREADS     512
#define NCCL_LL128_MAX_NTHREADS  640
#define NCCL_WARP                32

const char *const topo_nccl_func_names[TOPO_NCCL_SPELLINGS][TOPO_NCCL_NUM_FUNCS] = {
    [TOPO_NCCL_FILE] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce",
                        "sendrecv", "send", "recv", "alltoall", "scatter", "gather"},
    [TOPO_NCCL_EVENT] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
                         "SendRecv", "Send", "Recv", "AlltoAll", "Scatter", "Gather"},
    [TOPO_NCCL_TABLE] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
                         "SendRecv", "Send", "Recv", "AlltoAll", "Scatter", "Gather"},
};

const char *const topo_nccl_algo_names[TOPO_NCCL_SPELLINGS][NCCL_NUM_ALGORITHMS] = {
    [TOPO_NCCL_FILE] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree",
                        "pat"},
    [TOPO_NCCL_EVENT] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE",
                         "PAT"},
    [TOPO_NCCL_TABLE] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree",
                         "PAT"},
};

const char *const topo_nccl_proto_names[TOPO_NCCL_SPELLINGS][NCCL_NUM_PROTOCOLS] = {
    [TOPO_NCCL_FILE] = {"ll", "ll128", "simple"},
    [TOPO_NCCL_EVENT] = {"LL", "LL128", "SIMPLE"},
    [TOPO_NCCL_TABLE] = {"LL", "LL128", "Simple"},
};

const char *const topo_nccl_datatype_names[TOPO_NCCL_NUM_DATATYPES] = {
    "ncclInt8",    "ncclUint8",    "ncclInt32",      "ncclUint32",
    "ncclInt64",   "ncclUint64",   "ncclFloat16",    "ncclFloat32",
    "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};

static const int datatype_sizes[TOPO_NCCL_NUM_DATATYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

static const char *name_at(const char *const *table, int n, int i, topo_nccl_spelling s) {
  if (i < 0 || i >= n || (int)s < 0 || s >= TOPO_NCCL_SPELLINGS) return "unknown";
  return table[(size_t)s * (size_t)n + (size_t)i];
}

const char *topo_nccl_func_name(int func, topo_nccl_spelling s) {
  return name_at(&topo_nccl_func_names[0][0], TOPO_NCCL_NUM_FUNCS, func, s);
}
const char *topo_nccl_algo_name(int algo, topo_nccl_spelling s) {
  return name_at(&topo_nccl_algo_names[0][0], NCCL_NUM_ALGORITHMS, algo, s);
}
const char *topo_nccl_proto_name(int proto, topo_nccl_spelling s) {
  return name_at(&topo_nccl_proto_names[0][0], NCCL_NUM_PROTOCOLS, proto, s);
}

/* Case-insensitive, '_' and '-' ignored: "collnet_direct" == "CollNetDirect" == "collnet-direct".*/
static int name_equal(const char *a, const char *b) {
  for (;;) {
    while (*a == '_' || *a == '-') a++;
    while (*b == '_' || *b == '-') b++;
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    if (!*a) return 1;
    a++, b++;
  }
}

int topo_nccl_name_index(const char *name, const char *const *table, int n) {
  if (!name) return -1;
  for (int i = 0; i < n; i++)
    if (name_equal(name, table[i])) return i;
  return -1;
}

int topo_nccl_func_from_name(const char *name) {
  return topo_nccl_name_index(name, topo_nccl_func_names[TOPO_NCCL_FILE], TOPO_NCCL_NUM_FUNCS);
}
int topo_nccl_coll_from_name(const char *name) {
  return topo_nccl_name_index(name, topo_nccl_func_names[TOPO_NCCL_FILE], NCCL_NUM_FUNCTIONS);
}
int topo_nccl_algo_from_name(const char *name) {
  return topo_nccl_name_index(name, topo_nccl_algo_names[TOPO_NCCL_FILE], NCCL_NUM_ALGORITHMS);
}
int topo_nccl_proto_from_name(const char *name) {
  return topo_nccl_name_index(name, topo_nccl_proto_names[TOPO_NCCL_FILE], NCCL_NUM_PROTOCOLS);
}
int topo_nccl_datatype_from_name(const char *name) {
  return topo_nccl_name_index(name, topo_nccl_datatype_names, TOPO_NCCL_NUM_DATATYPES);
}

int topo_nccl_datatype_size(int datatype) {
  return datatype >= 0 && datatype < TOPO_NCCL_NUM_DATATYPES ? datatype_sizes[datatype] : 0;
}

double topo_nccl_busbw_factor(int func, int nranks) {
  double n = nranks > 0 ? nranks : 1;
  switch (func) {
  case ncclFuncAllReduce: return 2.0 * (n - 1) / n;
  case ncclFuncAllGather:
  case ncclFuncReduceScatter: return (n - 1) / n;
  default: return 1.0;
  }
}

uint64_t topo_nccl_tests_bytes(int func, uint64_t bytes, int nranks) {
  if ((func == ncclFuncAllGather || func == ncclFuncReduceScatter) && nranks > 0)
    return bytes * (uint64_t)nranks;
  return bytes;
}

int topo_nccl_max_threads(int algo, int proto, int ring_pci_limited) {
  switch (proto) {
  case NCCL_PROTO_SIMPLE:
    switch (algo) {
    case NCCL_ALGO_RING: return ring_pci_limited ? 256 : NCCL_SIMPLE_MAX_NTHREADS;
    case NCCL_ALGO_TREE: return NCCL_SIMPLE_MAX_NTHREADS;
    case NCCL_ALGO_COLLNET_DIRECT:
    case NCCL_ALGO_COLLNET_CHAIN:
    case NCCL_ALGO_NVLS:
    case NCCL_ALGO_NVLS_TREE: return NCCL_MAX_NTHREADS;
    default: return 0;
    }
  case NCCL_PROTO_LL:
    return algo == NCCL_ALGO_RING || algo == NCCL_ALGO_TREE ? NCCL_LL_MAX_NTHREADS : 0;
  case NCCL_PROTO_LL128:
    return algo == NCCL_ALGO_RING || algo == NCCL_ALGO_TREE ? NCCL_LL128_MAX_NTHREADS : 0;
  default: return 0;
  }
}

long topo_nccl_thread_threshold(int algo, int proto, int nranks) {
  switch (proto) {
  case NCCL_PROTO_LL: return algo == NCCL_ALGO_RING ? 8L * (nranks > 0 ? nranks : 1) : 8;
  case NCCL_PROTO_LL128: return 8;
  case NCCL_PROTO_SIMPLE:
    return algo == NCCL_ALGO_COLLNET_DIRECT || algo == NCCL_ALGO_COLLNET_CHAIN ? 512 : 64;
  default: return 0;
  }
}

/* nbytes below what nc channels of nt threads need at `threshold` bytes per thread. */
static int below(uint64_t nbytes, int nc, int nt, long threshold) {
  return (double)nbytes < (double)nc * nt * (double)threshold;
}

void topo_nccl_channels(int algo, int proto, uint64_t nbytes, const topo_nccl_channel_inputs *in,
                        int *nchannels, int *nthreads) {
  int nc = in->nchannels > 0 ? in->nchannels : 1;
  int nt = in->max_threads;
  long threshold = in->threshold;
  int nvls = algo == NCCL_ALGO_NVLS || algo == NCCL_ALGO_NVLS_TREE;
  if (algo == NCCL_ALGO_COLLNET_DIRECT) {
    /* CollNet's own loop, with one head per channel. */
    int sw = 16, short_of = 1;
    while (sw >= 1 && short_of) {
      while ((short_of = below(nbytes, nc, nt, threshold)) && nc > sw) {
        if (nc == sw + sw / 2) threshold /= 2;
        nc--;
      }
      sw /= 2;
    }
  } else if (nvls) {
    nc = in->nnodes > 1 && algo == NCCL_ALGO_NVLS && in->nchannels < in->nvls_channels
             ? in->nchannels
             : in->nvls_channels;
  } else {
    while (below(nbytes, nc, nt, threshold) && nc >= 2) nc--;
  }
  if (!nvls && algo != NCCL_ALGO_COLLNET_DIRECT) {
    while (below(nbytes, nc, nt, threshold) && nt % 128 == 0 && nt > 0) nt /= 2;
  }
  if (proto == NCCL_PROTO_SIMPLE) {
    if (algo == NCCL_ALGO_RING) nt += NCCL_WARP;
    if (algo == NCCL_ALGO_TREE) nt += 4 * NCCL_WARP;
  }
  if (nt / NCCL_WARP < 3) nt = 3 * NCCL_WARP;
  if (algo == NCCL_ALGO_TREE || algo == NCCL_ALGO_PAT) nt = NCCL_MAX_NTHREADS;
  *nchannels = nc;
  *nthreads = nt;
}

int topo_nccl_runtime_version(void) {
  typedef int (*get_version_fn)(int *);
  get_version_fn fn;
  void *sym = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  memcpy(&fn, &sym, sizeof fn);
  int v = 0;
  if (!fn || fn(&v) != 0 || v <= 0) return 0;
  return v;
}
