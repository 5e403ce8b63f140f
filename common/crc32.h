/* SPDX-License-Identifier: Apache-2.0 */
/* CRC-32C (Castagnoli) used for trace block checksums. Table-driven, thread-safe, no state. */
#ifndef TOPO_CRC32_H
#define TOPO_CRC32_H
#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (start with 0) over `len` bytes of `data`. */
uint32_t topo_crc32c(uint32_t crc, const void *data, size_t len);

/* The CRC of A followed by B from crc(A), crc(B) and B's length, in O(log len_b) without the
 * bytes. The CRC being linear, it also gives a checksum of any range from two prefix checksums:
 * crc(B) = topo_crc32c_combine(crc(A), 0, len_b) ^ crc(A || B). */
uint32_t topo_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
#endif
