/*
 * crawler.h: the LRU crawler (crawler.c) and the item services it uses
 * from items.c.
 *
 * The crawler thread walks the MQ queues of the requested classes with a
 * cursor and reclaims expired and flushed items without waiting for a
 * client to ask for them.  `lru_crawler metadump` uses the same walk,
 * synchronously, in the calling worker.  The admin entry points
 * (lru_crawler_crawl, lru_crawler_metadump, lru_crawler_set_enabled) are
 * declared in items.h.
 */
#ifndef CRAWLER_H
#define CRAWLER_H

#include "memcached.h"

/* Start/stop the crawler thread (storage_start_threads / stop). */
int crawler_start(void);       /* 0 = ok */
void crawler_stop(void);

struct crawler_stats {
    bool running;              /* a crawl is in progress */
    uint64_t starts;           /* crawls started */
};
void crawler_get_stats(struct crawler_stats *out);
void crawler_reset_stats(void);

/* ---- items.c services for the crawler ----
 * Both take an item pinned by mq_cursor_next() and drop that pin. */

/* Reclaim the item if it is expired or flushed; true if reclaimed.
 * Counts crawler_items_checked / crawler_reclaimed for its class. */
bool items_crawl_check(item *it);
/* Format the item's metadump line ("key=... size=...\n") into buf if it
 * is still linked and alive; returns the length, 0 to skip it. */
size_t items_crawl_dump(item *it, char *buf, size_t size);

#endif
