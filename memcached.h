/*
 * memcached.h: declarations shared by every part of the daemon.
 *
 * Owns the shapes that cross file boundaries: the settings struct (one,
 * global, written only during start-up and by the few admin commands that
 * memcached also lets change it), the item header, the connection and its
 * response queue, per-thread statistics and the global server counters.
 *
 * Locking overview (details live in each file's header comment):
 *   - item_lock(hv)       striped mutexes (thread.c), guard an index bucket
 *                         and every item hashed to it
 *   - mq lock per class   items_mq.c, guards the class's queues
 *   - slabs lock          slabs.c, guards pages and free lists
 *   - stats_lock          memcached.c, guards struct server_stats
 *   - thread_stats.mutex  never taken on the request path: owners update
 *                         their own counters with relaxed atomics (STAT_INCR)
 *                         and readers sum them.
 */
#ifndef MEMCACHED_H
#define MEMCACHED_H

#include "config.h"

#include "nvm.h"

#include <event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* ---- limits and defaults (memcached 1.6.18's values) ---- */
#define KEY_MAX_LENGTH 250
#define KEY_MAX_UGLY_LENGTH (KEY_MAX_LENGTH * 8 / 6 + 4) /* base64 keys */
#define INCR_MAX_STORAGE_LEN 24
#define MAX_TOKENS 24          /* meta commands accept up to this many */
#define READ_BUFFER_SIZE 16384
#define LINE_LIMIT 2048        /* a line without '\n' past this closes, except multiget */
#define UDP_READ_BUFFER_SIZE 65536
#define UDP_MAX_PAYLOAD_SIZE 1400
#define UDP_HEADER_SIZE 8
#define MAX_SENDBUF_SIZE (256 * 1024 * 1024)
#define POWER_SMALLEST 1
#define POWER_LARGEST 64       /* slab class ids are 1..63 */
#define MAX_NUMBER_OF_SLAB_CLASSES (POWER_LARGEST + 1)
#define CHUNK_ALIGN_BYTES 8
#define REALTIME_MAXDELTA (60 * 60 * 24 * 30)
#define ITEM_UPDATE_INTERVAL 60 /* seconds between LRU bumps of one item */

typedef uint32_t rel_time_t;     /* seconds since process_started */

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
typedef uint32_t client_flags_t;

/* ---- items ----
 * One header layout for every stored item.  The key follows the header
 * (nkey bytes then a NUL), the value follows the key (nbytes bytes, the last
 * two of which are "\r\n").  The header is zone-agnostic: when the N-zone
 * lands, the hot fields (refcount, counter, time, mq links) of an N item are
 * mirrored in its DRAM descriptor and never written to NVM. */
#define ITEM_LINKED     (1 << 0)  /* reachable from the index */
#define ITEM_SLABBED    (1 << 1)  /* on a slab free list */
#define ITEM_FETCHED    (1 << 2)  /* read at least once since stored */
#define ITEM_ACTIVE     (1 << 3)  /* hit again since last bump */
#define ITEM_TOKEN_SENT (1 << 4)  /* meta: a client was given the win token */
#define ITEM_STALE      (1 << 5)  /* meta: invalidated, served with X flag */
#define ITEM_QUEUED     (1 << 6)  /* on an MQ queue */
#define ITEM_KEY_BINARY (1 << 7)  /* meta: stored with a base64 (b) key */
#define ITEM_HEAP       (1 << 8)  /* malloc'd, in no slab: a DRAM snapshot of
                                   * an N item, or the staging buffer of a
                                   * value bound for the N-zone (items.c) */

typedef struct _stritem {
    struct _stritem *next;        /* MQ queue / slab free list */
    struct _stritem *prev;
    uint64_t cas;
    rel_time_t time;              /* last access */
    rel_time_t exptime;           /* 0 = never */
    uint32_t nbytes;              /* value length including "\r\n" */
    client_flags_t client_flags;
    _Atomic uint16_t refcount;    /* the index holds one while linked */
    uint16_t it_flags;            /* ITEM_*; guarded by the item lock */
    uint16_t counter;             /* access counter (hotness, MQ level) */
    uint8_t slabs_clsid;
    uint8_t nkey;
    uint8_t mq_level;             /* queue index, valid while ITEM_QUEUED */
    uint8_t epoch;                /* decay epoch of the last access (low 3
                                   * bits of migrate_epoch()); tiers only */
    uint8_t pad_[6];
    char data[];
} item;

#define ITEM_key(it)   ((it)->data)
#define ITEM_data(it)  ((it)->data + (it)->nkey + 1)
#define ITEM_ntotal(it) (sizeof(item) + (it)->nkey + 1 + (it)->nbytes)
/* it->cas is also the version's identity inside the engine (items.c finds a
 * version again by it after dropping the item lock), so it is set even
 * under -C; clients then see 0, as memcached shows them. */
#define ITEM_get_cas(it) (settings.use_cas ? (it)->cas : 0)

/* ---- settings ---- */
enum protocol { ascii_prot = 3, binary_prot, negotiating_prot };

