/*
 * items_crawl.h: the item engine's services for the threads above it
 * that walk it, the LRU crawler (crawler.c) and the LRU maintainer
 * (lru_maintainer.c), and what a crawl learns of the items it leaves.
 * The engine defines them (items_d.c, items_n.c, items_dump.c) and never
 * calls the crawler or the maintainer back.
 *
 * The D forms take an item pinned by mq_cursor_next() and drop that pin;
 * the N forms take the offset of a chunk slabs_tier_next_used() found,
 * and find and lock its slot themselves (nitem_lock_chunk: one header
 * read, counted, before the lock).  Call them without item locks.  A
 * crawl_tally is its walker's own (no lock).
 */
#ifndef ITEMS_CRAWL_H
#define ITEMS_CRAWL_H

#include "clock.h"
#include "item.h"

#include <stddef.h>
#include <stdint.h>

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
static inline void crawl_tally_add(struct crawl_tally *t, rel_time_t exptime)
{
    t->live++;
    if (exptime == 0) {
        t->no_expiry++;
    } else if (exptime >= current_time
               && exptime - current_time < CRAWL_TALLY_MINUTES * 60) {
        t->by_minute[(exptime - current_time) / 60]++;
    }
}

/* A metadump line fits in this many bytes (URL-encoded key and fields). */
#define METADUMP_LINE_MAX (KEY_MAX_LENGTH * 3 + 160)

/* Reclaim the item if it is expired or flushed, else count it in tally;
 * true if reclaimed.  Counts crawler_items_checked / crawler_reclaimed
 * for its class.  items_d.c, items_n.c. */
bool items_crawl_check(item *it, struct crawl_tally *tally);
bool items_crawl_check_n(uint64_t off, struct crawl_tally *tally);

/* Format the item's metadump line ("key=... size=...\n") into buf if it
 * is still linked and alive; returns the length, 0 to skip it.
 * items_dump.c. */
size_t items_crawl_dump(item *it, char *buf, size_t size);
size_t items_crawl_dump_n(uint64_t off, char *buf, size_t size);

/* The LRU maintainer's round: reclaim up to max dead items found at the
 * tails of class clsid's queues (MQ_TAIL_SEARCH items looked at per queue
 * and try); returns how many.  items_d.c. */
unsigned int items_reclaim_tails(unsigned int clsid, unsigned int max);

#endif
