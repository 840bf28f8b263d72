/*
 * crawler.h: the LRU crawler (crawler.c) and the item services it uses
 * from items.c.
 *
 * The crawler thread walks the MQ queues of the requested classes with a
 * cursor, then the classes' N chunks (slabs_tier_next_used), and reclaims
 * expired and flushed items without waiting for a client to ask for them.
 * `lru_crawler metadump` uses the same walk in the calling worker, in
 * batches that the protocol layer writes as its client reads them (`hash`
 * lists every class).  The admin entry points (lru_crawler_crawl,
 * lru_crawler_metadump_start and metadump_batch, lru_crawler_set_enabled)
 * are declared in items.h.
 */
#ifndef CRAWLER_H
#define CRAWLER_H

#include "item.h"

/* Start/stop the crawler thread (storage_start_threads / stop). */
int crawler_start(void);       /* 0 = ok */
void crawler_stop(void);

/* The LRU maintainer's look at the schedule of the crawler's own runs,
 * once a second: starts a run of the classes that are due (crawler.c's
 * AUTO_RETRY).  Nothing while the crawler is off. */
void crawler_auto_check(void);

/* What a run learnt of the items it left in a class: the schedule of the
 * crawler's own runs is made from it. */
#define CRAWL_TALLY_MINUTES 60
struct crawl_tally {
    uint64_t live;             /* items checked and left */
    uint64_t no_expiry;        /* ... of which never expire */
    /* ... of which expire within minute m from now, for the next hour */
    uint64_t by_minute[CRAWL_TALLY_MINUTES];
};
/* Count a live item with expiry time exptime (0: never). */
void crawl_tally_add(struct crawl_tally *t, rel_time_t exptime);

struct crawler_stats {
    bool ever_started;         /* the thread ran once (its stats are listed) */
    bool running;              /* a crawl is in progress */
    uint64_t starts;           /* crawls started */
};
void crawler_get_stats(struct crawler_stats *out);
void crawler_reset_stats(void);

/* A metadump line fits in this many bytes (URL-encoded key and fields). */
#define METADUMP_LINE_MAX (KEY_MAX_LENGTH * 3 + 160)

/* ---- items.c services for the crawler ----
 * The D forms take an item pinned by mq_cursor_next() and drop that pin;
 * the N forms take the offset of a chunk slabs_tier_next_used() found,
 * and find and lock its slot themselves (nitem_lock_chunk: one header
 * read, counted, before the lock).  Call them without item locks. */

/* Reclaim the item if it is expired or flushed, else count it in tally;
 * true if reclaimed.  Counts crawler_items_checked / crawler_reclaimed
 * for its class. */
bool items_crawl_check(item *it, struct crawl_tally *tally);
bool items_crawl_check_n(uint64_t off, struct crawl_tally *tally);
/* Format the item's metadump line ("key=... size=...\n") into buf if it
 * is still linked and alive; returns the length, 0 to skip it. */
size_t items_crawl_dump(item *it, char *buf, size_t size);
size_t items_crawl_dump_n(uint64_t off, char *buf, size_t size);

#endif
