// SPDX-License-Identifier: Apache-2.0
// Allocation wrappers with a failure-injection hook (see alloc.h).
#include "alloc.h"

#include <stdatomic.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

static atomic_long fail_countdown = -1; /* < 0: never fail */
static atomic_long alloc_calls;

static int should_fail(void) {
  atomic_fetch_add_explicit(&alloc_calls, 1, memory_order_relaxed);
  long left = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
  while (left >= 0) {
    if (left == 0) return 1;
    if (atomic_compare_exchange_weak(&fail_countdown, &left, left - 1)) return 0;
  }
  return 0;
}

void *topo_malloc(size_t size) { return should_fail() ? NULL : malloc(size ? size : 1); }
void *topo_calloc(size_t count, size_t size) {
  return should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}
void *topo_realloc(void *ptr, size_t size) {
  return should_fail() ? NULL : realloc(ptr, size ? size : 1);
}
char *topo_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = topo_malloc(n);
  if (copy) memcpy(copy, s, n);
  return copy;
}
void topo_free(void *ptr) { free(ptr); }
void *topo_map(size_t size) {
  if (should_fail()) return NULL;
  void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}
void topo_unmap(void *ptr, size_t size) {
  if (ptr) munmap(ptr, size ? size : 1);
}
void topo_alloc_fail_after(long n) { atomic_store(&fail_countdown, n); }
long topo_alloc_count(void) { return atomic_load(&alloc_calls); }
