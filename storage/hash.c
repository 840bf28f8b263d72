/*
 * hash.c: the key hash used by the index (hash_desc.c) and the striped item
 * locks (item_locks.c).
 *
 * Owns hash_key().  Stateless, so no locks.
 *
 * Consumers split the 64-bit result: the low bits pick the index bucket and
 * the lock stripe, the high 32 bits are the key signature kept in the
 * bucket.  Both halves must therefore be well mixed on their own, which is
 * why every input word goes through a multiply and the result through a
 * full-width finalizer.
 *
 * The function reads the key eight bytes at a time (memcpy, so unaligned
 * keys are fine), folds each word into a running state with a
 * multiply/xor-shift step, folds the 0..7 tail bytes and the length in, and
 * finishes with two multiply/xor-shift rounds so that every input bit
 * affects every output bit.
 */
#include "config.h"
#include "hash.h"

#include <string.h>

/* Odd 64-bit constants with well spread bits (no structure needed beyond
 * that: they only have to make multiplication a good bit mixer). */
#define HK_SEED     0x2545f4914f6cdd1dULL
#define HK_WORD_MUL 0x9fb21c651e98df25ULL
#define HK_STEP_MUL 0xc2b2ae3d27d4eb4fULL
#define HK_STEP_ADD 0x165667b19e3779f9ULL
#define HK_FIN_MUL1 0xd6e8feb86659fd93ULL
#define HK_FIN_MUL2 0xa0761d6478bd642fULL

static inline uint64_t rotl64(uint64_t v, unsigned int r)
{
    return (v << r) | (v >> (64 - r));
}

static inline uint64_t load_word(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof(w));
    return w;
}

/* Little-endian load of the last 1..7 bytes; byte order only has to be
 * consistent within one process, but fixing it keeps results portable. */
static inline uint64_t load_tail(const unsigned char *p, size_t n)
{
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++) {
        w |= (uint64_t)p[i] << (8 * i);
    }
    return w;
}

/* Scramble one input word before it meets the state, so that words that
 * differ in a single bit change many state bits. */
static inline uint64_t scramble_word(uint64_t w)
{
    w *= HK_WORD_MUL;
    w ^= w >> 29;
    return w;
}

static inline uint64_t absorb(uint64_t state, uint64_t w)
{
    state ^= scramble_word(w);
    return rotl64(state, 27) * HK_STEP_MUL + HK_STEP_ADD;
}

static inline uint64_t finalize(uint64_t h)
{
    h ^= h >> 32;
    h *= HK_FIN_MUL1;
    h ^= h >> 29;
    h *= HK_FIN_MUL2;
    h ^= h >> 32;
    return h;
}

uint64_t hash_key(const void *key, size_t length)
{
    const unsigned char *p = key;
    uint64_t state = HK_SEED ^ ((uint64_t)length * HK_STEP_MUL);
    size_t words = length / 8;

    for (size_t i = 0; i < words; i++, p += 8) {
        state = absorb(state, load_word(p));
    }
    size_t tail = length & 7;
    if (tail != 0) {
        /* The length was mixed into the seed, so a tail of zero bytes
         * cannot collide with a shorter key. */
        state = absorb(state, load_tail(p, tail));
    }
    return finalize(state);
}
