/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads NCCL's INFO log back (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV, NCCL_DEBUG_FILE
 * pointed at a file by gpu_setup.c) to learn, per communicator, what NCCL allows (its algorithm /
 * protocol bandwidth table: bandwidth 0 = disabled), how many channels it runs, whether the tuner
 * plugin loaded, and what every collective ran (rank 0 prints one "Bytes -> Algo" line per task).
 * The formats are NCCL 2.28's (src/graph/tuning.cc, src/enqueue.cc, src/plugin/tuner.cc); a line
 * that does not match is ignored, so a future format change degrades to "unverified", never to a
 * wrong answer. NCCL opens the file line-buffered; an incomplete last line is read next poll.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "profile.h"

/* Text after "NCCL INFO " (or the whole line when there is no prefix). */
static const char *body(const char *line) {
  const char *p = strstr(line, "NCCL INFO ");
  return p ? p + 10 : line;
}

static void trim_copy(char *dst, size_t len, const char *begin, const char *end) {
  while (begin < end && isspace((unsigned char)*begin)) begin++;
  while (end > begin && isspace((unsigned char)end[-1])) end--;
  size_t n = (size_t)(end - begin);
  if (n >= len) n = len - 1;
  memcpy(dst, begin, n);
  dst[n] = '\0';
}

int topo_cal_parse_choice(const char *line, topo_cal_choice *out) {
  const char *b = body(line);
  const char *colon = strchr(b, ':');
  if (!colon) return 0;
  char func[32];
  trim_copy(func, sizeof func, b, colon);
  int coll = topo_nccl_coll_from_name(func);
  if (coll < 0) return 0;
  unsigned long long bytes;
  char algo[32], proto[32];
  int lo, hi;
  if (sscanf(colon + 1, " %llu Bytes -> Algo %31s proto %31s channel{Lo..Hi}={%d..%d}", &bytes,
             algo, proto, &lo, &hi) != 5)
    return 0;
  int a = topo_nccl_algo_from_name(algo), p = topo_nccl_proto_from_name(proto);
  if (a < 0 || p < 0 || hi < lo) return 0;
  out->coll = coll;
  out->bytes = bytes;
  out->algo = a;
  out->proto = p;
  out->nchannels = hi - lo + 1;
  return 1;
}

void topo_cal_nccl_log_init(topo_cal_nccl_log *log) {
  memset(log, 0, sizeof *log);
  log->tuner_loaded = -1;
  log->table_nalgos = 0;
}

void topo_cal_nccl_log_reset(topo_cal_nccl_log *log) {
  memset(&log->allowed, 0, sizeof log->allowed);
  log->table_seen = 0;
  log->table_nalgos = 0;
  log->coll_channels = 0;
  log->tuner_loaded = -1;
  log->tuner_name[0] = '\0';
  log->tuner_version = 0;
  memset(log->have_last, 0, sizeof log->have_last);
  log->nchoices = 0;
  log->last_warn[0] = '\0';
}

/* "  Algorithm   |   Tree   |   Ring   | CollNetDirect |" */
static void table_header(topo_cal_nccl_log *log, const char *b) {
  const char *p = strchr(b, '|');
  log->table_nalgos = 0;
  while (p && log->table_nalgos < 3) {
    const char *q = strchr(p + 1, '|');
    if (!q) break;
    char name[32];
    trim_copy(name, sizeof name, p + 1, q);
    int a = topo_nccl_algo_from_name(name);
    if (a < 0) break;
    if (log->table_nalgos == 0 && a == NCCL_ALGO_TREE) {
      /* First block of a new table: a new communicator's. */
      memset(&log->allowed, 0, sizeof log->allowed);
      log->table_seen = 0;
    }
    log->table_algos[log->table_nalgos++] = a;
    p = q;
  }
}

/* "    AllReduce |     8.0/  61.1 |    16.5/ 180.6 | ..." */
static int table_row(topo_cal_nccl_log *log, const char *b) {
  const char *bar = strchr(b, '|');
  if (!bar || !log->table_nalgos) return 0;
  char name[32];
  trim_copy(name, sizeof name, b, bar);
  int coll = topo_nccl_coll_from_name(name);
  if (coll < 0) return 0;
  const char *p = bar;
  for (int i = 0; i < 3 * log->table_nalgos; i++) {
    const char *q = strchr(p + 1, '|');
    if (!q) return 0;
    double lat, bw;
    if (sscanf(p + 1, " %lf / %lf", &lat, &bw) != 2) return 0;
    int a = log->table_algos[i / 3], pr = i % 3;
    log->allowed.ok[coll][a][pr] = bw > 0;
    p = q;
  }
  log->table_seen++;
  return 1;
}

void topo_cal_nccl_log_line(topo_cal_nccl_log *log, const char *line) {
  const char *warn = strstr(line, "NCCL WARN ");
  if (warn) {
    trim_copy(log->last_warn, sizeof log->last_warn, warn + 10, warn + strlen(warn));
    return;
  }
  const char *b = body(line);
  topo_cal_choice c;
  if (strstr(b, "Bytes -> Algo") && topo_cal_parse_choice(b, &c)) {
    log->last[c.coll] = c;
    log->have_last[c.coll] = 1;
    log->nchoices++;
    return;
  }
  const char *t;
  if ((t = strstr(b, "TUNER/Plugin: Using ")) != NULL) {
    t += 20;
    const char *end = strstr(t, " (v");
    if (!end) end = t + strlen(t);
    trim_copy(log->tuner_name, sizeof log->tuner_name, t, end);
    log->tuner_version = 0;
    if (*end) log->tuner_version = atoi(end + 3);
    log->tuner_loaded = 1;
    return;
  }
  int n;
  if (sscanf(b, "%d coll channels", &n) == 1 && strstr(b, "coll channels")) {
    log->coll_channels = n;
    return;
  }
  const char *s = b;
  while (*s == ' ') s++;
  if (strncmp(s, "Algorithm", 9) == 0 && strchr(s, '|')) {
    table_header(log, s);
    return;
  }
  table_row(log, b);
}

int topo_cal_nccl_log_open(topo_cal_nccl_log *log, const char *path) {
  if (log->f) fclose(log->f);
  log->f = fopen(path, "r");
  log->offset = 0;
  return log->f ? 0 : -1;
}

int topo_cal_nccl_log_poll(topo_cal_nccl_log *log) {
  if (!log->f) return -1;
  char buf[4096];
  int lines = 0;
  clearerr(log->f);
  if (fseek(log->f, log->offset, SEEK_SET) != 0) return -1;
  for (;;) {
    long pos = ftell(log->f);
    if (!fgets(buf, sizeof buf, log->f)) break;
    size_t l = strlen(buf);
    if (l == 0) break;
    if (buf[l - 1] != '\n') {
      if (l < sizeof buf - 1) { /* incomplete last line: read it next time */
        fseek(log->f, pos, SEEK_SET);
        break;
      }
      /* an overlong line: keep its start, skip the rest */
      int ch;
      while ((ch = fgetc(log->f)) != EOF && ch != '\n') {}
    }
    topo_cal_nccl_log_line(log, buf);
    lines++;
  }
  clearerr(log->f);
  log->offset = ftell(log->f);
  return lines;
}

void topo_cal_nccl_log_close(topo_cal_nccl_log *log) {
  if (log->f) fclose(log->f);
  log->f = NULL;
}
