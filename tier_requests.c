/*
 * tier_requests.c: the sum of the workers' tier_requests counters, the
 * clock that the tier thread's periods count in (tier_requests.h).
 *
 * Locks: none.  Each worker bumps its own counter with a relaxed atomic
 * (STAT_INCR, stat_counter.h); the sum reads each once, relaxed, so it is a
 * moment's approximation, which is all a period boundary needs.
 */
#include "config.h"
#include "tier_requests.h"

#include "settings.h"
#include "stat_counter.h"
#include "thread.h"

uint64_t tier_requests_total(void)
{
    uint64_t sum = 0;
    if (threads == NULL) {
        return 0;
    }
    for (int i = 0; i < settings.num_threads; i++) {
        sum += STAT_GET(threads[i].stats.tier_requests);
    }
    return sum;
}
