// SPDX-License-Identifier: Apache-2.0
// The tuner core (see tuner_core.h): per-process cache of shared setups, per-communicator contexts,
// and the per-call path (force -> rules -> model) over NCCL's cost table.
#include "tuner_core.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "constants.h"
#include "env.h"
#include "force.h"
#include "log.h"
#include "model.h"
#include "profile.h"
#include "rules.h"
#include "table.h"
#include "topo_version.h"

#define PATH_LEN 4096 /* TOPO_TUNER_PROFILE and TOPO_TUNER_RULES: at most 4095 bytes (env.def) */

/* What makes two communicators' decisions identical. */
typedef struct setup_key {
  char profile[PATH_LEN];
  long long profile_mtime, profile_size;
  char rules[PATH_LEN];
  long long rules_mtime, rules_size;
  char force[128];
  char gpu[32];
  int nranks, nnodes, ranks_per_domain;
  int nccl_version; /* NCCL_VERSION_CODE NCCL runs; 0 = unknown (then abi_version bounds it) */
  int abi_version;
} setup_key;

/* Immutable once built (but for the once-only warning flags); shared by every context with the
 * same key. */
typedef struct setup {
  setup_key key;
  int refs;           /* guarded by cache_lock */
  struct setup *next; /* guarded by cache_lock */
  topo_profile profile;
  topo_model model;
  topo_table *table; /* with the rules folded in */
  topo_rules *rules; /* NULL: none */
  topo_force force;
  atomic_int force_warned; /* the forced choice was refused once: warned */
} setup;

struct topo_tuner_ctx {
  setup *s;
  int nranks, nnodes;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static setup *cache_head;

static void file_stamp(const char *path, long long *mtime, long long *size) {
  struct stat st;
  *mtime = *size = -1;
  if (path[0] && stat(path, &st) == 0) {
    *mtime = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    *size = (long long)st.st_size;
  }
}

/* The first GPU's model from the driver, read once per process (lock-free after). */
static char detected_gpu[32];
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect_gpu(void) {
  char *buf = detected_gpu;
  size_t len = sizeof detected_gpu;
  snprintf(buf, len, "H200");
  DIR *d = opendir("/proc/driver/nvidia/gpus");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[PATH_LEN], line[256];
    snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%.200s/information", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "Model:", 6) != 0) continue;
      if (strstr(line, "H200")) snprintf(buf, len, "H200");
      else if (strstr(line, "H100") || strstr(line, "H800")) snprintf(buf, len, "H100");
      else if (strstr(line, "A100") || strstr(line, "A800")) snprintf(buf, len, "A100");
      break;
    }
    fclose(f);
    break; /* the first GPU decides: every rank of a node sees the same list */
  }
  closedir(d);
}

const char *topo_tuner_gpu_model(char *buf, size_t len) {
  const char *env = topo_env_str(TOPO_ENV_TUNER_GPU);
  if (env[0] && strcasecmp(env, "auto") != 0) {
    snprintf(buf, len, "%s", env);
    return buf;
  }
  pthread_once(&detect_once, detect_gpu);
  snprintf(buf, len, "%s", detected_gpu);
  return buf;
}

/* NCCL versions a tuner ABI version is offered by (ncclTunerPlugin_vN): the fallback when the
 * process has no ncclGetVersion to ask. */
static void abi_versions(int abi, int *lo, int *hi) {
  static const int range[][2] = {{21900, 22199}, {22200, 22299}, {22300, 22699},
                                 {22700, 22999}, {23000, 23199}, {23200, 99999}};
  int i = abi - 2;
  if (i < 0 || i > 5) {
    *lo = 0, *hi = 99999;
    return;
  }
  *lo = range[i][0];
  *hi = range[i][1];
}

int topo_tuner_nccl_version(void) { return topo_nccl_runtime_version(); }

static void free_setup(setup *s) {
  if (!s) return;
  topo_table_free(s->table);
  topo_rules_free(s->rules);
  topo_profile_free(&s->profile);
  topo_free(s);
}

/* Build a setup for `key`. Warnings for bad files are given by the loaders; only an
 * allocation failure fails the build. Called with cache_lock held. */
