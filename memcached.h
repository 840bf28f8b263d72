/*
 * memcached.h: what the daemon (memcached.c) offers the protocol layer,
 * and an umbrella over the subject headers for the protocol layer only.
 * Every other file includes just the headers it uses:
 *
 *   clock.h         the server clock (clock.c)
 *   settings.h      the settings struct and start-up parsing (settings.c)
 *   item.h          the item header, its flags, key and value limits
 *   slab_class.h    the range of slab class ids
 *   stat_counter.h  per-owner relaxed counters (STAT_INCR)
 *   stats.h         thread and server counters, stats output (stats.c)
 *   thread.h        worker threads, LIBEVENT_THREAD (thread.c)
 *   item_lock.h     the striped item locks (item_locks.c)
 *   conn.h          a connection, its response queue (conn.c)
 *   listen.h        listeners and accept() (listen.c)
 *   proto_text.h    the ASCII protocol (proto_text.c)
 *   hash.h          the key hash (hash.c)
 *   util.h          number parsing and formatting, base64 (util.c)
 *
 * Locking overview (details live in each file's header comment):
 *   - item_lock(hv)       striped mutexes (item_locks.c), guard an index
 *                         bucket and every item hashed to it
 *   - mq lock per class   items_mq.c, guards the class's queues
 *   - slabs lock          slabs.c, guards pages and free lists
 *   - stats_lock          memcached.c, guards struct server_stats
 *   - per-thread counters no lock: owners update their own counters
 *                         with relaxed atomics (STAT_INCR), readers sum
 *                         them.
 */
#ifndef MEMCACHED_H
#define MEMCACHED_H

#include "clock.h"
#include "conn.h"
#include "hash.h"
#include "item.h"
#include "item_lock.h"
#include "proto_text.h"
#include "settings.h"
#include "slab_class.h"
#include "stat_counter.h"
#include "stats.h"
#include "thread.h"
#include "util.h"

/* `shutdown` (-A): stop the server as SIGINT does, or as SIGUSR1 does
 * when `graceful` (a warm restart follows; doc/restart.md). */
void server_shutdown(bool graceful);

#endif
