/*
 * crc32c.c: CRC-32C (crc32c.h), the checksum that seals N items and the
 * N-zone's superblock (doc/restart.md "Items and their seal").
 *
 * Owns two implementations and the choice between them.  Where the CPU
 * has SSE4.2 (asked at run time with __builtin_cpu_supports, so one build
 * runs on any x86-64) its crc32 instruction takes 8 bytes at a time: one
 * instruction per word, which is what keeps a SET's cost and a warm
 * restart's scan of every item small.  The instruction's result is ready
 * only a few cycles after it starts, so a long buffer is taken in rounds
 * of three neighbouring stretches whose CRCs are computed side by side and
 * then joined: the first's CRC is carried over the second's length (a
 * multiplication by a power of x, linear, so four table lookups) and the
 * second's added, then the same with the third.  Elsewhere, a
 * table-driven "slicing by 8" that looks up eight tables per 8 bytes.
 * The tables are built once, on first use.  Both implementations compute
 * the same function; the unit test (t/unit/test_crc32c.c) checks them
 * against known vectors and against each other.
 *
 * Locks: none.  The tables are written once under pthread_once and only
 * read after.
 */
#include "config.h"
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define CRC32C_HAVE_SSE42 1
#endif

/* x^32 + x^28 + ... (Castagnoli), bit-reversed as the reflected CRC
 * shifts right */
#define CRC32C_POLY 0x82F63B78u

/* ---- tables ---- */

/* Bytes of each of the three stretches the instruction's rounds take. */
#define STRETCH 256

static uint32_t table[8][256];
/* skip[k][b]: the CRC state whose byte k is b, all else 0, carried over
 * STRETCH zero bytes */
static uint32_t skip[4][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* table[0]: the CRC of one byte; table[k]: of that byte followed by k zero
 * bytes, so that eight lookups advance the CRC by eight bytes at once. */
static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int bit = 0; bit < 8; bit++) {
            c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1u)));
        }
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int k = 1; k < 8; k++) {
            uint32_t prev = table[k - 1][i];
            table[k][i] = (prev >> 8) ^ table[0][prev & 0xffu];
        }
    }
    /* carrying a state over zero bytes is linear: carry each of its 32
     * bits, then any byte's value is the sum of its bits' */
    uint32_t bit[32];
    for (int j = 0; j < 32; j++) {
        uint32_t c = 1u << j;
        for (int z = 0; z < STRETCH; z++) {
            c = (c >> 8) ^ table[0][c & 0xffu];
        }
        bit[j] = c;
    }
    for (int k = 0; k < 4; k++) {
        for (uint32_t b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int j = 0; j < 8; j++) {
                if (b & (1u << j)) {
                    v ^= bit[8 * k + j];
                }
            }
            skip[k][b] = v;
        }
    }
}

uint32_t crc32c_sw(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;
    uint32_t c = ~crc;
    pthread_once(&table_once, table_init);
    /* bytes are assembled explicitly, so the result does not depend on
     * the host's byte order */
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8
                           | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
        c = table[7][lo & 0xffu] ^ table[6][(lo >> 8) & 0xffu]
            ^ table[5][(lo >> 16) & 0xffu] ^ table[4][lo >> 24]
            ^ table[3][b[4]] ^ table[2][b[5]] ^ table[1][b[6]]
            ^ table[0][b[7]];
        b += 8;
        n -= 8;
    }
    while (n > 0) {
        c = (c >> 8) ^ table[0][(c ^ *b++) & 0xffu];
        n--;
    }
    return ~c;
}

/* ---- the crc32 instruction ---- */

#ifdef CRC32C_HAVE_SSE42
/* Compiled for SSE4.2 whatever the build's target: called only once the
 * CPU has said it has the instruction. */
static uint64_t load64(const unsigned char *b)
{
    uint64_t w;
    memcpy(&w, b, sizeof(w));           /* x86 loads unaligned words */
    return w;
}

/* The state c carried over STRETCH zero bytes. */
static uint32_t skip_stretch(uint32_t c)
{
    return skip[0][c & 0xffu] ^ skip[1][(c >> 8) & 0xffu]
        ^ skip[2][(c >> 16) & 0xffu] ^ skip[3][c >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const unsigned char *b, size_t n)
{
    uint64_t c = ~crc;
    if (n >= 3 * STRETCH) {
        pthread_once(&table_once, table_init);
    }
    while (n >= 3 * STRETCH) {
        uint64_t c2 = 0, c3 = 0;
        for (const unsigned char *end = b + STRETCH; b < end; b += 8) {
            c = _mm_crc32_u64(c, load64(b));
            c2 = _mm_crc32_u64(c2, load64(b + STRETCH));
            c3 = _mm_crc32_u64(c3, load64(b + 2 * STRETCH));
        }
        c = skip_stretch((uint32_t)c) ^ (uint32_t)c2;
        c = skip_stretch((uint32_t)c) ^ (uint32_t)c3;
        b += 2 * STRETCH;
        n -= 3 * STRETCH;
    }
    while (n >= 8) {
        c = _mm_crc32_u64(c, load64(b));
        b += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    if (n & 4) {
        uint32_t w;
        memcpy(&w, b, sizeof(w));
        c32 = _mm_crc32_u32(c32, w);
        b += 4;
    }
    if (n & 2) {
        uint16_t w;
        memcpy(&w, b, sizeof(w));
        c32 = _mm_crc32_u16(c32, w);
        b += 2;
    }
    if (n & 1) {
        c32 = _mm_crc32_u8(c32, *b);
    }
    return ~c32;
}
#endif

bool crc32c_hw_available(void)
{
#ifdef CRC32C_HAVE_SSE42
    return __builtin_cpu_supports("sse4.2");
#else
    return false;
#endif
}

uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n)
{
#ifdef CRC32C_HAVE_SSE42
    if (crc32c_hw_available()) {
        return crc32c_sse42(crc, p, n);
    }
#endif
    return crc32c_sw(crc, p, n);
}

uint32_t crc32c(uint32_t crc, const void *p, size_t n)
{
    return crc32c_hw(crc, p, n);
}
