/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's sweep: the forced settings (and NCCL's default, and --bench's tuner) in
 * rounds, each setting on a fresh communicator, every collective it applies to, every size, with
 * pruning and the time budget. Phase A runs with libtopo-tuner loaded (NCCL_TUNER_PLUGIN), phase
 * B without it: NCCL 2.28 never retries a tuner load that failed (or was refused with "none") in
 * a process, and keeps a loaded tuner while any communicator holds it. Called by topo_cal_run
 * (runner.c); the run's state is run_state.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "calibrate.h"
#include "gpu_comms.h"
#include "gpu_setup.h"
#include "gpu_sweep.h"
#include "gpu_timing.h"
#include "run_state.h"

/* Set what forces setting `s` at its communicator's init (TOPO_TUNER_FORCE, or NCCL_ALGO and
 * NCCL_PROTO with via_env); clear_force undoes it. */
static void set_force(const topo_cal_setting *s, int via_env) {
  if (s->kind != TOPO_CAL_FORCED) return;
  if (via_env) {
    topo_cal_set_env("NCCL_ALGO", topo_nccl_algo_name(s->algo, TOPO_NCCL_TABLE));
    topo_cal_set_env("NCCL_PROTO", topo_nccl_proto_name(s->proto, TOPO_NCCL_TABLE));
  } else {
    char force[64];
    topo_cal_setting_force_value(s, force, sizeof force);
    topo_cal_set_env("TOPO_TUNER_FORCE", force);
  }
}

static void clear_force(void) {
  topo_cal_set_env("TOPO_TUNER_FORCE", NULL);
  topo_cal_set_env("NCCL_ALGO", NULL);
  topo_cal_set_env("NCCL_PROTO", NULL);
}

/* What one collective of a setting measured, for its progress line. */
typedef struct coll_run {
  int npts, pruned_at;
  topo_cal_point first, last;
} coll_run;

/* Every size of one collective under setting `s` (result index si), in c->sizes order: stops
 * early after two sizes in a row more than --prune times slower than the best forced so far, or
 * on a stop request. Returns 0, 1 when this setting cannot go on (NCCL refused a call: the point
 * is recorded FAILED), -1 on a failure that ends the run. */
static int sweep_sizes(run_ctx *c, const topo_cal_setting *s, int si, int coll, const char *label,
                       coll_run *cr) {
  memset(cr, 0, sizeof *cr);
  cr->pruned_at = -1;
  int slow = 0;
  uint64_t last_bytes = 0;
  for (int z = 0; z < c->nsizes; z++) {
    size_t count;
    uint64_t b = topo_cal_coll_bytes(coll, c->sizes[z], c->r->nranks, &count);
    if (b == last_bytes) continue;
    last_bytes = b;
    topo_cal_point p;
    int mp = topo_cal_measure_point(c, s, coll, c->sizes[z], &p);
    if (mp < 0) return -1;
    p.setting = si;
    p.round = c->round;
    p.pair = c->pair;
    if (mp > 0) {
      if (c->leader)
        topo_cal_warn("%s %s %llu B failed: this setting stops here, the sweep goes on",
                      topo_nccl_func_name(coll, TOPO_NCCL_FILE), label,
                      (unsigned long long)p.bytes);
      topo_cal_results_add_point(c->r, &p);
      c->failed = 1;
      return 1;
    }
    int best = s->kind == TOPO_CAL_FORCED ? topo_cal_results_best_forced(c->r, coll, p.bytes) : -1;
    if (topo_cal_results_add_point(c->r, &p) < 0) return -1;
    if (!cr->npts) cr->first = p;
    cr->last = p;
    cr->npts++;
    if (c->o->verbose && c->leader)
      topo_cal_progress(
          "  %s %s %llu B: %.2f us (iqr %.1f%%)%s", topo_nccl_func_name(coll, TOPO_NCCL_FILE),
          label, (unsigned long long)p.bytes, p.stats.median, 100 * topo_cal_stats_spread(&p.stats),
          p.status == TOPO_CAL_MISMATCH   ? " not run as forced"
          : p.status == TOPO_CAL_REJECTED ? " rejected"
                                          : "");
    if (s->kind == TOPO_CAL_FORCED && best >= 0 && p.status == TOPO_CAL_OK &&
        topo_cal_slower_than(p.stats.median, c->r->points[best].stats.median, c->o->prune))
      slow++;
    else slow = 0;
    if (slow >= 2 && z + 1 < c->nsizes) {
      cr->pruned_at = z + 1;
      return 0;
    }
    if (c->stop) return 0;
  }
  return 0;
}

