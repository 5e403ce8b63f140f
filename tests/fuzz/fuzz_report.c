// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the whole analysis (rp_analyze: reader glue, clock alignment, join, sweep,
// steps) and every renderer (text, JSON, CSV, the HTML page) over one arbitrary file, binary
// trace or Kineto / Chrome JSON (two seed corpora: tests/fuzz/corpus/trace and .../kineto). The
// input goes through a memfd so the analysis opens it by path, as topo-report does.
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "report.h"
#include "report_analysis.h"
#include "report_render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz", 0);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  const char *paths[] = {path};
  rp_options opt = {.reorder_window = 64, .quiet = 1};
  rp_report r;
  if (rp_analyze(paths, 1, &opt, &r) == TOPO_OK) {
    FILE *null = fopen("/dev/null", "w");
    if (null) {
      rp_render_text(&r, null);
      rp_render_json(&r, null);
      for (int t = 0; t < RP_CSV_TABLES; t++) rp_render_csv_table(&r, t, null);
      fclose(null);
    }
    rp_render_html(&r, "/dev/null");
  }
  rp_report_free(&r);
  close(fd);
  return 0;
}
