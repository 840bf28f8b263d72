/*
 * lru_maintainer.h: the LRU maintainer thread (lru_maintainer.c); the
 * D-zone service it uses from items_d.c is items_crawl.h's.
 *
 * With `lru_maintainer` on (memcached's default; `-o no_lru_maintainer`
 * turns it off) a thread looks at the tails of every class's MQ queues
 * and reclaims the expired and flushed items it finds there, counted in
 * `reclaimed` as memcached's maintainer counts them, so their memory goes
 * back to the free chunks without waiting for a client, an eviction or
 * the crawler.  It moves HOT's oldest items into COLD (items_mq.h
 * mq_age_hot), which changes their segment and not their place: the MQ
 * keeps its own order (doc/tiering.md "Segments").  Each round also runs
 * the page automover (slabs_automove.h), and each second the LRU
 * crawler's schedule (crawler.h crawler_auto_check).
 */
#ifndef LRU_MAINTAINER_H
#define LRU_MAINTAINER_H

#include "stat_line.h"

/* Start/stop the thread (storage_start_threads / storage_stop_threads);
 * start returns 0 when running. */
int lru_maintainer_start(void);
void lru_maintainer_stop(void);

/* `stats`'s lru_maintainer_juggles (the thread's rounds over all
 * classes), listed when the maintainer is on, as memcached lists it;
 * storage.c puts it in its listing (storage_stats_general). */
void lru_maintainer_stats(ADD_STAT add_stats, void *c);

#endif
