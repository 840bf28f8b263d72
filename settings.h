/*
 * settings.h: the one global `settings` struct (settings.c).
 *
 * Written only during start-up (settings_init, settings_parse,
 * settings_check, all on the main thread before any other thread exists)
 * and by what memcached also lets change at run time: the admin commands
 * of proto_text.c (verbosity, stats detail, lru and lru_crawler tuning,
 * slab automove) and flush_all (oldest_live, oldest_cas; items.c).
 * Everything else only reads it.
 */
#ifndef SETTINGS_H
#define SETTINGS_H

#include "clock.h"
#include "listen.h"
#include "nvm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* tier_policy=: which placement and migration rules run (doc/tiering.md) */
enum tier_policy {
    TIER_POLICY_HMCACHED = 0,    /* HMCached: hotness-driven migration */
    TIER_POLICY_UNI,             /* HM-UNI: placement by capacity, no moves */
    TIER_POLICY_TLC,             /* HM-TLC: every N hit promoted */
    TIER_POLICY_DRAM,            /* N-zone unused */
    TIER_POLICY_NVM,             /* every item in the N-zone */
    TIER_POLICY_DUALLRU          /* Fogcached: segmented LRU in each zone */
};

/* tier_placement=: where a new key is stored */
enum tier_placement {
    TIER_PLACE_DRAM_FIRST = 0,   /* D while it has free chunks, else N */
    TIER_PLACE_NVM               /* the paper: N first */
};

/* tier_reassign=: how D pages move between slab classes (tier_reassign.c) */
enum tier_reassign {
    TIER_REASSIGN_DP = 0,        /* HMCached: optimal split by DP */
    TIER_REASSIGN_GREEDY,        /* the same optimum by marginal gain */
    TIER_REASSIGN_PSA,           /* Carra & Michiardi: by misses per page */
    TIER_REASSIGN_NONE           /* calcified: pages never move */
};
enum protocol { ascii_prot = 3, binary_prot, negotiating_prot };

struct settings {
    struct listen_config listen;  /* where and how many clients (listen.h) */
    size_t maxbytes;              /* -m, DRAM item memory */
    int verbose;
    rel_time_t oldest_live;       /* flush_all: items older are invalid */
    uint64_t oldest_cas;          /* flush_all: items with lower cas invalid */
    int evict_to_free;            /* 0 with -M */
    double factor;                /* -f */
    int chunk_size;               /* -n */
    int num_threads;              /* -t */
    int num_threads_per_udp;
    char prefix_delimiter;        /* -D */
    int detail_enabled;           /* stats detail on */
    int reqs_per_event;           /* -R */
    bool use_cas;                 /* !-C */
    enum protocol binding_protocol;
    int item_size_max;            /* -I */
    int slab_page_size;
    int slab_chunk_size_max;
    bool sasl;
    bool lru_crawler;
    uint32_t lru_crawler_sleep;
    uint32_t lru_crawler_tocrawl;
    bool lru_maintainer_thread;
    bool lru_segmented;
    int hot_lru_pct;
    int warm_lru_pct;
    double hot_max_factor;
    double warm_max_factor;
    int temporary_ttl;
    bool temp_lru;
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
    bool hash_expand;             /* !no_hashexpand */
    int hashpower_init;
    int tail_repair_time;
    int slab_reassign;            /* memcached always on since 1.5 */
    int slab_automove;
    double slab_automove_ratio;
    unsigned int slab_automove_window;
    double slab_automove_freeratio;
    const char *hash_algorithm;
    char *pid_file;
    char *username;
    bool daemonize;
    bool enable_coredumps;        /* -r */

    /* the N-zone and its policies (-o nvm_*, tier_*; doc/tiering.md) */
    struct nvm_config nvm;        /* nvm.size == 0: no N-zone */
    enum tier_policy tier_policy;
    enum tier_placement tier_placement;
    bool tier_promote_async;      /* tier_promote=async */
    uint32_t tier_threshold_init; /* tier_threshold */
    uint32_t tier_adjust_period;  /* requests to a class per adjustment */
    uint64_t tier_decay_period;   /* requests per decay epoch */
    uint32_t tier_mq_queues;      /* MQ queues per class (Q) */
    enum tier_reassign tier_reassign;
    uint64_t tier_reassign_period;/* requests per reassignment period */
    uint32_t tier_reassign_rate;  /* page moves per period at most */
    size_t tier_inflight_limit;   /* bytes of N values in flight to clients
                                   * per worker thread (items.c) */
};


extern struct settings settings;

/* A policy's name and the policy of a name (tier_policy.c's registry). */
const char *tier_policy_name(enum tier_policy p);
bool tier_policy_by_name(const char *name, enum tier_policy *out);
static inline bool tier_enabled(void)
{
    return settings.nvm.size > 0 && settings.tier_policy != TIER_POLICY_DRAM;
}

/* Start-up, main thread, in this order: memcached's defaults, then the
 * command line (exits with usage text, version or one error line where
 * memcached does), then the checks that need every option known. */
void settings_init(void);
void settings_parse(int argc, char **argv);
void settings_check(void);

#endif
