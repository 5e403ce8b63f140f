// SPDX-License-Identifier: Apache-2.0
// CRC-32C, slicing-by-1 with a table built at compile time by a constant expression generator.
#include "crc32.h"

#define P 0x82F63B78u
#define B1(c) (((c) & 1) ? ((c) >> 1) ^ P : (c) >> 1)
#define B8(c) B1(B1(B1(B1(B1(B1(B1(B1(c))))))))
#define R2(n) B8(n), B8(n + 1)
#define R4(n) R2(n), R2(n + 2)
#define R8(n) R4(n), R4(n + 4)
#define R16(n) R8(n), R8(n + 8)
#define R32(n) R16(n), R16(n + 16)
#define R64(n) R32(n), R32(n + 32)
#define R128(n) R64(n), R64(n + 64)
static const uint32_t table[256] = {R128(0u), R128(128u)};

uint32_t topo_crc32c(uint32_t crc, const void *data, size_t len) {
  const unsigned char *p = data;
  crc = ~crc;
  while (len--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}
