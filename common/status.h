/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal status codes. Every module returns a topo_status; only the *_abi.c adapters translate
 * to ncclResult_t, and per DESIGN.md they answer ncclSuccess and fall back instead of failing NCCL.
 */
#ifndef TOPO_STATUS_H
#define TOPO_STATUS_H

typedef enum topo_status {
  TOPO_OK = 0,
  TOPO_ERR_NOMEM,       /* an allocation failed */
  TOPO_ERR_IO,          /* a file could not be opened, read or written */
  TOPO_ERR_PARSE,       /* malformed input (profile, rule, trace, env value) */
  TOPO_ERR_INVALID,     /* an argument out of its domain */
  TOPO_ERR_UNSUPPORTED, /* a version or feature we do not handle */
  TOPO_ERR_INTERNAL,    /* a broken invariant: a bug */
} topo_status;

/* A static, human-readable name for a status; never NULL. */
const char *topo_status_str(topo_status status);

/* Jump to the function's single cleanup label when an expression fails. */
#define TOPO_CHECK_GOTO(expr, st, label) \
  do {                                   \
    (st) = (expr);                       \
    if ((st) != TOPO_OK) goto label;     \
  } while (0)

#endif