/* "[3/40] allreduce ring/simple 27 sizes: 8 B 7.10 us .. 1 GB 2790.3 us (busbw ...), 4.2 s". */
static void report_collective(const run_ctx *c, int coll, const char *label, const coll_run *cr,
                              double seconds) {
  double busbw = topo_cal_algbw(cr->last.bytes, cr->last.stats.median) *
                 topo_nccl_busbw_factor(coll, c->r->nranks);
  char fb[24], lb[24], pr[96] = "";
  topo_cal_format_bytes(cr->first.bytes, fb, sizeof fb);
  topo_cal_format_bytes(cr->last.bytes, lb, sizeof lb);
  if (cr->pruned_at >= 0)
    snprintf(pr, sizeof pr, "; larger sizes skipped (> %.0fx the best so far)", c->o->prune);
  topo_cal_progress(
      "[%d/%d] %-13s %-18s %2d sizes: %s %.2f us .. %s %.1f us (busbw %.1f GB/s), %.1f s%s",
      c->unit, c->nunits, topo_nccl_func_name(coll, TOPO_NCCL_FILE), label, cr->npts, fb,
      cr->first.stats.median, lb, cr->last.stats.median, busbw, seconds, pr);
}

/* One setting: a fresh communicator, every collective it applies to, every size. Returns 0 (a
 * setting lost in a one-process run marks the run failed and the sweep goes on) or -1. */
static int run_setting(run_ctx *c, const topo_cal_setting *s, int via_env) {
  char label[64], name[96];
  topo_cal_setting_label(s, label, sizeof label);
  snprintf(name, sizeof name, "topo-calibrate %s", label);
  set_force(s, via_env);
  if (c->log_on) {
    topo_cal_nccl_log_poll(&c->log);
    topo_cal_nccl_log_reset(&c->log);
  }
  double t0 = topo_cal_now_us();
  /* Channel counts: through TOPO_TUNER_FORCE's channel field in a communicator configured as the
   * default's (the shape the tuner runs in); minCTAs = maxCTAs only where forcing through
   * NCCL_ALGO/NCCL_PROTO (no other way) or for a beyond-reach count (more than NCCL's own). */
  int shape_ch = s->kind == TOPO_CAL_FORCED && (via_env || s->beyond_reach) ? s->nchannels : 0;
  int rc = topo_cal_comm_create(c, COMMS(c), shape_ch, name, NULL);
  if (rc) {
    clear_force();
    topo_cal_comm_destroy(c, COMMS(c), 1);
    if (c->pp->nprocs > 1) return -1;
    /* One process: this setting is lost, the sweep goes on. */
    topo_cal_warn("setting %s: no communicator; skipped", label);
    c->failed = 1;
    return 0;
  }
  shared_facts facts;
  if (topo_cal_learn_facts(c, &facts)) rc = -1;
  if (!rc && s->kind == TOPO_CAL_TUNER && facts.tuner_loaded == 0 && c->leader)
    topo_cal_warn(
        "tuner run: NCCL did not log loading the tuner plugin; the 'tuner' column may be NCCL's "
        "own choice");
  int si = topo_cal_results_add_setting(c->r, s);
  if (si < 0) rc = -1;
  static const int order[NCCL_NUM_FUNCTIONS] = {ncclFuncAllReduce, ncclFuncAllGather,
                                                ncclFuncReduceScatter, ncclFuncBroadcast,
                                                ncclFuncReduce};
  int broken = 0;
  for (int oi = 0; oi < NCCL_NUM_FUNCTIONS && !rc && !broken && !c->stop; oi++) {
    int coll = order[oi];
    if (!((c->o->colls >> coll) & 1u) || !topo_cal_setting_applies(s, coll, &c->r->allowed))
      continue;
    c->unit++;
    double tc = topo_cal_now_us();
    coll_run cr;
    int sz = sweep_sizes(c, s, si, coll, label, &cr);
    if (sz < 0) rc = -1;
    broken = sz > 0;
    c->unit_us += topo_cal_now_us() - tc;
    c->units_done++;
    if (c->leader && cr.npts)
      report_collective(c, coll, label, &cr, (topo_cal_now_us() - tc) / 1e6);
  }
  topo_cal_comm_destroy(c, COMMS(c), rc != 0 || broken);
  clear_force();
  topo_cal_debug("setting %s done in %.1f s", label, (topo_cal_now_us() - t0) / 1e6);
  return rc;
}

