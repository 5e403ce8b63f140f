// SPDX-License-Identifier: Apache-2.0
// NCCL's names in events to topo's ids (names.h): the collective, datatype, algorithm and protocol
// strings NCCL passes from profiler v2 on, looked up in NCCL's event spelling (common/nccl_vocab.h)
// through a lock-free cache keyed by the string's address. The adapters (profiler_abi.c) call the
// lookups on every event that names them, on any thread; the core resets the cache at a
// generation's first init.
#define _GNU_SOURCE 1 /* dl_iterate_phdr */
#include "names.h"

#include <link.h>
#include <stdatomic.h>
#include <stdint.h>

#include "nccl_vocab.h"
#include "trace_format.h"

/* NCCL passes the same static name strings again and again: a direct-mapped cache from the
 * pointer to the id, packed in one atomic word (pointer << 8 | trusted << 7 | id). A name inside
 * a read-only segment of a loaded object (a string literal, as NCCL's *ToString tables return)
 * cannot change and is trusted by pointer; any other (a stack or heap buffer, as in replays) is
 * compared with the cached name at every use, so a reused buffer is never misread. The
 * read-only ranges are collected at a generation's first init (topo_names_reset), not on the hot
 * path. */
#define NAME_CACHE    64
#define NAME_TRUSTED  0x80
#define MAX_RO_RANGES 256
static _Atomic(uint64_t) name_cache[4][NAME_CACHE];
static struct { uintptr_t start, end; } ro_ranges[MAX_RO_RANGES];
static int n_ro_ranges;

static int collect_ro(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  for (int i = 0; i < info->dlpi_phnum && n_ro_ranges < MAX_RO_RANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W)) continue;
    ro_ranges[n_ro_ranges].start = info->dlpi_addr + ph->p_vaddr;
    ro_ranges[n_ro_ranges].end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    n_ro_ranges++;
  }
  return 0;
}

static int read_only(const char *p) {
  uintptr_t a = (uintptr_t)p;
  for (int i = 0; i < n_ro_ranges; i++)
    if (a >= ro_ranges[i].start && a < ro_ranges[i].end) return 1;
  return 0;
}

static inline int same(const char *a, const char *b) {
  while (*a && *a == *b) {
    a++;
    b++;
  }
  return *a == *b;
}

static int lookup(int which, const char *name, const char *const *table, int n) {
  if (!name) return TOPO_UNKNOWN_U8;
  uint64_t key = (uint64_t)(uintptr_t)name;
  _Atomic(uint64_t) *slot = &name_cache[which][(key >> 3) & (NAME_CACHE - 1)];
  uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
  if (v && (v >> 8) == key) {
    int id = (int)(v & 0x7f);
    if (id < n && ((v & NAME_TRUSTED) || same(name, table[id]))) return id;
  }
  for (int i = 0; i < n; i++)
    if (name[0] == table[i][0] && same(name, table[i])) {
      uint64_t trusted = read_only(name) ? NAME_TRUSTED : 0;
      if (key < (1ull << 56))
        atomic_store_explicit(slot, key << 8 | trusted | (uint64_t)i, memory_order_relaxed);
      return i;
    }
  return TOPO_UNKNOWN_U8;
}
/* NCCL's event spelling of its names (common/nccl_vocab.h). */
int topo_names_func_id(const char *n) {
  return lookup(0, n, topo_nccl_func_names[TOPO_NCCL_EVENT], TOPO_NCCL_NUM_FUNCS);
}
int topo_names_datatype_id(const char *n) {
  return lookup(1, n, topo_nccl_datatype_names, TOPO_NCCL_NUM_DATATYPES);
}
int topo_names_algo_id(const char *n) {
  return lookup(2, n, topo_nccl_algo_names[TOPO_NCCL_EVENT], NCCL_NUM_ALGORITHMS);
}
int topo_names_proto_id(const char *n) {
  return lookup(3, n, topo_nccl_proto_names[TOPO_NCCL_EVENT], NCCL_NUM_PROTOCOLS);
}
int topo_names_datatype_size(int dt) {
  int size = topo_nccl_datatype_size(dt);
  return size ? size : 1;
}

void topo_names_reset(void) {
  n_ro_ranges = 0;
  for (int w = 0; w < 4; w++)
    for (int i = 0; i < NAME_CACHE; i++) atomic_store(&name_cache[w][i], 0);
  dl_iterate_phdr(collect_ro, NULL);
}