static topo_status build_setup(const setup_key *key, setup **out) {
  topo_status st = TOPO_OK;
  setup *s = topo_calloc(1, sizeof *s);
  if (!s) return TOPO_ERR_NOMEM;
  s->key = *key;

  topo_profile_key want = {
      .nranks = key->nranks, .nnodes = key->nnodes, .nccl_version = key->nccl_version};
  snprintf(want.gpu, sizeof want.gpu, "%s", key->gpu);
  if (key->profile[0]) {
    st = topo_profile_load(key->profile, &want, &s->profile);
    if (st == TOPO_ERR_NOMEM) goto fail;
    int lo, hi, v = s->profile.key.nccl_version;
    abi_versions(key->abi_version, &lo, &hi);
    if (st == TOPO_OK && !key->nccl_version && v > 0 && (v < lo || v > hi)) {
      TOPO_INFO(NCCL_INIT | NCCL_TUNING,
                "profile %s is for NCCL %d, outside what tuner ABI v%d "
                "runs under (%d..%d): not applied, NCCL's picks kept",
                s->profile.source, v, key->abi_version, lo, hi);
      topo_profile_free(&s->profile);
      topo_profile_builtin(key->gpu, &s->profile);
    } else if (st == TOPO_ERR_PARSE) {
      TOPO_INFO(NCCL_INIT | NCCL_TUNING,
                "profile %s has no section for this communicator (NCCL %d"
                ", %s, %d ranks, %d nodes): not applied, NCCL's picks kept",
                key->profile, key->nccl_version, key->gpu, key->nranks, key->nnodes);
    }
    st = TOPO_OK; /* IO / PARSE: the loader warned and left the built-in defaults */
  } else if (topo_profile_builtin(key->gpu, &s->profile) != TOPO_OK) {
    TOPO_WARN_ONCE("unknown GPU model '%s' (TOPO_TUNER_GPU); using %s defaults", key->gpu,
                   s->profile.source);
  }

  if (key->rules[0]) {
    st = topo_rules_load(key->rules, &s->rules);
    if (st == TOPO_ERR_NOMEM) goto fail;
    st = TOPO_OK; /* unreadable: warned, no rules */
  }

  if (topo_force_parse(key->force, &s->force) != TOPO_OK)
    TOPO_WARN_ONCE("TOPO_TUNER_FORCE='%s' is not algorithm,protocol[,channels]; ignored",
                   key->force);

  topo_model_init(&s->model, &s->profile, key->nranks, key->nnodes, key->ranks_per_domain);
  TOPO_CHECK_GOTO(topo_table_build(&s->model, &s->table), st, fail);
  if (topo_table_set_rules(s->table, s->rules, key->nnodes, key->nranks) != TOPO_OK)
    TOPO_WARN("TOPO_TUNER_RULES='%s': out of memory indexing the rules; no rules", key->rules);
  *out = s;
  return TOPO_OK;
fail:
  free_setup(s);
  return st;
}

static void make_key(const topo_tuner_args *a, setup_key *k) {
  memset(k, 0, sizeof *k);
  snprintf(k->profile, sizeof k->profile, "%s", topo_env_str(TOPO_ENV_TUNER_PROFILE));
  file_stamp(k->profile, &k->profile_mtime, &k->profile_size);
  snprintf(k->rules, sizeof k->rules, "%s", topo_env_str(TOPO_ENV_TUNER_RULES));
  file_stamp(k->rules, &k->rules_mtime, &k->rules_size);
  snprintf(k->force, sizeof k->force, "%s", topo_env_str(TOPO_ENV_TUNER_FORCE));
  topo_tuner_gpu_model(k->gpu, sizeof k->gpu);
  k->nccl_version = topo_tuner_nccl_version();
  k->abi_version = a->abi_version;
  k->nranks = a->nranks > 0 && a->nranks < (1u << 24) ? (int)a->nranks : 1;
  k->nnodes = a->nnodes > 0 && a->nnodes <= a->nranks ? (int)a->nnodes : 1;
  k->ranks_per_domain = a->ranks_per_domain > 0 && a->ranks_per_domain <= k->nranks
                            ? a->ranks_per_domain
                            : k->nranks / k->nnodes;
}

static int key_equal(const setup_key *a, const setup_key *b) {
  return strcmp(a->profile, b->profile) == 0 && a->profile_mtime == b->profile_mtime &&
         a->profile_size == b->profile_size && strcmp(a->rules, b->rules) == 0 &&
         a->rules_mtime == b->rules_mtime && a->rules_size == b->rules_size &&
         strcmp(a->force, b->force) == 0 && strcmp(a->gpu, b->gpu) == 0 && a->nranks == b->nranks &&
         a->nnodes == b->nnodes && a->ranks_per_domain == b->ranks_per_domain &&
         a->nccl_version == b->nccl_version && a->abi_version == b->abi_version;
}

