// SPDX-License-Identifier: Apache-2.0
// CRC-32C: the SSE4.2 crc32 instruction (8 bytes per step) where the CPU has it, else slicing-by-1
// with a table built at compile time by a constant expression generator. Same results either way.
#include "crc32.h"

#include <string.h>

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

static uint32_t crc_table(uint32_t crc, const unsigned char *p, size_t len) {
  while (len--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const unsigned char *p,
                                                            size_t len) {
  uint64_t c = crc;
  for (; len >= 8; len -= 8, p += 8) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    c = __builtin_ia32_crc32di(c, v);
  }
  uint32_t c32 = (uint32_t)c;
  while (len--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
#define TOPO_CRC_HW() __builtin_cpu_supports("sse4.2")
#else
#define TOPO_CRC_HW() 0
#define crc_sse42 crc_table
#endif

uint32_t topo_crc32c(uint32_t crc, const void *data, size_t len) {
  const unsigned char *p = data;
  crc = ~crc;
  crc = TOPO_CRC_HW() ? crc_sse42(crc, p, len) : crc_table(crc, p, len);
  return ~crc;
}