struct settings {
    size_t maxbytes;              /* -m, DRAM item memory */
    int maxconns;                 /* -c */
    int port;                     /* -p */
    int udpport;                  /* -U */
    char *inter;                  /* -l, comma list, NULL = any */
    int verbose;
    rel_time_t oldest_live;       /* flush_all: items older are invalid */
    uint64_t oldest_cas;          /* flush_all: items with lower cas invalid */
    int evict_to_free;            /* 0 with -M */
    char *socketpath;             /* -s */
    int access;                   /* -a */
    double factor;                /* -f */
    int chunk_size;               /* -n */
    int num_threads;              /* -t */
    int num_threads_per_udp;
    char prefix_delimiter;        /* -D */
    int detail_enabled;           /* stats detail on */
    int reqs_per_event;           /* -R */
    bool use_cas;                 /* !-C */
    enum protocol binding_protocol;
    int backlog;                  /* -b */
    int item_size_max;            /* -I */
    int slab_page_size;
    int slab_chunk_size_max;
    bool sasl;
    bool maxconns_fast;
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
    bool relaxed_privileges;
    bool hash_expand;             /* !no_hashexpand */
    int hashpower_init;
    int tail_repair_time;
    int slab_reassign;            /* memcached always on since 1.5 */
    int slab_automove;
    double slab_automove_ratio;
    unsigned int slab_automove_window;
    double slab_automove_freeratio;
    const char *hash_algorithm;
    bool ext_opts_ignored;
    uint32_t sock_cookie_id;
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

/* The opened N-zone (memcached.c); backend NVM_BACKEND_NONE without one. */
extern struct nvm_zone nvm_zone;
const char *tier_policy_name(enum tier_policy p);
static inline bool tier_enabled(void)
{
    return settings.nvm.size > 0 && settings.tier_policy != TIER_POLICY_DRAM;
}

/* ---- clock (memcached.c) ---- */
/* Relaxed atomic: written once a second by the clock, read everywhere. */
extern _Atomic rel_time_t current_time;
extern time_t process_started;
rel_time_t realtime(int64_t exptime);
#ifdef MEMCACHED_DEBUG
/* debugtime: move the server clock by `seconds` (debug build only) */
void clock_debug_shift(int64_t seconds);
#endif

/* ---- per-thread statistics ----
 * Only the owning worker writes its counters; readers (stats) sum them.
 * STAT_INCR uses relaxed atomics so that neither side takes a lock and
 * sanitizers see no race, while the owner's increment stays a plain add. */
typedef _Atomic uint64_t stat_u64;

#define STAT_ADD(field, n) \
    atomic_store_explicit(&(field), \
        atomic_load_explicit(&(field), memory_order_relaxed) + (n), \
        memory_order_relaxed)
#define STAT_INCR(field) STAT_ADD(field, 1)
#define STAT_GET(field) atomic_load_explicit(&(field), memory_order_relaxed)

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
    stat_u64 lru_hits[MAX_NUMBER_OF_SLAB_CLASSES];
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
};

typedef struct {
    pthread_t thread_id;
    struct event_base *base;
    struct event notify_event;
    int notify_receive_fd;
    int notify_send_fd;
    struct conn_queue *new_conn_queue;
    struct thread_stats stats;
    /* bytes of N-zone snapshots that this thread's replies hold now: a
     * gauge, not a counter (stats reset leaves it), changed with atomic
     * add/sub because a snapshot may be released by another thread */
    _Atomic uint64_t tier_inflight_bytes;
    int index;
} LIBEVENT_THREAD;

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

/* ---- connections ---- */
enum conn_states {
    conn_listening,
    conn_new_cmd,      /* reset per-command state, then parse */
    conn_waiting,      /* waiting for readability */
    conn_read,         /* read more bytes */
    conn_parse_cmd,    /* a complete line may be in rbuf */
    conn_write,        /* flush the response queue */
    conn_nread,        /* reading a value into c->item */
    conn_swallow,      /* discarding c->sbytes */
    conn_closing,
    conn_mwrite,
    conn_closed,
    conn_watch,
    conn_max_state
};

enum network_transport { local_transport, tcp_transport, udp_transport };

#define IS_UDP(x) ((x) == udp_transport)

/* what complete_nread stores once the value has arrived */
enum store_cmd {
    NREAD_ADD = 1,
    NREAD_SET,
    NREAD_REPLACE,
    NREAD_APPEND,
    NREAD_PREPEND,
    NREAD_CAS
};

/* One queued piece of a reply: bytes copied into the connection's response
 * buffer, or a window into an item's value that holds a reference to the
 * item until the bytes are on the wire. */
typedef struct {
    const char *base;
    size_t len;
    item *ref;           /* released after the write; NULL for copied bytes */
    uint32_t buf_off;    /* for copied bytes: offset into c->wbuf */
    bool copied;
} resp_piece;

#define META_PENDING_MAX 512

typedef struct conn conn;
struct conn {
    int sfd;
    enum conn_states state;
    enum network_transport transport;
    enum protocol protocol;
    struct event event;
    short ev_flags;
    short which;
    LIBEVENT_THREAD *thread;
    conn *next;                   /* free list / all-connections list */

