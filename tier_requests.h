/*
 * tier_requests.h: the clock of the tier periods (tier_requests.c).
 *
 * Decay epochs (migrate.c) and reassignment periods (tier_reassign.c) are
 * measured in storage requests, not seconds: the sum over worker threads
 * of their stats.tier_requests counter.
 */
#ifndef TIER_REQUESTS_H
#define TIER_REQUESTS_H

#include <stdint.h>

/* Storage requests served so far by all workers (0 before they exist).
 * `stats reset` zeroes the counters, so the sum can go back. */
uint64_t tier_requests_total(void);

#endif
