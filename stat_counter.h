/*
 * stat_counter.h: counters that one thread writes and others sum.
 *
 * Only the owner writes a counter; readers (stats) sum them.  STAT_INCR
 * uses relaxed atomics so that neither side takes a lock and sanitizers see
 * no race, while the owner's increment stays a plain add.
 */
#ifndef STAT_COUNTER_H
#define STAT_COUNTER_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint64_t stat_u64;

#define STAT_ADD(field, n) \
    atomic_store_explicit(&(field), \
        atomic_load_explicit(&(field), memory_order_relaxed) + (n), \
        memory_order_relaxed)
#define STAT_INCR(field) STAT_ADD(field, 1)
#define STAT_GET(field) atomic_load_explicit(&(field), memory_order_relaxed)

#endif
