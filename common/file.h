/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-file reads for the small text inputs (tuner profiles, rule files). Called at init, never on
 * a hot path. Thread-safe; touches only its arguments.
 */
#ifndef TOPO_FILE_H
#define TOPO_FILE_H
#include <stddef.h>

#include "status.h"

/* Read all of the regular file `path` (at most `max_bytes`) into a new buffer the caller releases
 * with topo_free. On success *buf and *len hold the bytes (not NUL-terminated). On failure *buf is
 * NULL, `why` (may be NULL) names the fault in a few words ("No such file or directory", "not a
 * regular file", "larger than 4194304 bytes", "out of memory"), and the status is TOPO_ERR_IO or
 * TOPO_ERR_NOMEM. Never blocks on a FIFO or device: anything but a regular file is refused
 * unread. Logs nothing: the caller says what it falls back to. */
topo_status topo_file_read(const char *path, size_t max_bytes, char **buf, size_t *len, char *why,
                           size_t why_len);
#endif
