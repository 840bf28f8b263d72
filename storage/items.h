/*
 * items.h: the item API, the storage surface that the rest of the daemon
 * uses (through storage.h, which includes it).
 *
 * The protocol layer (proto_text.c) and the stats/admin code see the
 * items only through these functions.  They are zone-agnostic on purpose:
 * a lookup returns an item wherever it lives, D-zone or N-zone
 * (doc/design.md).
 *
 * References: every item returned here carries one reference owned by the
 * caller, released with item_remove().  Linked items also hold one reference
 * for the index.
 *
 * Items in the N-zone: a lookup that finds its key in the N-zone returns a
 * DRAM snapshot (ITEM_HEAP: a malloc'd copy of header, key and value, made
 * under the item lock; item_remove frees it), so replies never point into
 * NVM.  A value bound for the N-zone is filled in a DRAM staging buffer
 * (also ITEM_HEAP) that store_item writes to NVM.  Metadata that the
 * protocol changes on an item it holds goes through the setters below,
 * which write through to the stored item in either zone.
 */
#ifndef ITEMS_H
#define ITEMS_H

#include "clock.h"
#include "item.h"
#include "stat_line.h"
#include "storage_worker.h"

#define DONT_UPDATE false
#define DO_UPDATE true

enum delta_result_type {
    DELTA_OK = 0,
    DELTA_NON_NUMERIC,
    DELTA_EOM,
    DELTA_ITEM_NOT_FOUND,
    DELTA_ITEM_CAS_MISMATCH
};

enum delete_result_type {
    DELETE_OK = 0,
    DELETE_NOT_FOUND,
    DELETE_CAS_MISMATCH
};

enum crawler_result_type {
    CRAWLER_OK = 0,
    CRAWLER_RUNNING,
    CRAWLER_BADCLASS,
    CRAWLER_NOTSTARTED,
    CRAWLER_ERROR
};

/* ---- allocation ----
 * nbytes counts the value plus its trailing "\r\n".
 * item_size_ok says whether such an item could ever be stored (it tells
 * "object too large" from "out of memory" when item_alloc returns NULL).
 * A value bound for the N-zone gets a staging buffer charged to worker
 * w's tier_staging_limit until it is freed (w NULL: not charged); past
 * the limit item_alloc returns NULL, counted in w's tier_staging_refused
 * (doc/tiering.md "Values in flight"). */
bool item_size_ok(size_t nkey, client_flags_t flags, int nbytes);
item *item_alloc(const char *key, size_t nkey, client_flags_t flags,
                 rel_time_t exptime, int nbytes, struct storage_worker *w);
void item_remove(item *it);         /* drop the caller's reference */

/* ---- lookup ----
 * Expired and flushed items are unlinked on the way and reported as misses
 * (get_expired / get_flushed are counted in w's stats here).  do_update
 * bumps the item in its replacement queue and counts the access.
 *
 * These are the lookups whose result a client's reply holds.  *status
 * (enum item_lookup, item.h) tells a miss from a hit that could not be
 * served:
 *   - LOOKUP_MISS also covers a D item already held ITEM_REFCOUNT_LIMIT
 *     times (memcached answers such a fetch as a miss rather than let the
 *     16-bit count wrap);
 *   - LOOKUP_NO_MEMORY: the key is there but its N-zone value could not be
 *     copied out (no memory, or the thread's tier_inflight_limit spent by
 *     replies still waiting to be written).  Nothing was changed. */
#define ITEM_REFCOUNT_LIMIT 60000
item *item_get(const char *key, size_t nkey, struct storage_worker *w,
               bool do_update, enum item_lookup *status);
/* Same, but returns with the item lock for *hv held (hit or miss): the
 * caller may read and change the item's metadata (exptime, it_flags, cas)
 * and must call item_unlock(*hv) before doing I/O. */
item *item_get_locked(const char *key, size_t nkey, struct storage_worker *w,
                      bool do_update, uint64_t *hv,
                      enum item_lookup *status);
/* Lookup that also sets a new expiry time (touch, gat).  Without
 * want_value an N item comes back without its value (touch): read its
 * header fields only. */
item *item_touch(const char *key, size_t nkey, rel_time_t exptime,
                 struct storage_worker *w, bool want_value,
                 enum item_lookup *status);
#ifdef MEMCACHED_DEBUG
/* debugfail: the next n copies of N-zone items fail as if malloc had
 * failed (debug build only; tests of the out-of-memory paths). */
void items_debug_fail_snapshots(unsigned int n);
#endif

/* ---- updates ----
 * store_item links `it` according to cmd (set, add, replace, append,
 * prepend, cas).  cas_in != 0 demands the stored item's cas to match (the
 * cas command, meta C flag).  With cas_stale (meta I flag) a cas older than
 * the stored one stores the item anyway but marks it stale.  On STORED,
 * *cas_out (if not NULL) receives the new cas.  The caller keeps its
 * reference to `it`. */
enum store_item_type store_item(item *it, enum store_cmd cmd,
                                struct storage_worker *w, uint64_t cas_in,
                                uint64_t *cas_out, bool cas_stale);

