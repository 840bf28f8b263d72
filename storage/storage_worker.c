/*
 * storage_worker.c: the registry of the workers storage serves, and the
 * sums of their counters (storage_worker.h).
 *
 * Owns: the list of registered struct storage_worker, their indexes (each
 * worker's histogram slot, tier_reassign.h), and the sums that stats and
 * the tier thread read, tier_requests_total among them.
 *
 * Locks: none.  Registration happens on the main thread before any
 * reader or worker thread starts (thread creation orders it before
 * them); each worker bumps its own counters with relaxed atomics
 * (STAT_INCR, stat_counter.h) and a sum reads each once, relaxed: a
 * moment's approximation, which is all stats and period boundaries need.
 */
#include "config.h"
#include "storage_worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct storage_worker **workers;
static unsigned int nworkers;

void storage_worker_register(struct storage_worker *w)
{
    struct storage_worker **grown =
        realloc(workers, (nworkers + 1) * sizeof(*workers));
    if (grown == NULL) {
        perror("Can't register a worker");
        exit(EXIT_FAILURE);
    }
    workers = grown;
    w->index = nworkers;
    workers[nworkers++] = w;
}

void storage_workers_stats(struct storage_worker_stats *out)
{
    size_t n = sizeof(*out) / sizeof(stat_u64);
    stat_u64 *sum = (stat_u64 *)out;
    memset(out, 0, sizeof(*out));
    for (unsigned int i = 0; i < nworkers; i++) {
        stat_u64 *f = (stat_u64 *)&workers[i]->stats;
        for (size_t k = 0; k < n; k++) {
            STAT_ADD(sum[k], STAT_GET(f[k]));
        }
    }
}

void storage_workers_stats_reset(void)
{
    size_t n = sizeof(struct storage_worker_stats) / sizeof(stat_u64);
    for (unsigned int i = 0; i < nworkers; i++) {
        stat_u64 *f = (stat_u64 *)&workers[i]->stats;
        for (size_t k = 0; k < n; k++) {
            atomic_store_explicit(&f[k], 0, memory_order_relaxed);
        }
    }
}

uint64_t storage_workers_inflight_bytes(void)
{
    uint64_t sum = 0;
    for (unsigned int i = 0; i < nworkers; i++) {
        sum += atomic_load_explicit(&workers[i]->tier_inflight_bytes,
                                    memory_order_relaxed);
    }
    return sum;
}

uint64_t storage_workers_staging_bytes(void)
{
    uint64_t sum = 0;
    for (unsigned int i = 0; i < nworkers; i++) {
        sum += atomic_load_explicit(&workers[i]->tier_staging_bytes,
                                    memory_order_relaxed);
    }
    return sum;
}

void storage_workers_class_hits(unsigned int clsid, uint64_t *d,
                                uint64_t *n)
{
    *d = 0;
    *n = 0;
    for (unsigned int i = 0; i < nworkers; i++) {
        *d += STAT_GET(workers[i]->stats.tier_d_hits[clsid]);
        *n += STAT_GET(workers[i]->stats.tier_n_hits[clsid]);
    }
}

uint64_t tier_requests_total(void)
{
    uint64_t sum = 0;
    for (unsigned int i = 0; i < nworkers; i++) {
        sum += STAT_GET(workers[i]->stats.tier_requests);
    }
    return sum;
}