/* --time-budget: skip a forced setting when it and the default / tuner runs still to come would
 * not fit. Process 0 decides from its clock and every process follows (identical plans). */
static int over_budget(run_ctx *c, const topo_cal_setting *s) {
  const topo_cal_options *o = c->o;
  if (!(o->time_budget_s > 0)) return 0;
  int units = 0;
  for (int k = 0; k < NCCL_NUM_FUNCTIONS; k++)
    units += ((o->colls >> k) & 1u) && topo_cal_setting_applies(s, k, &c->r->allowed);
  int later =
      __builtin_popcount(o->colls) * ((o->bench ? 1 : 0) + (o->run_default || o->bench ? 1 : 0));
  double per = c->units_done ? c->unit_us / c->units_done : 2e6; /* us per (setting, collective) */
  double init = 3e6;                                             /* a communicator's init, us */
  int skip =
      topo_cal_now_us() - c->t_start + (units + later) * per + 3 * init > o->time_budget_s * 1e6;
  if (topo_cal_share_bytes(c, &skip, sizeof skip)) return 1;
  if (skip) {
    c->r->skipped_settings++;
    c->r->partial = 1;
    if (c->r->skipped_settings == 1 && c->leader)
      topo_cal_warn("--time-budget %.0f s: skipping the remaining forced settings",
                    o->time_budget_s);
  }
  return skip;
}

/* Rounds: round k runs every setting once, in topo_cal_round_order's rotation. A setting runs
 * on a fresh communicator of its own each round (TOPO_TUNER_FORCE and NCCL_ALGO are read at a
 * communicator's init), and its results are added once per round (point.round). Two default
 * entries are the A/A pair (point.pair 0 and 1). The result list holds one setting record per
 * (setting, round). */
static int run_rounds(run_ctx *c, const topo_cal_setting *set, int n, int via_env) {
  int rounds = c->o->rounds > 0 ? c->o->rounds : 1;
  int order[258];
  if (n > 258) n = 258;
  int rc = 0;
  for (int k = 0; k < rounds && !rc && !c->stop; k++) {
    topo_cal_round_order(n, k, order);
    for (int i = 0; i < n && !rc && !c->stop; i++) {
      const topo_cal_setting *s = &set[order[i]];
      if (s->kind == TOPO_CAL_FORCED && over_budget(c, s)) continue;
      c->round = k;
      c->pair = s->kind == TOPO_CAL_DEFAULT ? (order[i] == n - 1) : 0;
      rc = run_setting(c, s, via_env && s->kind == TOPO_CAL_FORCED);
    }
  }
  c->round = c->pair = 0;
  return rc;
}

/* Which way settings are forced: through libtopo-tuner (TOPO_TUNER_FORCE) when it is found and
 * not refused by --force-via env, else NCCL_ALGO / NCCL_PROTO. Sets c->tuner_path and
 * c->use_tuner_force; *tuner_file: the library exists. -1 when --force-via tuner has none. */
