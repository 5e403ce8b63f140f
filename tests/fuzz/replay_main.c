// SPDX-License-Identifier: Apache-2.0
// Replays every file of a corpus directory through a libFuzzer entry point, so the normal build
// (gcc, no libFuzzer) exercises the fuzz targets on their seeds in CI. Usage: replay [dir...]; with
// no argument, the directory compiled in as TOPO_FUZZ_CORPUS. Fails when a directory is missing or
// holds no file.
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += got;
    if (len == cap) {
      uint8_t *grown = realloc(buf, cap *= 2);
      if (!grown) free(buf);
      buf = grown;
    }
  }
  fclose(f);
  if (!buf) return 0;
  LLVMFuzzerTestOneInput(buf, len);
  /* Every prefix too: truncated files are the commonest bad input. */
  for (size_t cut = 0; cut < len; cut += 1 + len / 64) LLVMFuzzerTestOneInput(buf, cut);
  free(buf);
  return 1;
}

int main(int argc, char **argv) {
  int files = 0;
#ifdef TOPO_FUZZ_CORPUS
  static char *fallback[] = {NULL, TOPO_FUZZ_CORPUS};
  if (argc < 2) {
    argc = 2;
    argv = fallback;
  }
#endif
  for (int i = 1; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    if (!d) {
      fprintf(stderr, "replay: cannot open corpus %s\n", argv[i]);
      return 1;
    }
    for (struct dirent *e; (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      files += replay_file(path);
    }
    closedir(d);
  }
  printf("replay: %d corpus files, no crash\n", files);
  return files > 0 ? 0 : 1;
}
