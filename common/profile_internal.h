/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the tuner-profile files share and nothing else includes: limits, the link-class names,
 * the term checks and order of the in-memory profile (profile.c) that the reader (profile_read.c)
 * and writer (profile_write.c) apply too.
 */
#ifndef TOPO_PROFILE_INTERNAL_H
#define TOPO_PROFILE_INTERNAL_H

#include "profile.h"

#define TOPO_PROFILE_MAX_TERMS 65536 /* terms, and points, per section */

/* "nvlink", "pci", "net", by enum topo_link_class. */
extern const char *const topo_profile_link_names[TOPO_LINK_COUNT];

/* A key field "" or "*": matches any GPU. */
int topo_profile_gpu_is_any(const char *gpu);
/* The order terms are kept in: (coll, algo, proto, nchannels, min_bytes); <0, 0, >0. */
int topo_profile_term_cmp(const topo_profile_term *a, const topo_profile_term *b);
/* t is of the key (coll, algo, proto, nchannels). */
int topo_profile_term_of_key(const topo_profile_term *t, int coll, int algo, int proto, int nch);

#endif