topo_status topo_tuner_init(const topo_tuner_args *args, topo_tuner_ctx **out) {
  *out = NULL;
  topo_log_set_component("TOPO/Tuner");
  topo_log_set_logger(args->logger);
  topo_env_check_unknown();

  setup_key key;
  make_key(args, &key);
  topo_tuner_ctx *ctx = topo_calloc(1, sizeof *ctx);
  if (!ctx) {
    TOPO_WARN("tuner init: out of memory; NCCL's own choices stay in effect for this communicator");
    return TOPO_ERR_NOMEM;
  }

  topo_status st = TOPO_OK;
  int built = 0;
  pthread_mutex_lock(&cache_lock);
  setup *s = cache_head;
  while (s && !key_equal(&s->key, &key)) s = s->next;
  if (!s) {
    st = build_setup(&key, &s);
    if (st == TOPO_OK) {
      s->next = cache_head;
      cache_head = s;
      built = 1;
    }
  }
  if (st == TOPO_OK) s->refs++;
  pthread_mutex_unlock(&cache_lock);

  if (st != TOPO_OK) {
    topo_free(ctx);
    TOPO_WARN("tuner init: %s; NCCL's own choices stay in effect for this communicator",
              topo_status_str(st));
    return st;
  }
  ctx->s = s;
  ctx->nranks = key.nranks;
  ctx->nnodes = key.nnodes;

  int written = 0;
  /* Opt-in (TOPO_TUNER_CONSTANTS=1): the tuner keeps NCCL's own pick wherever it predicts no
   * clear gain, and NCCL's pick must then be NCCL's unmodified one. Measured on 2 x H200: with
   * the constants rewritten, NCCL's own picks moved (ReduceScatter 4 MB LL -> LL128, +5.8 %). */
  if (args->constants && topo_env_bool(TOPO_ENV_TUNER_CONSTANTS))
    written = topo_tuner_write_constants(&s->model, key.gpu, args->constants);
  TOPO_INFO(NCCL_INIT | NCCL_TUNING,
            "topo-tuner %s (v%d) comm %llx: %d ranks, %d nodes, %d per NVLink domain; profile %s;"
            " %d rules; force %s; table %s; %d NCCL constants calibrated",
            TOPO_VERSION, args->abi_version, (unsigned long long)args->comm_id, key.nranks,
            key.nnodes, key.ranks_per_domain, s->profile.source,
            s->rules ? topo_rules_count(s->rules) : 0, s->force.active ? key.force : "off",
            built ? "built" : "shared", written);
  if (built && s->profile.npoints == 0)
    TOPO_INFO(NCCL_INIT | NCCL_TUNING,
              "profile %s has no measured points (format < 2 or none "
              "measured): NCCL's picks kept",
              s->profile.source);
  else if (built)
    TOPO_INFO(NCCL_INIT | NCCL_TUNING, "profile %s: %d measured points, %d switch ranges",
              s->profile.source, s->profile.npoints, s->table->nswitch);
  *out = ctx;
  return TOPO_OK;
}

void topo_tuner_finalize(topo_tuner_ctx *ctx) {
  if (!ctx) return;
  setup *s = ctx->s, *dead = NULL;
  pthread_mutex_lock(&cache_lock);
  if (s && --s->refs == 0) {
    for (setup **p = &cache_head; *p; p = &(*p)->next)
      if (*p == s) {
        *p = s->next;
        break;
      }
    dead = s;
  }
  pthread_mutex_unlock(&cache_lock);
  free_setup(dead);
  topo_free(ctx);
}

static int nccl_clamps_channels(int algo) {
  return algo == NCCL_ALGO_RING || algo == NCCL_ALGO_TREE || algo == NCCL_ALGO_PAT;
}

/* One warning per setup the first time the forced choice is not allowed. */
static void force_refused(setup *s, int coll) {
  atomic_int *flag = &s->force_warned;
  if (atomic_load_explicit(flag, memory_order_relaxed) ||
      atomic_exchange_explicit(flag, 1, memory_order_relaxed))
    return;
  TOPO_WARN(
      "TOPO_TUNER_FORCE=%s: NCCL does not allow %s/%s for %s here; NCCL's own choice stands "
      "wherever it does not (warned once)",
      s->key.force, topo_nccl_algo_name(s->force.algo, TOPO_NCCL_FILE),
      topo_nccl_proto_name(s->force.proto, TOPO_NCCL_FILE),
      topo_nccl_func_name(coll, TOPO_NCCL_FILE));
}

