/*
 * test_crc32c.c: crc32c.c: the published CRC-32C check value and the
 * iSCSI vectors (RFC 3720, B.4) from both implementations, the table one
 * and the instruction one (skipped where the CPU has no SSE4.2), the two
 * agreeing on every length and alignment of a random buffer, short and
 * past the instruction's three-stretch rounds, and a CRC continued over
 * two calls equal to the CRC of the whole.
 */
#include "crc32c.h"
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

struct vector {
    const char *name;
    unsigned char bytes[64];
    size_t len;
    uint32_t crc;
};

static void fill_vectors(struct vector *v)
{
    v[0] = (struct vector){ .name = "\"123456789\"", .len = 9,
                            .crc = 0xE3069283u };
    memcpy(v[0].bytes, "123456789", 9);
    v[1] = (struct vector){ .name = "32 zero bytes", .len = 32,
                            .crc = 0x8A9136AAu };
    v[2] = (struct vector){ .name = "32 bytes of 0xff", .len = 32,
                            .crc = 0x62A8AB43u };
    memset(v[2].bytes, 0xff, 32);
    v[3] = (struct vector){ .name = "0x00..0x1f", .len = 32,
                            .crc = 0x46DD794Eu };
    v[4] = (struct vector){ .name = "0x1f..0x00", .len = 32,
                            .crc = 0x113FDB5Cu };
    for (int i = 0; i < 32; i++) {
        v[3].bytes[i] = (unsigned char)i;
        v[4].bytes[i] = (unsigned char)(31 - i);
    }
    v[5] = (struct vector){ .name = "nothing", .len = 0, .crc = 0 };
}

static void check_vectors(const char *impl, crc_fn f)
{
    struct vector v[6];
    fill_vectors(v);
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uint32_t got = f(0, v[i].bytes, v[i].len);
        ok(got == v[i].crc, "%s: crc32c(%s) = 0x%08X (want 0x%08X)", impl,
           v[i].name, got, v[i].crc);
    }
}

/* Every length up to 2400 (past three rounds of the instruction's three
 * stretches) at every alignment up to 8, on random bytes. */
static void check_agree(void)
{
    static unsigned char buf[2420];
    unsigned int mismatches = 0, n = 0;
    srand(21);
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (unsigned char)rand();
    }
    for (size_t align = 0; align < 8; align++) {
        for (size_t len = 0; len <= 2400; len++) {
            uint32_t seed = (uint32_t)rand();
            n++;
            if (crc32c_sw(seed, buf + align, len)
                    != crc32c_hw(seed, buf + align, len)) {
                mismatches++;
            }
        }
    }
    ok(mismatches == 0, "table and instruction agree on %u buffers "
       "(%u differ)", n, mismatches);
}

/* A long buffer whose CRC is known independently: 1 MiB of zeros is
 * checked against 4096 continued CRCs of 256 zeros (the table one). */
static void check_long(void)
{
    static unsigned char zeros[1 << 20];
    uint32_t piecewise = 0;
    for (size_t at = 0; at < sizeof(zeros); at += 256) {
        piecewise = crc32c_sw(piecewise, zeros + at, 256);
    }
    ok(crc32c_hw(0, zeros, sizeof(zeros)) == piecewise,
       "instruction: 1 MiB at once equals the table's 256 bytes at a time");
}

/* crc(a then b) computed in one call and continued over two. */
static void check_continue(const char *impl, crc_fn f)
{
    const char *s = "tiercached seals every N item with its CRC-32C";
    size_t n = strlen(s);
    uint32_t whole = f(0, s, n);
    unsigned int bad = 0;
    for (size_t cut = 0; cut <= n; cut++) {
        if (f(f(0, s, cut), s + cut, n - cut) != whole) {
            bad++;
        }
    }
    ok(bad == 0, "%s: continued over two calls at each of %zu cuts, the "
       "same CRC (%u differ)", impl, n + 1, bad);
}

int main(void)
{
    check_vectors("table", crc32c_sw);
    check_continue("table", crc32c_sw);
    if (crc32c_hw_available()) {
        check_vectors("instruction", crc32c_hw);
        check_continue("instruction", crc32c_hw);
        check_agree();
        check_long();
    } else {
        skip("the CPU has no SSE4.2 crc32 instruction: vectors");
        skip("the CPU has no SSE4.2 crc32 instruction: continued");
        skip("the CPU has no SSE4.2 crc32 instruction: agreement");
        skip("the CPU has no SSE4.2 crc32 instruction: 1 MiB");
    }
    ok(crc32c(0, "123456789", 9) == 0xE3069283u,
       "crc32c() (the one the server uses) gives the check value");
    return done_testing();
}
