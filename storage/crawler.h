/*
 * crawler.h: the LRU crawler (crawler.c).
 *
 * The crawler thread walks the MQ queues of the requested classes with a
 * cursor, then the classes' N chunks (slabs_tier_next_used), and reclaims
 * expired and flushed items without waiting for a client to ask for them.
 * `lru_crawler metadump` uses the same walk in the calling worker, in
 * batches that the protocol layer writes as its client reads them (`hash`
 * lists every class).  The admin entry points (lru_crawler_crawl,
 * lru_crawler_metadump_start and metadump_batch, lru_crawler_set_enabled)
 * are declared in items.h; the item services it walks with are
 * items_crawl.h's.
 */
#ifndef CRAWLER_H
#define CRAWLER_H

#include "stat_line.h"

/* Start/stop the crawler thread (storage_start_threads / stop). */
int crawler_start(void);       /* 0 = ok */
void crawler_stop(void);

/* The LRU maintainer's look at the schedule of the crawler's own runs,
 * once a second: starts a run of the classes that are due (crawler.c's
 * AUTO_RETRY).  Nothing while the crawler is off. */
void crawler_auto_check(void);

/* `stats`'s lru_crawler_running and lru_crawler_starts, listed once the
 * crawler has been started (as memcached lists them); storage.c puts them
 * in its listing (storage_stats_general). */
void crawler_stats(ADD_STAT add_stats, void *c);
/* `stats reset`: the crawls counted from zero */
void crawler_reset_stats(void);

#endif
