// SPDX-License-Identifier: Apache-2.0
// The tuner-profile writer (see profile.h): one section exactly as the reader takes it back,
// every number in the shortest text that reads back to the same double. Called by
// topo-calibrate, topo-report fit and the tests.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_vocab.h"
#include "profile.h"
#include "profile_internal.h"

/* The shortest text that reads back to the same double: plain decimals ("370", "0.825") unless an
 * exponent form is shorter ("1e-07"). */
static void fmt_double(char *buf, size_t size, double v) {
  char exp_form[40] = "", fixed[64] = "";
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(exp_form, sizeof exp_form, "%.*g", prec, v);
    if (strtod(exp_form, NULL) == v) break;
  }
  if (fabs(v) < 1e15) {
    for (int dec = 0; dec <= 20; dec++) {
      snprintf(fixed, sizeof fixed, "%.*f", dec, v);
      if (strtod(fixed, NULL) == v) break;
      fixed[0] = '\0';
    }
  }
  snprintf(buf, size, "%s", fixed[0] && strlen(fixed) <= strlen(exp_form) ? fixed : exp_form);
}

topo_status topo_profile_write(FILE *f, const topo_profile *p) {
  if (!f || !p) return TOPO_ERR_INVALID;
  char a[40], b[40], c[40];
  fprintf(f, "topo-profile %d\n", p->npoints > 0 ? TOPO_PROFILE_VERSION : 1);
  char nr[16], nn[16], nv[16];
  snprintf(nr, sizeof nr, "%d", p->key.nranks);
  snprintf(nn, sizeof nn, "%d", p->key.nnodes);
  snprintf(nv, sizeof nv, "%d", p->key.nccl_version);
  fprintf(f, "section gpu=%s nranks=%s nnodes=%s nccl=%s\n",
          topo_profile_gpu_is_any(p->key.gpu) ? "*" : p->key.gpu, p->key.nranks > 0 ? nr : "*",
          p->key.nnodes > 0 ? nn : "*", p->key.nccl_version > 0 ? nv : "*");
  fmt_double(a, sizeof a, p->launch_us);
  fprintf(f, "launch_us %s\n", a);
  fprintf(f, "max_channels %d\n", p->max_channels);
  fprintf(f, "nvls %s\n", p->nvls > 0 ? "yes" : p->nvls == 0 ? "no" : "unknown");
  for (int i = 0; i < TOPO_LINK_COUNT; i++) {
    fmt_double(a, sizeof a, p->link[i].bw_gbs);
    fmt_double(b, sizeof b, p->link[i].lat_us);
    fprintf(f, "link %s bw_gbs=%s lat_us=%s\n", topo_profile_link_names[i], a, b);
  }
  for (int i = 0; i < NCCL_NUM_PROTOCOLS; i++) {
    fmt_double(a, sizeof a, p->proto[i].bw_eff);
    fmt_double(b, sizeof b, p->proto[i].lat_us);
    fmt_double(c, sizeof c, p->proto[i].ch_bw_gbs);
    fprintf(f, "proto %s bw_eff=%s lat_us=%s ch_bw_gbs=%s\n",
            topo_nccl_proto_name(i, TOPO_NCCL_FILE), a, b, c);
  }
  for (int i = 0; i < p->nterms; i++) {
    const topo_profile_term *t = &p->terms[i];
    fmt_double(a, sizeof a, t->lat_us);
    fmt_double(b, sizeof b, t->bw_gbs);
    fmt_double(c, sizeof c, t->rel_err);
    fprintf(f,
            "term %s %s %s channels=%d lat_us=%s bw_gbs=%s min_bytes=%llu max_bytes=%llu "
            "rel_err=%s npoints=%d\n",
            topo_nccl_func_name(t->coll, TOPO_NCCL_FILE),
            topo_nccl_algo_name(t->algo, TOPO_NCCL_FILE),
            topo_nccl_proto_name(t->proto, TOPO_NCCL_FILE), t->nchannels, a, b,
            (unsigned long long)t->min_bytes, (unsigned long long)t->max_bytes, c, t->npoints);
  }
  for (int i = 0; i < p->npoints; i++) {
    const topo_profile_point *t = &p->points[i];
    fmt_double(a, sizeof a, t->median_us);
    fmt_double(b, sizeof b, t->noise_us);
    fprintf(f, "point %s %s %s channels=%d bytes=%llu median_us=%s noise_us=%s%s\n",
            topo_nccl_func_name(t->coll, TOPO_NCCL_FILE),
            topo_nccl_algo_name(t->algo, TOPO_NCCL_FILE),
            topo_nccl_proto_name(t->proto, TOPO_NCCL_FILE), t->nchannels,
            (unsigned long long)t->bytes, a, b,
            t->is_default < 0 ? ""
            : t->is_default   ? " default=1"
                              : " default=0");
  }
  return ferror(f) ? TOPO_ERR_IO : TOPO_OK;
}
