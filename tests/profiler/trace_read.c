// SPDX-License-Identifier: Apache-2.0
// Test-side trace reader (see trace_read.h).
#include "trace_read.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32.h"

int test_trace_read(const char *path, test_trace *t) {
  memset(t, 0, sizeof *t);
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  if (fread(&t->header, sizeof t->header, 1, f) != 1 ||
      memcmp(t->header.magic, TOPO_TRACE_MAGIC, 8) != 0) {
    fclose(f);
    return -1;
  }
  size_t cap = 0;
  for (;;) {
    uint32_t magic;
    if (fread(&magic, 4, 1, f) != 1) break;
    if (magic == TOPO_TRACE_FOOTER_MAGIC) {
      t->footer.magic = magic;
      if (fread((char *)&t->footer + 4, sizeof t->footer - 4, 1, f) == 1) t->has_footer = 1;
      else t->bad_block = 1;
      break;
    }
    topo_trace_block b;
    b.magic = magic;
    if (magic != TOPO_TRACE_BLOCK_MAGIC || fread((char *)&b + 4, sizeof b - 4, 1, f) != 1 ||
        b.count == 0 || b.count > TOPO_TRACE_MAX_BLOCK_RECORDS || b.index != t->blocks) {
      t->bad_block = 1;
      break;
    }
    if (t->count + b.count > cap) {
      cap = (t->count + b.count) * 2;
      t->records = realloc(t->records, cap * sizeof *t->records);
    }
    if (fread(t->records + t->count, TOPO_TRACE_RECORD_SIZE, b.count, f) != b.count ||
        topo_crc32c(0, t->records + t->count, (size_t)b.count * TOPO_TRACE_RECORD_SIZE) != b.crc) {
      t->bad_block = 1;
      break;
    }
    t->count += b.count;
    t->blocks++;
  }
  fclose(f);
  return 0;
}

void test_trace_free(test_trace *t) {
  free(t->records);
  memset(t, 0, sizeof *t);
}

size_t test_trace_select(const test_trace *t, int type, const topo_trace_record ***out) {
  size_t n = 0;
  *out = calloc(t->count + 1, sizeof **out);
  for (size_t i = 0; i < t->count; i++)
    if (t->records[i].type == type) (*out)[n++] = &t->records[i];
  return n;
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t test_trace_list(const char *dir, char ***paths) {
  size_t n = 0, cap = 16;
  *paths = calloc(cap, sizeof **paths);
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 6, ".trace")) continue;
    if (n == cap) *paths = realloc(*paths, (cap *= 2) * sizeof **paths);
    size_t sz = strlen(dir) + len + 2;
    (*paths)[n] = malloc(sz);
    snprintf((*paths)[n], sz, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  qsort(*paths, n, sizeof **paths, cmp);
  return n;
}

void test_trace_free_list(char **paths, size_t n) {
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
}

void test_trace_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}
