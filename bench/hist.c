/*
 * hist.c - owns tcload's log-linear latency histogram: values (ns) below
 * 64 are exact, above that each power-of-two range is split into 64
 * linear sub-buckets, so a reported percentile is within 1/64 (1.6%) of
 * the true value.  Percentiles report the bucket's highest value,
 * clamped to the observed maximum.
 */
#include "hist.h"

#include <string.h>

void hist_init(hist_t *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

static unsigned bucket_of(uint64_t v)
{
    if (v < HIST_SUB)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - HIST_SUB_BITS;            /* >= 0 */
    if (shift > HIST_MAX_SHIFT)
        return HIST_BUCKETS - 1;
    return (shift + 1) * HIST_SUB + (unsigned)((v >> shift) - HIST_SUB);
}

static uint64_t bucket_high(unsigned b)
{
    if (b < HIST_SUB)
        return b;
    unsigned shift = b / HIST_SUB - 1;
    uint64_t low = (uint64_t)(HIST_SUB + b % HIST_SUB) << shift;
    return low + ((1ULL << shift) - 1);
}

void hist_add(hist_t *h, uint64_t v)
{
    h->counts[bucket_of(v)]++;
    h->total++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void hist_merge(hist_t *dst, const hist_t *src)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
    dst->total += src->total;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t hist_percentile(const hist_t *h, double p)
{
    if (h->total == 0)
        return 0;
    uint64_t want = (uint64_t)(p / 100.0 * (double)h->total + 0.999999);
    if (want < 1)
        want = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= want) {
            uint64_t v = bucket_high(i);
            if (v > h->max)
                v = h->max;
            if (v < h->min)
                v = h->min;
            return v;
        }
    }
    return h->max;
}

double hist_mean(const hist_t *h)
{
    return h->total ? h->sum / (double)h->total : 0.0;
}
