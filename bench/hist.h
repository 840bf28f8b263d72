/*
 * hist.h - log-linear latency histogram (HdrHistogram-like) for tcload.
 */
#ifndef TCLOAD_HIST_H
#define TCLOAD_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 6                       /* 64 linear sub-buckets */
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_MAX_SHIFT 40                     /* values up to ~2^46 ns */
#define HIST_BUCKETS ((HIST_MAX_SHIFT + 2) * HIST_SUB)

typedef struct {
    uint64_t counts[HIST_BUCKETS];
    uint64_t total;
    uint64_t min, max;
    double sum;
} hist_t;

void hist_init(hist_t *h);
void hist_add(hist_t *h, uint64_t v);
void hist_merge(hist_t *dst, const hist_t *src);
uint64_t hist_percentile(const hist_t *h, double p);   /* p in [0,100] */
double hist_mean(const hist_t *h);

#endif
