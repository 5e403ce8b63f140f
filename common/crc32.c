// SPDX-License-Identifier: Apache-2.0
// CRC-32C: the SSE4.2 crc32 instruction (8 bytes per step) where the CPU has it, else slicing-by-1
// with a table built at compile time by a constant expression generator. Same results either way.
// topo_crc32c_combine works on the polynomials themselves (GF(2), bit-reflected like the CRC).
#include "crc32.h"

#include <string.h>

#define P       0x82F63B78u
#define B1(c)   (((c)&1) ? ((c) >> 1) ^ P : (c) >> 1)
#define B8(c)   B1(B1(B1(B1(B1(B1(B1(B1(c))))))))
#define R2(n)   B8(n), B8(n + 1)
#define R4(n)   R2(n), R2(n + 2)
#define R8(n)   R4(n), R4(n + 4)
#define R16(n)  R8(n), R8(n + 8)
#define R32(n)  R16(n), R16(n + 16)
#define R64(n)  R32(n), R32(n + 32)
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
#define crc_sse42     crc_table
#endif

uint32_t topo_crc32c(uint32_t crc, const void *data, size_t len) {
  const unsigned char *p = data;
  crc = ~crc;
  crc = TOPO_CRC_HW() ? crc_sse42(crc, p, len) : crc_table(crc, p, len);
  return ~crc;
}

/* a * b modulo the CRC polynomial, both bit-reflected (bit 31 is the coefficient of x^0). */
static uint32_t mul_mod(uint32_t a, uint32_t b) {
  uint32_t p = 0;
  for (int i = 0; i < 32; i++) {
    if (a & (0x80000000u >> i)) p ^= b;
    b = (b & 1) ? (b >> 1) ^ P : b >> 1; /* b * x */
  }
  return p;
}

/* x^(8 * 2^k) modulo the polynomial, k = 0..63 (each entry the square of the one before; the
 * sequence repeats with period 31). */
static const uint32_t x8_pow2[64] = {
    0x00800000u, 0x00008000u, 0x82f63b78u, 0x6ea2d55cu, 0x18b8ea18u, 0x510ac59au, 0xb82be955u,
    0xb8fdb1e7u, 0x88e56f72u, 0x74c360a4u, 0xe4172b16u, 0x0d65762au, 0x35d73a62u, 0x28461564u,
    0xbf455269u, 0xe2ea32dcu, 0xfe7740e6u, 0xf946610bu, 0x3c204f8fu, 0x538586e3u, 0x59726915u,
    0x734d5309u, 0xbc1ac763u, 0x7d0722ccu, 0xd289cabeu, 0xe94ca9bcu, 0x05b74f3fu, 0xa51e1f42u,
    0x40000000u, 0x20000000u, 0x08000000u, 0x00800000u, 0x00008000u, 0x82f63b78u, 0x6ea2d55cu,
    0x18b8ea18u, 0x510ac59au, 0xb82be955u, 0xb8fdb1e7u, 0x88e56f72u, 0x74c360a4u, 0xe4172b16u,
    0x0d65762au, 0x35d73a62u, 0x28461564u, 0xbf455269u, 0xe2ea32dcu, 0xfe7740e6u, 0xf946610bu,
    0x3c204f8fu, 0x538586e3u, 0x59726915u, 0x734d5309u, 0xbc1ac763u, 0x7d0722ccu, 0xd289cabeu,
    0xe94ca9bcu, 0x05b74f3fu, 0xa51e1f42u, 0x40000000u, 0x20000000u, 0x08000000u, 0x00800000u,
    0x00008000u,
};

uint32_t topo_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  /* Appending len_b bytes multiplies A's checksum by x^(8 len_b): one product per set bit. */
  for (int k = 0; len_b; k++, len_b >>= 1)
    if (len_b & 1) crc_a = mul_mod(x8_pow2[k], crc_a);
  return crc_a ^ crc_b;
}
