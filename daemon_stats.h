/*
 * daemon_stats.h: the daemon's counters (daemon_stats.c defines the
 * global ones): the server's `stats` and each worker's struct
 * thread_stats.  What prints them is stats.c's, above every file that
 * bumps them.
 *
 * Per-thread counters (struct thread_stats, one per worker in
 * LIBEVENT_THREAD, lent to its connections as conn.thread_stats) take no
 * lock: their owner writes them with STAT_INCR (stat_counter.h) and
 * readers sum them.  The global `stats` (struct server_stats) is guarded
 * by stats_lock.
 */
#ifndef DAEMON_STATS_H
#define DAEMON_STATS_H

#include "clock.h"
#include "stat_counter.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- per-thread statistics ----
 * The per-class counters and those storage bumps are in struct
 * storage_worker_stats (storage_worker.h). */
struct thread_stats {
    stat_u64 get_cmds;
    stat_u64 get_misses;
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
    stat_u64 response_obj_bytes;
    stat_u64 read_buf_count;
};

/* ---- global server statistics (under stats_lock) ---- */
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

#endif