/* One warning per rule the first time it matches a call whose entry NCCL does not allow. */
static void rule_refused(const setup *s, const topo_rule *r) {
  if (!r || !topo_rules_index_report_once(s->table->rules, r)) return;
  TOPO_WARN(
      "%s:%d: rule %s %s/%s matches but NCCL does not allow that algorithm/protocol here; "
      "passed over there (warned once)",
      s->key.rules, r->line, topo_nccl_func_name(r->coll, TOPO_NCCL_FILE),
      topo_nccl_algo_name(r->algo, TOPO_NCCL_FILE), topo_nccl_proto_name(r->proto, TOPO_NCCL_FILE));
}

void topo_tuner_get(const topo_tuner_ctx *ctx, int coll, size_t nbytes, int num_pipe_ops,
                    float *cost, int num_algo, int num_proto, int reg_buff, int *nchannels) {
  if (!ctx || !cost || !nchannels || num_algo <= 0 || num_proto <= 0) return;
  setup *s = ctx->s;
  int nch = 0;
  if (s->force.active) {
    if (topo_force_apply(&s->force, cost, num_algo, num_proto, &nch)) *nchannels = nch;
    else force_refused(s, coll); /* not allowed here: NCCL's own */
    return;
  }

  if (s->table->rules) {
    const topo_rule *ignored,
        *r = topo_table_rule(s->table, coll, nbytes, num_pipe_ops, reg_buff, cost, num_algo,
                             num_proto, TOPO_RULES_ALLOW_ALL, &ignored);
    rule_refused(s, ignored);
    if (r) {
      /* The pinned entry wins (0.0 is below every allowed entry); NCCL's other costs stay. */
      cost[r->algo * num_proto + r->proto] = 0.0f;
      *nchannels = nccl_clamps_channels(r->algo) ? r->nchannels : 0;
      return;
    }
  }
  if (coll < 0 || coll >= NCCL_NUM_FUNCTIONS) return;
  if (topo_table_keeps_nccl(s->table, coll, nbytes, reg_buff)) {
    /* no switch here: NCCL's pick stands, no minimum to find (what topo_table_apply would
     * answer: channels 0 = NCCL's own, written when NCCL has anything to select) */
    if (topo_table_selectable(cost, num_algo, num_proto)) *nchannels = 0;
    return;
  }
  int a = -1, p = -1;
  nch = topo_table_apply(s->table, coll, nbytes, num_pipe_ops, reg_buff, cost, num_algo, num_proto,
                         &a, &p);
  if (nch >= 0) *nchannels = nccl_clamps_channels(a) ? nch : 0;
}

void topo_tuner_get_pair(const topo_tuner_ctx *ctx, int coll, size_t nbytes, int collnet_support,
                         int nvls_support, int num_pipe_ops, int *algo, int *proto,
                         int *nchannels) {
  if (!ctx || !algo || !proto) return;
  setup *s = ctx->s;
  /* NCCL 2.21 runs the pair it gets without checking it: only what it supports here. */
  uint32_t allow = topo_force_v2_allowed(coll, collnet_support, nvls_support, ctx->nnodes);
  if (s->force.active) {
    if (allow >> (s->force.algo * NCCL_NUM_PROTOCOLS + s->force.proto) & 1) {
      *algo = s->force.algo;
      *proto = s->force.proto;
    } else {
      force_refused(s, coll); /* NCCL's own */
    }
    return;
  }
  if (s->table->rules) {
    const topo_rule *ignored,
        *r = topo_table_rule(s->table, coll, nbytes, num_pipe_ops, 0, NULL, NCCL_NUM_ALGORITHMS,
                             NCCL_NUM_PROTOCOLS, allow, &ignored);
    rule_refused(s, ignored);
    if (r) {
      *algo = r->algo;
      *proto = r->proto;
      return;
    }
  }
  /* The model, over what NCCL 2.21 supports here (CollNet is left to NCCL: nothing measured). */
  static const int candidates[] = {NCCL_ALGO_TREE, NCCL_ALGO_RING, NCCL_ALGO_NVLS};
  float best = -1.0f;
  for (int i = 0; i < 3; i++) {
    int a = candidates[i];
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      if (!(allow >> (a * NCCL_NUM_PROTOCOLS + p) & 1)) continue;
      float t = topo_table_time(s->table, coll, nbytes, num_pipe_ops, 0, a, p);
      if (t >= 0 && (best < 0 || t < best)) {
        best = t;
        *algo = a;
        *proto = p;
      }
    }
  }
  if (nchannels && best >= 0) *nchannels = 0;
}

void topo_tuner_chunk_size(const topo_tuner_ctx *ctx, int coll, size_t nbytes, int algo, int proto,
                           int nchannels, size_t *chunk_size) {
  (void)ctx, (void)coll, (void)nbytes, (void)algo, (void)proto, (void)nchannels, (void)chunk_size;
}
