/*
 * settings.h: the one global `settings` struct (settings.c).
 *
 * Written only during start-up (settings_parse.h: settings_init,
 * settings_parse, settings_check, all on the main thread before any other
 * thread exists)
 * and by what memcached also lets change at run time: the admin commands
 * of proto_admin.c (verbosity, stats detail, lru and lru_crawler tuning,
 * slab automove) and flush_all (oldest_live, oldest_cas; items.c).
 * Everything else only reads it.  What those commands write is read by
 * other threads while they run, so those fields are atomics (plain reads
 * are loads, cheap on every target we build for; the writers store with
 * relaxed order: nothing else is published with them), and flush_all's
 * are read and written with __atomic builtins.
 */
#ifndef SETTINGS_H
#define SETTINGS_H

#include "clock.h"
#include "listen_config.h"
#include "nvm_config.h"
#include "tier_config.h"
#include "tls_config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum protocol { ascii_prot = 3, binary_prot, negotiating_prot };

struct settings {
    struct listen_config listen;  /* where and how many clients */
    size_t maxbytes;              /* -m, DRAM item memory */
    _Atomic int verbose;          /* run time: verbosity */
    rel_time_t oldest_live;       /* flush_all: items older are invalid */
    uint64_t oldest_cas;          /* flush_all: items with lower cas invalid */
    int evict_to_free;            /* 0 with -M */
    double factor;                /* -f */
    int chunk_size;               /* -n */
    int num_threads;              /* -t */
    int num_threads_per_udp;
    char prefix_delimiter;        /* -D */
    _Atomic int detail_enabled;   /* run time: stats detail on|off */
    int reqs_per_event;           /* -R */
    bool use_cas;                 /* !-C */
    enum protocol binding_protocol;
    int item_size_max;            /* -I */
    int slab_page_size;
    int slab_chunk_size_max;
    bool sasl;                    /* -S (proto_sasl.c) */
    char *auth_file;              /* -Y: user:password lines (proto_auth.c) */
    _Atomic bool lru_crawler;     /* run time: lru_crawler enable|disable */
    _Atomic uint32_t lru_crawler_sleep;     /* run time: lru_crawler sleep */
    _Atomic uint32_t lru_crawler_tocrawl;   /* run time: ... tocrawl */
    bool lru_maintainer_thread;
    /* run time: lru mode, lru tune, lru temp_ttl */
    _Atomic bool lru_segmented;
    _Atomic int hot_lru_pct;
    _Atomic int warm_lru_pct;
    _Atomic double hot_max_factor;
    _Atomic double warm_max_factor;
    _Atomic int temporary_ttl;
    _Atomic bool temp_lru;
    int idle_timeout;
    unsigned int logger_watcher_buf_size;
    unsigned int logger_buf_size;
    unsigned int read_buf_mem_limit;
    bool track_sizes;
    bool shutdown_command;        /* -A */
    bool flush_enabled;           /* !-F */
    bool dump_enabled;            /* !-X */
    bool watch_enabled;           /* !-W */
    bool lock_memory;             /* -k */
    bool large_pages;             /* -L */
    char *memory_file;            /* -e: D-zone item memory in this file
                                     (memfile.h; doc/restart.md) */
    bool hash_expand;             /* !no_hashexpand */
    int hashpower_init;
    int tail_repair_time;
    int slab_reassign;            /* memcached always on since 1.5 */
    _Atomic int slab_automove;    /* run time: slabs automove */
    _Atomic double slab_automove_ratio;
    unsigned int slab_automove_window;
    double slab_automove_freeratio;
    const char *hash_algorithm;
    char *pid_file;
    char *username;
    bool daemonize;
    bool stop_plan;               /* --stop-plan: print it and exit */
    bool enable_coredumps;        /* -r */
    struct tls_config tls;        /* -Z and ssl_* */

    /* the N-zone and its policies (-o nvm_*, tier_*; doc/tiering.md) */
    struct nvm_config nvm;        /* nvm.size == 0: no N-zone */
    struct tier_config tier;      /* tier_config.h */
};


extern struct settings settings;

/* Descriptors memcached reports as reserved for each worker thread
 * (`stats` reserved_fds); a connection is refused while the open ones plus
 * these reach -c (doc/protocol.md "Connections"). */
#define RESERVED_FDS_PER_THREAD 5

/* A run-time change of one of the atomic fields above. */
#define SETTING_STORE(field, value) \
    atomic_store_explicit(&settings.field, (value), memory_order_relaxed)

static inline bool tier_enabled(void)
{
    return settings.nvm.size > 0 && settings.tier.policy != TIER_POLICY_DRAM;
}

#endif
