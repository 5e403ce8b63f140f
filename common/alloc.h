/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every heap allocation of the project goes through these wrappers, so tests can make the N-th
 * allocation fail (fault injection) and check that callers fall back instead of crashing.
 * Thread-safe. Hot paths (getCollInfo, profiler callbacks) never call them.
 */
#ifndef TOPO_ALLOC_H
#define TOPO_ALLOC_H
#include <stddef.h>

void *topo_malloc(size_t size);
void *topo_calloc(size_t count, size_t size);
void *topo_realloc(void *ptr, size_t size);
char *topo_strdup(const char *s);
void topo_free(void *ptr); /* accepts NULL */
/* Zero-filled memory of `size` bytes whose pages become resident only when first touched
 * (anonymous mmap, no swap reserved): for large tables used from one end. NULL on failure. */
void *topo_map(size_t size);
void topo_unmap(void *ptr, size_t size); /* accepts NULL */

/* Test hook: the next `n` allocations succeed, every later one fails until reset with n < 0. */
void topo_alloc_fail_after(long n);
/* Number of allocations made through the wrappers since process start (for tests). */
long topo_alloc_count(void);

#endif
