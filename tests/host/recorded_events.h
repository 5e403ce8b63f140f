/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parser for the profiler lines of the recorded NCCL calls (rankN-calls.txt under
 * tests/data/nccl-2.28.9-2xh200 and -as-2-nodes, format in their README.md): PROF_INIT,
 * PROF_FIN, START, STATE, STOP.
 * `id` and `parent` are the handles the recording plugin returned; replays map them to the
 * handles of the plugin under test.
 */
#ifndef TOPO_RECORDED_EVENTS_H
#define TOPO_RECORDED_EVENTS_H

#include <stddef.h>
#include <stdint.h>

enum topo_rec_event_kind {
  TOPO_REV_INIT = 1,
  TOPO_REV_FIN,
  TOPO_REV_START,
  TOPO_REV_STATE,
  TOPO_REV_STOP
};

typedef struct topo_rec_event {
  int64_t ns;
  long tid;
  int kind; /* topo_rec_event_kind */
  /* PROF_INIT */
  uint64_t comm;
  char name[64];
  int nnodes, nranks, mask;
  /* START / STATE / STOP */
  uint64_t id, parent;
  int rank;
  uint64_t type; /* ncclProfile* bit of the START's event type name, 0 when unknown */
  char type_name[16];
  uint64_t seq;
  char func[24], dtype[24], algo[24], proto[16], stream[24];
  size_t count;
  int root, peer, nch, nwarps;
  int pid, ch, nsteps, chunk, is_send, step;
  uint64_t ptimer;
  int graph, depth;
  int state; /* STATE */
  size_t trans_size;
  int has_trans_size, has_ptimer;
} topo_rec_event;

/* Parse one line (timestamp and tid included). Return 1 on success, 0 for other lines (tuner
 * calls) or malformed ones. */
int topo_rec_parse_event(const char *line, topo_rec_event *out);
#endif
