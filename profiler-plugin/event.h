/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One profiler event in version-free form: its kind, what an adapter (profiler_abi.c) extracts
 * from a version's descriptor (topo_prof_descr) and the kinds of state update. The adapters fill
 * them in; the core (core.h) and the room that records events (records.h) read them. Types only.
 */
#ifndef TOPO_PROFILER_EVENT_H
#define TOPO_PROFILER_EVENT_H

#include <stdint.h>
#include <sys/types.h>

/* Event kinds, version independent (NCCL's type bits have the same meaning in all versions). */
enum topo_prof_kind {
  TOPO_EV_OTHER = 0,
  TOPO_EV_GROUP,
  TOPO_EV_COLL,
  TOPO_EV_P2P,
  TOPO_EV_PROXYOP,
  TOPO_EV_PROXYSTEP,
  TOPO_EV_PROXYCTRL,
  TOPO_EV_KERNELCH,
  TOPO_EV_NETPLUGIN,
  TOPO_EV_GROUPAPI,
  TOPO_EV_COLLAPI,
  TOPO_EV_P2PAPI,
  TOPO_EV_KERNELLAUNCH,
  TOPO_EV_CE,
  TOPO_EV_KERNELPHASE /* v7: a phase of a symmetric kernel's channel (child of a KernelCh) */
};

#define TOPO_PROF_UNKNOWN_CHANNELS (-1)

/* What an adapter extracts from a descriptor; only the members of `kind` are meaningful. */
typedef struct topo_prof_descr {
  int kind;
  void *parent;
  int rank;
  /* Coll / P2p */
  uint64_t comm_hash; /* v1-v3 only (later versions give it to init) */
  uint64_t seq;
  uint64_t bytes;
  int func, datatype, algo, proto; /* enum values, TOPO_UNKNOWN_U8 when unknown */
  int peer;                        /* root, or p2p peer, -1 when none */
  int nchannels;                   /* TOPO_PROF_UNKNOWN_CHANNELS when the version cannot say */
  int nwarps;
  /* v7 Coll / P2p: the call's user tag (0 = none); Coll: a symmetric kernel ran (its algorithm
   * and protocol are then unknown), its variant name (NULL when none; copied at start) */
  uint64_t user_tag;
  int sym;
  const char *variant;
  /* KernelPhase: its phase (0 initial sync, 1 compute, 2 final sync); channel and ptimer below */
  int phase;
  /* KernelCh */
  int channel;
  uint64_t ptimer; /* 0 when the version has no GPU timer */
  /* ProxyOp */
  pid_t pid;
  int nsteps, chunk_size, is_send;
  /* GroupApi / CollApi / P2pApi / KernelLaunch */
  void *stream;
  int graph_captured;
} topo_prof_descr;

/* State updates, version independent. TOPO_ST_PHASE_STOP: a KernelPhase's GPU end (v7). */
enum topo_prof_state_kind {
  TOPO_ST_OTHER = 0,
  TOPO_ST_KERNELCH_STOP,
  TOPO_ST_PROXY_BYTES,
  TOPO_ST_PHASE_STOP
};
#endif
