/* SPDX-License-Identifier: Apache-2.0 */
/* CRC-32C (Castagnoli) used for trace block checksums. Table-driven, thread-safe, no state. */
#ifndef TOPO_CRC32_H
#define TOPO_CRC32_H
#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (start with 0) over `len` bytes of `data`. */
uint32_t topo_crc32c(uint32_t crc, const void *data, size_t len);
#endif