    /* input */
    char *rbuf;
    char *rcurr;
    int rsize;
    int rbytes;

    /* value being read (conn_nread) */
    item *item;
    char *ritem;
    int rlbytes;
    enum store_cmd cmd;
    uint64_t cas;                 /* for NREAD_CAS and meta C */
    int sbytes;                   /* conn_swallow: bytes still to discard */

    /* reply modes for the command in progress */
    bool noreply;                 /* classic noreply: drop the next reply */
    /* meta set: the reply tail ("k", "O", "c" flags...) and quiet mode to
     * apply when the value has arrived; owned by proto_text.c */
    char meta_pending[META_PENDING_MAX];
    int meta_pending_len;
    uint32_t meta_pending_flags;

    /* output: response queue flushed with sendmsg in conn_write */
    resp_piece *pieces;
    int npieces;
    int pieces_size;
    char *wbuf;
    uint32_t wbuf_used;
    uint32_t wbuf_size;
    int write_started;            /* pieces already fully written */
    size_t write_offset;          /* bytes of pieces[write_started] written */
    bool close_after_write;

    /* UDP */
    struct sockaddr_storage request_addr;
    socklen_t request_addr_size;
    uint16_t request_id;

    rel_time_t last_cmd_time;
    int reqs_this_event;
    bool udp_multipacket;         /* current datagram was not a whole request */
    /* read by `stats conns` from other threads */
    _Atomic int pub_state;
    _Atomic rel_time_t pub_last_cmd;
    /* the worker serving it, NULL once closed: the idle walk's test */
    _Atomic(LIBEVENT_THREAD *) pub_owner;
};

/* ---- connection API (memcached.c), used by the protocol layer ---- */
void conn_set_state(conn *c, enum conn_states state);
/* Append bytes to the reply; returns false when out of memory. */
bool resp_add(conn *c, const void *buf, size_t len);
bool resp_printf(conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Queue it's value (len bytes from ITEM_data + off); takes over one ref. */
bool resp_add_item(conn *c, item *it, size_t off, size_t len);
/* Reply "str\r\n", or nothing when c->noreply is set (which it clears). */
void out_string(conn *c, const char *str);
/* Reply an error even under noreply (memcached reports errors always). */
void out_errstring(conn *c, const char *str);
/* Read the value for c->item (c->ritem/rlbytes set), then call
 * complete_nread(c). */
void conn_start_nread(conn *c, item *it, int nbytes, enum store_cmd cmd);
/* Discard n bytes of the stream (a rejected value): conn_start_swallow. */
void conn_start_swallow(conn *c, int nbytes);
void conn_close_after_write(conn *c);
/* Turn off the listeners for `-A` shutdown and exit the event loop. */
void server_shutdown(void);

/* ---- protocol layer (proto_text.c) ---- */
void process_command_ascii(conn *c, char *command, size_t len);
void complete_nread(conn *c);

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
/* stats conns: in memcached.c, which owns the connection table */
void process_stat_conns(ADD_STAT add_stats, void *c);
void threadlocal_stats_aggregate(struct thread_stats *out);
/* Sum of the workers' tier_inflight_bytes gauges. */
uint64_t threadlocal_tier_inflight_bytes(void);
void threadlocal_stats_reset(void);
void stats_reset(void);
/* per-key-prefix stats (stats detail) */
void stats_prefix_record_get(const char *key, size_t nkey, bool is_hit);
void stats_prefix_record_delete(const char *key, size_t nkey);
void stats_prefix_record_set(const char *key, size_t nkey);
char *stats_prefix_dump(int *length);
void stats_prefix_clear(void);

/* ---- threads (thread.c) ---- */
void memcached_thread_init(int nthreads, void *arg);
void dispatch_conn_new(int sfd, enum conn_states init_state, int event_flags,
                       int read_buffer_size, enum network_transport transport);
void item_lock(uint64_t hv);
void item_unlock(uint64_t hv);
int item_trylock(uint64_t hv);   /* 0 on success, like pthread_mutex_trylock */
void dispatch_udp_socket(int sfd);
void threads_stop(void);
extern LIBEVENT_THREAD *threads;

conn *conn_new(int sfd, enum conn_states init_state, int event_flags,
               int read_buffer_size, enum network_transport transport,
               struct event_base *base);
/* idle_timeout, run by worker me's timer: close its idle connections */
void conns_close_idle(LIBEVENT_THREAD *me);

/* ---- hashing (hash.c) ---- */
uint64_t hash_key(const void *key, size_t length);

/* ---- helpers (util.c) ---- */
bool safe_strtoull(const char *str, uint64_t *out);
bool safe_strtoull_hex(const char *str, uint64_t *out);
bool safe_strtoll(const char *str, int64_t *out);
bool safe_strtoul(const char *str, uint32_t *out);
bool safe_strtol(const char *str, int32_t *out);
bool safe_strtod(const char *str, double *out);
bool safe_strcpy(char *dst, const char *src, size_t dstmax);

#endif
