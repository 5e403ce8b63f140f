// SPDX-License-Identifier: Apache-2.0
// Bounded whole-file reads (see file.h): one loop shared by the profile and rule loaders.
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"

static topo_status fail(topo_status st, char *why, size_t why_len, const char *text) {
  if (why && why_len) snprintf(why, why_len, "%s", text);
  return st;
}

topo_status topo_file_read(const char *path, size_t max_bytes, char **buf, size_t *len, char *why,
                           size_t why_len) {
  *buf = NULL;
  *len = 0;
  if (!path) return fail(TOPO_ERR_IO, why, why_len, "no path");
  /* O_NONBLOCK: opening a FIFO nobody writes (or a device) must not block; only a regular file
   * is read, then in blocking mode. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fail(TOPO_ERR_IO, why, why_len, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return fail(TOPO_ERR_IO, why, why_len, "not a regular file");
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return fail(TOPO_ERR_NOMEM, why, why_len, "out of memory");
  }
  topo_status st = TOPO_OK;
  char *data = NULL, text[64];
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      if (cap >= max_bytes) {
        snprintf(text, sizeof text, "larger than %zu bytes", max_bytes);
        st = fail(TOPO_ERR_IO, why, why_len, text);
        break;
      }
      cap = cap ? 2 * cap : 16384;
      if (cap > max_bytes) cap = max_bytes;
      char *grown = topo_realloc(data, cap);
      if (!grown) {
        st = fail(TOPO_ERR_NOMEM, why, why_len, "out of memory");
        break;
      }
      data = grown;
    }
    size_t got = fread(data + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) st = fail(TOPO_ERR_IO, why, why_len, "read error");
      break;
    }
  }
  fclose(f);
  if (st != TOPO_OK) {
    topo_free(data);
    return st;
  }
  *buf = data;
  *len = n;
  return TOPO_OK;
}
