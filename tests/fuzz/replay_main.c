// SPDX-License-Identifier: Apache-2.0
// Replays a fuzz target's seed corpus (every file of TOPO_CORPUS_DIR, and every prefix of each
// file) through LLVMFuzzerTestOneInput, so the normal build and CI exercise the fuzz entry points.
// Fails when the corpus is missing or empty; a crash fails the test by itself.
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(void) {
  DIR *d = opendir(TOPO_CORPUS_DIR);
  if (!d) {
    fprintf(stderr, "no corpus at %s\n", TOPO_CORPUS_DIR);
    return 1;
  }
  int files = 0;
  long runs = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", TOPO_CORPUS_DIR, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
      fclose(f);
      free(buf);
      continue;
    }
    fclose(f);
    for (long cut = 0; cut <= n; cut++) {
      /* a fresh copy of exactly `cut` bytes, so ASan sees any read past the end */
      uint8_t *copy = malloc(cut ? (size_t)cut : 1);
      memcpy(copy, buf, (size_t)cut);
      LLVMFuzzerTestOneInput(copy, (size_t)cut);
      free(copy);
      runs++;
    }
    free(buf);
    files++;
  }
  closedir(d);
  printf("replayed %d corpus files (%ld inputs)\n", files, runs);
  return files > 0 ? 0 : 1;
}