static int choose_forcing(run_ctx *c, int *tuner_file) {
  const topo_cal_options *o = c->o;
  topo_cal_find_tuner(c);
  *tuner_file = c->tuner_path[0] != '\0';
  if (o->force_via == TOPO_CAL_VIA_TUNER && !*tuner_file) {
    topo_cal_warn(
        "--force-via tuner: libtopo-tuner.so not found%s%s (build it, or pass --tuner PATH)",
        o->tuner ? " at " : "", o->tuner ? o->tuner : "");
    return -1;
  }
  c->use_tuner_force = *tuner_file && o->force_via != TOPO_CAL_VIA_ENV;
  if (o->bench && !*tuner_file && c->leader)
    topo_cal_warn(
        "--bench: libtopo-tuner.so not found (pass --tuner PATH): comparing NCCL's default with "
        "the oracle only");
  if (c->leader) {
    if (*tuner_file) topo_cal_progress("tuner plugin: %s", c->tuner_path);
    topo_cal_progress("forcing choices through %s", c->use_tuner_force
                                                        ? "TOPO_TUNER_FORCE (libtopo-tuner)"
                                                        : "NCCL_ALGO / NCCL_PROTO");
  }
  const char *nvls = getenv("NCCL_NVLS_ENABLE");
  if (c->leader && (!nvls || strcmp(nvls, "0") != 0))
    topo_cal_info("note: NCCL_NVLS_ENABLE is %s%s; NVLS is measured only where NCCL enables it",
                  nvls ? "set to " : "not set", nvls ? nvls : "");
  return 0;
}

/* The forced settings NCCL allows, with the progress count of (setting, collective) units over
 * every round; bench_units adds --bench's tuner run. Returns the number of settings. */
static int plan_forced(run_ctx *c, topo_cal_setting *plan, int cap, int bench_units) {
  const topo_cal_options *o = c->o;
  topo_cal_results *r = c->r;
  int nplan = topo_cal_plan_settings(o, &r->allowed, plan, cap);
  c->nunits = 0;
  for (int i = 0; i < nplan; i++)
    for (int k = 0; k < NCCL_NUM_FUNCTIONS; k++)
      c->nunits += ((o->colls >> k) & 1u) && topo_cal_setting_applies(&plan[i], k, &r->allowed);
  c->nunits += (o->run_default || o->bench ? 2 : 0) * __builtin_popcount(o->colls) +
               (bench_units ? __builtin_popcount(o->colls) : 0);
  c->nunits *= o->rounds > 0 ? o->rounds : 1;
  if (c->leader)
    topo_cal_progress("%d forced settings x %d sizes (%s what NCCL allows)", nplan, c->nsizes,
                      r->allowed_from_nccl ? "NCCL's table says" : "built-in rules for");
  for (int i = 0; i < nplan; i++)
    plan[i].beyond_reach = r->nccl_channels > 0 && plan[i].nchannels > r->nccl_channels;
  return nplan;
}

/* --bench's tuner run: libtopo-tuner on --profile, else on the profile fitted from phase A. */
static int run_bench_tuner(run_ctx *c) {
  const topo_cal_options *o = c->o;
  char tmp[1024];
  const char *prof = o->profile;
  if (!prof && c->use_tuner_force) {
    snprintf(tmp, sizeof tmp, "%s/topo-calibrate.%d.profile", c->workdir, (int)getpid());
    if (topo_cal_write_profile(c->r, tmp, NULL) < 0) return -1;
    prof = tmp;
    if (c->leader) topo_cal_progress("tuner run on the profile fitted above (%s)", tmp);
  }
  if (!prof) {
    if (c->leader)
      topo_cal_warn(
          "--bench with forcing through NCCL_ALGO needs --profile for the tuner run: tuner column "
          "skipped");
    return 0;
  }
  topo_cal_set_env("TOPO_TUNER_PROFILE", prof);
  topo_cal_setting t = {TOPO_CAL_TUNER, -1, -1, 0, 0};
  int rc = run_rounds(c, &t, 1, 0);
  topo_cal_set_env("TOPO_TUNER_PROFILE", NULL);
  return rc;
}

/* The next control communicator's id: over the current one before it goes (several processes). */
static int next_control_id(run_ctx *c, ncclUniqueId *id) {
  if (c->pp->nprocs <= 1) return ncclGetUniqueId(id) == ncclSuccess ? 0 : -1;
  if (c->pp->proc == 0 && ncclGetUniqueId(id) != ncclSuccess) return -1;
  return topo_cal_share_bytes(c, id, sizeof *id);
}

/* Phase A, libtopo-tuner loaded: its control communicator, the forced settings through
 * TOPO_TUNER_FORCE, --bench's tuner run. Falls back to forcing through NCCL_ALGO (phase B) when
 * NCCL did not load the tuner. Leaves the plan in plan[0..*nplan) and the next control id in *id. */
