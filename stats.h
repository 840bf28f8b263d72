/*
 * stats.h: the server's counters and the `stats` output helpers (stats.c).
 *
 * Per-thread counters (struct thread_stats, one per worker in
 * LIBEVENT_THREAD) take no lock: their owner writes them with STAT_INCR
 * (stat_counter.h) and readers sum them.  The global `stats` (struct
 * server_stats, defined in memcached.c) is guarded by stats_lock.
 */
#ifndef STATS_H
#define STATS_H

#include "clock.h"
#include "slab_class.h"
#include "stat_counter.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* memcached's LRU segments, in the order `stats items` lists their
 * hits_to_* lines; items_mq.h says which items of ours are in which */
enum lru_segment {
    LRU_HOT,
    LRU_WARM,
    LRU_COLD,
    LRU_TEMP,
    LRU_SEGMENTS
};

/* ---- per-thread statistics ---- */
struct slab_stats {
    stat_u64 set_cmds;
    stat_u64 get_hits;
    stat_u64 touch_hits;
    stat_u64 delete_hits;
    stat_u64 cas_hits;
    stat_u64 cas_badval;
    stat_u64 incr_hits;
    stat_u64 decr_hits;
};

struct thread_stats {
    stat_u64 get_cmds;
    stat_u64 get_misses;
    stat_u64 get_expired;
    stat_u64 get_flushed;
    stat_u64 touch_cmds;
    stat_u64 touch_misses;
    stat_u64 delete_misses;
    stat_u64 incr_misses;
    stat_u64 decr_misses;
    stat_u64 cas_misses;
    stat_u64 meta_cmds;
    stat_u64 bytes_read;
    stat_u64 bytes_written;
    stat_u64 flush_cmds;
    stat_u64 store_too_large;
    stat_u64 store_no_memory;
    stat_u64 conn_yields;
    stat_u64 auth_cmds;
    stat_u64 auth_errors;
    stat_u64 response_obj_oom;     /* replies cut off (conn_buf.c) */
    stat_u64 read_buf_oom;
    /* get hits by class and by the segment the item was in (hits_to_*) */
    stat_u64 lru_hits[MAX_NUMBER_OF_SLAB_CLASSES][LRU_SEGMENTS];
    struct slab_stats slab_stats[MAX_NUMBER_OF_SLAB_CLASSES];
    stat_u64 response_obj_bytes;
    stat_u64 read_buf_count;
    /* tiers (migrate.c): requests per class served by each zone, and all
     * storage requests (the clock of decay epochs) */
    stat_u64 tier_d_hits[MAX_NUMBER_OF_SLAB_CLASSES];
    stat_u64 tier_n_hits[MAX_NUMBER_OF_SLAB_CLASSES];
    stat_u64 tier_requests;
    /* N hits refused because the thread's in-flight budget was spent */
    stat_u64 tier_inflight_refused;
    /* N-bound values refused because its staging budget was spent */
    stat_u64 tier_staging_refused;
};

/* ---- global server statistics (memcached.c, under stats_lock) ---- */
struct server_stats {
    uint64_t total_items;
    uint64_t total_conns;
    uint64_t rejected_conns;
    uint64_t malloc_fails;
    uint64_t listen_disabled_num;
    uint64_t time_in_listen_disabled_us;
    uint64_t curr_conns;
    uint64_t reserved_fds;
    uint64_t conn_structs;
    uint64_t idle_kicks;
    uint64_t expired_unfetched;
    uint64_t evicted_unfetched;
    bool accepting_conns;
    rel_time_t started;
};
extern struct server_stats stats;
extern pthread_mutex_t stats_lock;

/* ---- stats output (stats.c) ---- */
typedef void (*ADD_STAT)(const char *key, uint16_t klen, const char *val,
                         uint32_t vlen, const void *cookie);
void append_stat(const char *name, ADD_STAT add_stats, void *c,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* ADD_STAT callback writing "STAT k v\r\n" (or "END\r\n" for klen 0) to c */
void append_ascii_stats(const char *key, uint16_t klen, const char *val,
                        uint32_t vlen, const void *cookie);
void server_stats(ADD_STAT add_stats, void *c);
void process_stat_settings(ADD_STAT add_stats, void *c);
void threadlocal_stats_aggregate(struct thread_stats *out);
/* Sum of the workers' tier_inflight_bytes gauges. */
uint64_t threadlocal_tier_inflight_bytes(void);
/* Sum of the workers' tier_staging_bytes gauges. */
uint64_t threadlocal_tier_staging_bytes(void);
void threadlocal_stats_reset(void);
void stats_reset(void);
/* per-key-prefix stats (stats detail) */
void stats_prefix_record_get(const char *key, size_t nkey, bool is_hit);
void stats_prefix_record_delete(const char *key, size_t nkey);
void stats_prefix_record_set(const char *key, size_t nkey);
char *stats_prefix_dump(int *length);
void stats_prefix_clear(void);

#endif