/* incr/decr.  buf (INCR_MAX_STORAGE_LEN) receives the new value as text.
 * cas_in != 0 must match; *cas_out (if not NULL) gets the new cas; *it_out
 * (if not NULL) gets a referenced pointer to the updated item. */
enum delta_result_type add_delta(struct storage_worker *w, const char *key,
                                 size_t nkey, bool incr, uint64_t delta,
                                 char *buf, uint64_t cas_in,
                                 uint64_t *cas_out, item **it_out);

/* Unlink the key's version (cas_in != 0 must match); *clsid gets its
 * class on DELETE_OK.  Reads no value bytes and allocates nothing. */
enum delete_result_type item_delete(const char *key, size_t nkey,
                                    uint64_t cas_in, struct storage_worker *w,
                                    unsigned int *clsid);
/* Unlink a linked item (or the stored item a snapshot stands for); the
 * lock for its hash must be held, and held since `it` was looked up (a
 * snapshot's version is then known without re-reading it). */
void do_item_unlink(item *it, uint64_t hv);

/* Metadata setters: change it and the stored item it stands for (a D
 * header, or an N item's location word; exptime and cas of an N item are
 * rewritten in its NVM header, a counted write).  The do_ forms need the
 * lock of hv = hash of it's key held; item_set_flags takes it itself.
 * set/clear are it_flags bits among ITEM_FETCHED, ITEM_TOKEN_SENT and
 * ITEM_STALE. */
void do_item_set_exptime(item *it, uint64_t hv, rel_time_t exptime);
void do_item_set_flags(item *it, uint64_t hv, uint16_t set, uint16_t clear);
void item_set_flags(item *it, uint16_t set, uint16_t clear);
void do_item_set_cas(item *it, uint64_t hv, uint64_t cas);
/* Bump after a hit (bounded, like memcached's ITEM_UPDATE_INTERVAL). */
void item_bump(struct storage_worker *w, item *it, uint64_t hv);
/* Fresh cas value (0 when -C). */
uint64_t get_cas_id(void);
/* Start-up, restoring items: later cas ids are above `cas`. */
void items_cas_at_least(uint64_t cas);

/* flush_all: delay 0 invalidates everything now; otherwise at
 * realtime(delay). */
void items_flush(int64_t delay);

/* ---- admin commands (the slab ones are slabs.h's) ---- */
/* "all" or a comma list of class ids */
enum crawler_result_type lru_crawler_crawl(const char *classes);
/* lru_crawler metadump, storage's half: a walk that lists
 * "key=... exp=... la=... cas=... fetch=... cls=... size=...\n" lines for
 * the live items of the chosen classes ("all", "hash" or a comma list; D
 * items, then N items).  The protocol layer asks for one batch at a time,
 * as its client reads them, and writes the END after the last. */
struct metadump;
/* Takes one line (len bytes, '\n' ended); false stops the batch. */
typedef bool (*metadump_emit_fn)(void *ctx, const char *line, size_t len);
enum metadump_batch_result {
    METADUMP_MORE,       /* a batch went out; lines are left */
    METADUMP_END,        /* the last lines went out */
    METADUMP_STOPPED     /* emit refused a line */
};
/* *out: the walk, for metadump_batch, on CRAWLER_OK. */
enum crawler_result_type lru_crawler_metadump_start(const char *classes,
                                                    struct metadump **out);
/* Hands lines to emit until `bytes` or more went out or the walk ends. */
enum metadump_batch_result metadump_batch(struct metadump *md, size_t bytes,
                                          metadump_emit_fn emit, void *ctx);
void metadump_free(struct metadump *md);
bool lru_crawler_set_enabled(bool on);                /* enable/disable */
/* stats cachedump: malloc'd "ITEM key [N b; T s]\r\n...END\r\n", the
 * class's D items (MQ queues) then its N items (zone order) */
char *item_cachedump(unsigned int clsid, unsigned int limit,
                     unsigned int *bytes);

/* ---- stats ---- */
/* lines of `stats` owned by storage: curr_items, total_items, evictions,
 * reclaimed, expired_unfetched, evicted_unfetched, evicted_active,
 * crawler_reclaimed, crawler_items_checked, lrutail_reflocked, moves_*,
 * slab_reassign_*, slabs_moved, hash_power_level, hash_bytes,
 * hash_is_expanding, bytes, limit_maxbytes, malloc_fails,
 * total_malloced, ...; malloc_fails adds conn_malloc_fails, the
 * daemon's own */
void storage_stats_general(ADD_STAT add_stats, void *c,
                           uint64_t conn_malloc_fails);
void item_stats(ADD_STAT add_stats, void *c);         /* stats items */
void item_stats_sizes(ADD_STAT add_stats, void *c);   /* stats sizes */
void item_stats_sizes_enable(void);
void item_stats_sizes_disable(void);
/* also the tier counters and the workers' (struct storage_worker_stats) */
void item_stats_reset(void);
/* stats tier / stats tier classes (doc/tiering.md lists every name) */
void tier_stats(ADD_STAT add_stats, void *c);
void tier_stats_classes(ADD_STAT add_stats, void *c);
/* tier_policy, tier_placement and tier_promote, as both `stats settings`
 * and `stats tier` list them */
void tier_mode_stats(ADD_STAT add_stats, void *c);

#endif