static int run_phase_a(run_ctx *c, ncclUniqueId *id, topo_cal_setting *plan, int cap, int *nplan) {
  const topo_cal_options *o = c->o;
  topo_cal_results *r = c->r;
  topo_cal_set_env("NCCL_TUNER_PLUGIN", c->tuner_path);
  if (topo_cal_control_up(c, id, 1, 1)) return -1;
  if (r->tuner_loaded == 0) {
    if (o->force_via == TOPO_CAL_VIA_TUNER) {
      topo_cal_warn("NCCL did not load %s (NCCL_TUNER_PLUGIN); see %s", c->tuner_path, c->log_path);
      topo_cal_comm_destroy(c, CONTROLS(c), 0);
      return -1;
    }
    if (c->leader)
      topo_cal_warn(
          "NCCL did not load the tuner plugin: forcing through NCCL_ALGO/NCCL_PROTO instead");
    c->use_tuner_force = 0;
  }
  r->force_via = c->use_tuner_force ? TOPO_CAL_VIA_TUNER : TOPO_CAL_VIA_ENV;
  *nplan = plan_forced(c, plan, cap, o->bench);
  int rc = 0;
  if (c->use_tuner_force) rc = run_rounds(c, plan, *nplan, 0);
  if (!rc && !c->stop && o->bench && r->tuner_loaded != 0) rc = run_bench_tuner(c);
  if (!rc && next_control_id(c, id)) rc = -1;
  topo_cal_comm_destroy(c, CONTROLS(c), rc != 0);
  return rc;
}

/* Phase B, NCCL_TUNER_PLUGIN=none: NCCL's default twice per round (A/A: two communicators of the
 * same config), interleaved with the forced settings when they go through NCCL_ALGO/NCCL_PROTO.
 * first: no phase A ran (this control communicator learns the machine, the plan is made here). */
static int run_phase_b(run_ctx *c, const ncclUniqueId *id, topo_cal_setting *plan, int cap,
                       int nplan, int first) {
  const topo_cal_options *o = c->o;
  topo_cal_set_env("NCCL_TUNER_PLUGIN", "none");
  if (topo_cal_control_up(c, id, first, 0)) return -1;
  if (first) {
    c->r->force_via = TOPO_CAL_VIA_ENV;
    nplan = plan_forced(c, plan, cap, 0);
  }
  topo_cal_setting both[258];
  int nboth = 0;
  if (!c->use_tuner_force)
    for (int i = 0; i < nplan && nboth < 256; i++) both[nboth++] = plan[i];
  if (o->run_default || o->bench) {
    topo_cal_setting d = {TOPO_CAL_DEFAULT, -1, -1, 0, 0};
    both[nboth++] = d;
    both[nboth++] = d;
  }
  int rc = 0;
  if (!c->stop && nboth) rc = run_rounds(c, both, nboth, !c->use_tuner_force);
  topo_cal_comm_destroy(c, CONTROLS(c), rc != 0);
  return rc;
}

int topo_cal_sweep(run_ctx *c) {
  const topo_cal_options *o = c->o;
  c->nsizes =
      topo_cal_plan_sizes(o->min_bytes, o->max_bytes, o->step, c->sizes, TOPO_CAL_MAX_SIZES);
  int tuner_file;
  if (choose_forcing(c, &tuner_file)) return -1;
  int phase_a = tuner_file && (c->use_tuner_force || o->bench);
  ncclUniqueId id;
  if (topo_cal_pick_first_id(c, &id)) {
    topo_cal_warn("cannot create or share the first NCCL unique id");
    return -1;
  }
  topo_cal_setting plan[256];
  int nplan = 0;
  topo_cal_set_env("TOPO_TUNER_FORCE", NULL);
  if (phase_a) {
    if (run_phase_a(c, &id, plan, 256, &nplan)) return -1;
    if (c->stop) return 0;
  }
  if (c->use_tuner_force && !o->run_default && !o->bench) return 0; /* no phase B needed */
  return run_phase_b(c, &id, plan, 256, nplan, !phase_a);
}
