/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL's names in events (collective, datatype, algorithm, protocol; profiler v2 on) to topo's
 * ids (names.c). The adapters (profiler_abi.c) translate each descriptor's strings with these on
 * any thread, lock-free; the core resets them at a generation's first init.
 */
#ifndef TOPO_PROFILER_NAMES_H
#define TOPO_PROFILER_NAMES_H

/* String names NCCL passes to enum values; TOPO_UNKNOWN_U8 when unknown or NULL. Any thread:
 * a few loads and compares, at most one relaxed store, no allocation. */
int topo_names_func_id(const char *name);
int topo_names_datatype_id(const char *name);
int topo_names_algo_id(const char *name);
int topo_names_proto_id(const char *name);
/* Bytes per element of `datatype`, 1 when unknown. Pure. */
int topo_names_datatype_size(int datatype);
/* Forget the cache and collect the read-only segments of the objects loaded now (a name inside
 * one is trusted by its address). A generation's first init, under the core's mutex. */
void topo_names_reset(void);
#endif
