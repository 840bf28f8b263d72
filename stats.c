/*
 * stats.c: the text of `stats`, `stats settings` and `stats detail`.
 *
 * Owns the ADD_STAT callback that writes lines to a connection
 * (append_ascii_stats; append_stat, stat_line.c, formats them), the
 * general stats listing in memcached 1.6.18's order and names (the
 * storage lines come from storage_stats_general in storage/storage.c; our
 * own additions follow them, the server's name and version last), the
 * settings listing, and the per-key-prefix counters behind `stats detail`.
 *
 * It sits above what it prints: the counters (daemon_stats.h), the
 * workers' sums (thread.c), the connections' buffers (conn_buf.c), TLS
 * (tls.c), the logger and storage; the protocol files call it.
 *
 * Locks: prefix_lock guards the prefix table; stats_lock guards `stats`
 * (daemon_stats.c); per-thread counters (the workers' struct
 * thread_stats and struct storage_worker_stats) are summed without locks.
 */
#include "config.h"
#include "stats.h"
#include "clock.h"
#include "conn.h"
#include "conn_buf.h"
#include "logger.h"
#include "settings.h"
#include "stat_counter.h"
#include "storage/storage.h"
#include "thread.h"
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

void append_ascii_stats(const char *key, uint16_t klen, const char *val,
                        uint32_t vlen, const void *cookie)
{
    conn *c = (conn *)cookie;
    if (klen == 0 && vlen == 0) {
        resp_add(c, "END\r\n", 5);
        return;
    }
    resp_add(c, "STAT ", 5);
    resp_add(c, key, klen);
    resp_add(c, " ", 1);
    resp_add(c, val, vlen);
    resp_add(c, "\r\n", 2);
}

#define APPEND_U64(name, v) \
    append_stat(name, add_stats, c, "%llu", (unsigned long long)(v))

struct slab_totals {
    uint64_t set_cmds, get_hits, touch_hits, delete_hits;
    uint64_t cas_hits, cas_badval, incr_hits, decr_hits;
};

static void sum_slab_stats(const struct storage_worker_stats *ws,
                           struct slab_totals *t)
{
    memset(t, 0, sizeof(*t));
    for (int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        const struct slab_stats *s = &ws->slab_stats[i];
        t->set_cmds += STAT_GET(s->set_cmds);
        t->get_hits += STAT_GET(s->get_hits);
        t->touch_hits += STAT_GET(s->touch_hits);
        t->delete_hits += STAT_GET(s->delete_hits);
        t->cas_hits += STAT_GET(s->cas_hits);
        t->cas_badval += STAT_GET(s->cas_badval);
        t->incr_hits += STAT_GET(s->incr_hits);
        t->decr_hits += STAT_GET(s->decr_hits);
    }
}

static void process_and_time_stats(ADD_STAT add_stats, void *c)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    rel_time_t now = current_time;
    append_stat("pid", add_stats, c, "%ld", (long)getpid());
    append_stat("uptime", add_stats, c, "%u", now - stats.started);
    append_stat("time", add_stats, c, "%lld",
                (long long)(process_started + now));
    append_stat("version", add_stats, c, "%s", MEMCACHED_COMPAT_VERSION);
    append_stat("libevent", add_stats, c, "%s", event_get_version());
    append_stat("pointer_size", add_stats, c, "%d", (int)(8 * sizeof(void *)));
    append_stat("rusage_user", add_stats, c, "%ld.%06ld",
                (long)usage.ru_utime.tv_sec, (long)usage.ru_utime.tv_usec);
    append_stat("rusage_system", add_stats, c, "%ld.%06ld",
                (long)usage.ru_stime.tv_sec, (long)usage.ru_stime.tv_usec);
}

static void connection_stats(ADD_STAT add_stats, void *c,
                             const struct thread_stats *ts)
{
    pthread_mutex_lock(&stats_lock);
    struct server_stats s = stats;
    pthread_mutex_unlock(&stats_lock);
    append_stat("max_connections", add_stats, c, "%d", settings.listen.maxconns);
    /* memcached's figure: its listeners and clients, less one */
    APPEND_U64("curr_connections", s.curr_conns > 0 ? s.curr_conns - 1 : 0);
    APPEND_U64("total_connections", s.total_conns);
    if (settings.listen.maxconns_fast) {
        /* memcached lists it only when it refuses connections */
        APPEND_U64("rejected_connections", s.rejected_conns);
    }
    APPEND_U64("connection_structures", s.conn_structs);
    /* connections own their buffers (conn_buf.c): memcached's response
     * objects are our reply pieces, its read buffers our buffer sets,
     * and its free ones the buffers of closed structs kept for reuse */
    struct conn_buf_totals b = { 0 };
    threadlocal_conn_buf_sum(&b);
    conn_buf_totals(&b);
    APPEND_U64("response_obj_oom", STAT_GET(ts->response_obj_oom));
    APPEND_U64("response_obj_count", b.reply_pieces);
    APPEND_U64("response_obj_bytes", b.reply_bytes);
    APPEND_U64("read_buf_count", b.buffer_sets);
    APPEND_U64("read_buf_bytes", b.bytes);
    APPEND_U64("read_buf_bytes_free", b.cached_bytes);
    APPEND_U64("read_buf_oom", STAT_GET(ts->read_buf_oom));
    APPEND_U64("reserved_fds", s.reserved_fds);
}

static void command_stats(ADD_STAT add_stats, void *c,
                          struct thread_stats *ts,
                          const struct storage_worker_stats *ws)
{
    struct slab_totals t;
    sum_slab_stats(ws, &t);
    APPEND_U64("cmd_get", STAT_GET(ts->get_cmds));
    APPEND_U64("cmd_set", t.set_cmds);
    APPEND_U64("cmd_flush", STAT_GET(ts->flush_cmds));
    APPEND_U64("cmd_touch", STAT_GET(ts->touch_cmds));
    APPEND_U64("cmd_meta", STAT_GET(ts->meta_cmds));
    APPEND_U64("get_hits", t.get_hits);
    APPEND_U64("get_misses", STAT_GET(ts->get_misses));
    APPEND_U64("get_expired", STAT_GET(ws->get_expired));
    APPEND_U64("get_flushed", STAT_GET(ws->get_flushed));
    APPEND_U64("delete_misses", STAT_GET(ts->delete_misses));
    APPEND_U64("delete_hits", t.delete_hits);
    APPEND_U64("incr_misses", STAT_GET(ts->incr_misses));
    APPEND_U64("incr_hits", t.incr_hits);
    APPEND_U64("decr_misses", STAT_GET(ts->decr_misses));
    APPEND_U64("decr_hits", t.decr_hits);
    APPEND_U64("cas_misses", STAT_GET(ts->cas_misses));
    APPEND_U64("cas_hits", t.cas_hits);
    APPEND_U64("cas_badval", t.cas_badval);
    APPEND_U64("touch_hits", t.touch_hits);
    APPEND_U64("touch_misses", STAT_GET(ts->touch_misses));
    APPEND_U64("store_too_large", STAT_GET(ts->store_too_large));
    APPEND_U64("store_no_memory", STAT_GET(ts->store_no_memory));
    APPEND_U64("auth_cmds", STAT_GET(ts->auth_cmds));
    APPEND_U64("auth_errors", STAT_GET(ts->auth_errors));
    if (settings.idle_timeout != 0) {
        /* memcached lists it only when idle_timeout is set */
        pthread_mutex_lock(&stats_lock);
        uint64_t kicks = stats.idle_kicks;
        pthread_mutex_unlock(&stats_lock);
        APPEND_U64("idle_kicks", kicks);
    }
    APPEND_U64("bytes_read", STAT_GET(ts->bytes_read));
    APPEND_U64("bytes_written", STAT_GET(ts->bytes_written));
}

/* memcached's -m.  With an N-zone the general stats describe the whole
 * cache, so that bytes / limit_maxbytes stays a fill ratio: both zones'
 * limits, as `stats tier` reports them (doc/tiering.md "Stats with two
 * zones"). */
static uint64_t limit_maxbytes(void)
{
    if (!slabs_tier_active()) {
        return settings.maxbytes;
    }
    struct slabs_totals sl;
    struct slabs_tier_totals tt;
    slabs_get_totals(&sl);
    slabs_tier_get_totals(&tt);
    return sl.zone_limit + tt.zone_limit;
}

/* With -Z only.  memcached lists these among its storage lines (after
 * log_watchers); here they come just before them. */
static void tls_stats_lines(ADD_STAT add_stats, void *c)
{
    if (!settings.tls.enabled) {
        return;
    }
    struct tls_stats t;
    tls_get_stats(&t);
    if (settings.tls.session_cache) {
        APPEND_U64("ssl_new_sessions", t.new_sessions);
    }
    APPEND_U64("ssl_handshake_errors", t.handshake_errors);
    APPEND_U64("time_since_server_cert_refresh", t.secs_since_cert_refresh);
}

void server_stats(ADD_STAT add_stats, void *c)
{
    struct thread_stats *ts = malloc(sizeof(*ts));
    struct storage_worker_stats *ws = malloc(sizeof(*ws));
    if (ts == NULL || ws == NULL) {
        free(ts);
        free(ws);
        return;
    }
    threadlocal_stats_aggregate(ts);
    storage_workers_stats(ws);
    process_and_time_stats(add_stats, c);
    connection_stats(add_stats, c, ts);
    command_stats(add_stats, c, ts, ws);
    APPEND_U64("limit_maxbytes", limit_maxbytes());
    pthread_mutex_lock(&stats_lock);
    bool accepting = stats.accepting_conns;
    uint64_t disabled = stats.listen_disabled_num;
    uint64_t disabled_us = stats.time_in_listen_disabled_us;
    uint64_t malloc_fails = stats.malloc_fails;
    pthread_mutex_unlock(&stats_lock);
    append_stat("accepting_conns", add_stats, c, "%u", accepting ? 1 : 0);
    APPEND_U64("listen_disabled_num", disabled);
    APPEND_U64("time_in_listen_disabled_us", disabled_us);
    append_stat("threads", add_stats, c, "%d", settings.num_threads);
    APPEND_U64("conn_yields", STAT_GET(ts->conn_yields));
    tls_stats_lines(add_stats, c);
    storage_stats_general(add_stats, c, malloc_fails);
    /* Not a memcached 1.6.18 stat (doc/protocol.md): after its list. */
    struct slabs_totals sl;
    slabs_get_totals(&sl);
    APPEND_U64("slab_reassign_busy_aborts", sl.reassign_busy_aborts);
    /* `version` must keep answering memcached's version for clients that
     * parse it; these name the server for operators and monitoring, last,
     * where memcached-style clients skip what they do not know */
    append_stat("server", add_stats, c, "%s", PACKAGE_NAME);
    append_stat("tiercached_version", add_stats, c, "%s", PACKAGE_VERSION);
    free(ts);
    free(ws);
}

static const char *yes_no(bool b)
{
    return b ? "yes" : "no";
}

static const char *protocol_name(enum protocol p)
{
    switch (p) {
    case ascii_prot: return "ascii";
    case binary_prot: return "binary";
    case negotiating_prot: return "auto-negotiate";
    }
    return "unknown";
}

static void tier_settings_stats(ADD_STAT add_stats, void *c);

/* memcached's spelling of unset files: "(null)" for the certificate and
 * key, "NULL" for the ciphers and CA file */
static void tls_settings_stats(ADD_STAT add_stats, void *c)
{
    const struct tls_config *tc = &settings.tls;
    append_stat("ssl_enabled", add_stats, c, "%s", yes_no(tc->enabled));
    append_stat("ssl_chain_cert", add_stats, c, "%s",
                tc->chain_cert ? tc->chain_cert : "(null)");
    append_stat("ssl_key", add_stats, c, "%s", tc->key ? tc->key : "(null)");
    append_stat("ssl_verify_mode", add_stats, c, "%d",
                tls_verify_flags(tc->verify_mode));
    append_stat("ssl_keyformat", add_stats, c, "%d", tc->keyformat);
    append_stat("ssl_ciphers", add_stats, c, "%s",
                tc->ciphers ? tc->ciphers : "NULL");
    append_stat("ssl_ca_cert", add_stats, c, "%s",
                tc->ca_cert ? tc->ca_cert : "NULL");
    append_stat("ssl_wbuf_size", add_stats, c, "%u", tc->wbuf_size);
    append_stat("ssl_session_cache", add_stats, c, "%s",
                yes_no(tc->session_cache));
    append_stat("ssl_kernel_tls", add_stats, c, "%s",
                yes_no(tc->kernel_tls));
    append_stat("ssl_min_version", add_stats, c, "%s",
                tls_version_name(tc->min_version));
}

void process_stat_settings(ADD_STAT add_stats, void *c)
{
    APPEND_U64("maxbytes", settings.maxbytes);
    append_stat("maxconns", add_stats, c, "%d", settings.listen.maxconns);
    append_stat("tcpport", add_stats, c, "%d", settings.listen.port);
    append_stat("udpport", add_stats, c, "%d", settings.listen.udpport);
    append_stat("inter", add_stats, c, "%s",
                settings.listen.inter ? settings.listen.inter : "NULL");
    append_stat("verbosity", add_stats, c, "%d", settings.verbose);
    append_stat("oldest", add_stats, c, "%lu",
                (unsigned long)settings.oldest_live);
    append_stat("evictions", add_stats, c, "%s",
                settings.evict_to_free ? "on" : "off");
    append_stat("domain_socket", add_stats, c, "%s",
                settings.listen.socketpath ? settings.listen.socketpath : "NULL");
    append_stat("umask", add_stats, c, "%o", settings.listen.access);
    append_stat("shutdown_command", add_stats, c, "%s",
                yes_no(settings.shutdown_command));
    append_stat("growth_factor", add_stats, c, "%.2f", settings.factor);
    append_stat("chunk_size", add_stats, c, "%d", settings.chunk_size);
    append_stat("num_threads", add_stats, c, "%d", settings.num_threads);
    append_stat("num_threads_per_udp", add_stats, c, "%d",
                settings.num_threads_per_udp);
    append_stat("stat_key_prefix", add_stats, c, "%c",
                settings.prefix_delimiter);
    append_stat("detail_enabled", add_stats, c, "%s",
                yes_no(settings.detail_enabled));
    append_stat("reqs_per_event", add_stats, c, "%d",
                settings.reqs_per_event);
    append_stat("cas_enabled", add_stats, c, "%s", yes_no(settings.use_cas));
    append_stat("tcp_backlog", add_stats, c, "%d", settings.listen.backlog);
    append_stat("binding_protocol", add_stats, c, "%s",
                protocol_name(settings.binding_protocol));
    append_stat("auth_enabled_sasl", add_stats, c, "%s", yes_no(settings.sasl));
    append_stat("auth_enabled_ascii", add_stats, c, "%s",
                settings.auth_file != NULL ? settings.auth_file : "no");
    append_stat("item_size_max", add_stats, c, "%d", settings.item_size_max);
    append_stat("maxconns_fast", add_stats, c, "%s",
                yes_no(settings.listen.maxconns_fast));
    append_stat("hashpower_init", add_stats, c, "%d",
                settings.hashpower_init);
    append_stat("slab_reassign", add_stats, c, "%s",
                yes_no(settings.slab_reassign));
    append_stat("slab_automove", add_stats, c, "%d", settings.slab_automove);
    append_stat("slab_automove_ratio", add_stats, c, "%.2f",
                settings.slab_automove_ratio);
    append_stat("slab_automove_window", add_stats, c, "%u",
                settings.slab_automove_window);
    append_stat("slab_chunk_max", add_stats, c, "%d",
                settings.slab_chunk_size_max);
    append_stat("lru_crawler", add_stats, c, "%s",
                yes_no(settings.lru_crawler));
    append_stat("lru_crawler_sleep", add_stats, c, "%u",
                settings.lru_crawler_sleep);
    append_stat("lru_crawler_tocrawl", add_stats, c, "%u",
                settings.lru_crawler_tocrawl);
    append_stat("tail_repair_time", add_stats, c, "%d",
                settings.tail_repair_time);
    append_stat("flush_enabled", add_stats, c, "%s",
                yes_no(settings.flush_enabled));
    append_stat("dump_enabled", add_stats, c, "%s",
                yes_no(settings.dump_enabled));
    append_stat("hash_algorithm", add_stats, c, "%s", settings.hash_algorithm);
    append_stat("lru_maintainer_thread", add_stats, c, "%s",
                yes_no(settings.lru_maintainer_thread));
    append_stat("lru_segmented", add_stats, c, "%s",
                yes_no(settings.lru_segmented));
    append_stat("hot_lru_pct", add_stats, c, "%d", settings.hot_lru_pct);
    append_stat("warm_lru_pct", add_stats, c, "%d", settings.warm_lru_pct);
    append_stat("hot_max_factor", add_stats, c, "%.2f",
                settings.hot_max_factor);
    append_stat("warm_max_factor", add_stats, c, "%.2f",
                settings.warm_max_factor);
    append_stat("temp_lru", add_stats, c, "%s", yes_no(settings.temp_lru));
    append_stat("temporary_ttl", add_stats, c, "%d", settings.temporary_ttl);
    append_stat("idle_timeout", add_stats, c, "%d", settings.idle_timeout);
    append_stat("watcher_logbuf_size", add_stats, c, "%u",
                settings.logger_watcher_buf_size);
    append_stat("worker_logbuf_size", add_stats, c, "%u",
                settings.logger_buf_size);
    append_stat("read_buf_mem_limit", add_stats, c, "%u",
                settings.read_buf_mem_limit);
    append_stat("track_sizes", add_stats, c, "%s",
                yes_no(settings.track_sizes));
    append_stat("inline_ascii_response", add_stats, c, "%s", "no");
    append_stat("slab_automove_freeratio", add_stats, c, "%.3f",
                settings.slab_automove_freeratio);
    tls_settings_stats(add_stats, c);
    /* -N is accepted and changes nothing; memcached 1.6.18 shows this
     * for a server started without it */
    append_stat("num_napi_ids", add_stats, c, "%s", "(null)");
    append_stat("memory_file", add_stats, c, "%s",
                settings.memory_file ? settings.memory_file : "(null)");
    tier_settings_stats(add_stats, c);
}

/* The node the N-zone is bound to (nvm_node=, auto resolved; -1 for the
 * other backends) and its latency and bandwidth as the kernel reports
 * them (doc/nvm.md "Running on CXL memory"). */
static void nvm_node_stats(ADD_STAT add_stats, void *c)
{
    int node = nvm_zone.backend == NVM_BACKEND_NUMA_NODE ? nvm_zone.node : -1;
    append_stat("nvm_node_bound", add_stats, c, "%d", node);
    if (node < 0) {
        return;
    }
    static const char *const figures[][2] = {
        {"nvm_node_read_latency_ns", "read_latency"},
        {"nvm_node_write_latency_ns", "write_latency"},
        {"nvm_node_read_bandwidth_mbs", "read_bandwidth"},
        {"nvm_node_write_bandwidth_mbs", "write_bandwidth"},
    };
    for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++) {
        char v[32];
        nvm_node_access_figure(node, figures[i][1], v, sizeof(v));
        append_stat(figures[i][0], add_stats, c, "%s", v);
    }
}

static void tier_settings_stats(ADD_STAT add_stats, void *c)
{
    const struct nvm_config *nc = &settings.nvm;
    append_stat("nvm_path", add_stats, c, "%s", nc->path ? nc->path : "NULL");
    if (nc->have_node && nc->node_auto) {
        append_stat("nvm_node", add_stats, c, "%s", "auto");
    } else {
        append_stat("nvm_node", add_stats, c, "%d", nc->have_node ? nc->node
                                                                  : -1);
    }
    nvm_node_stats(add_stats, c);
    APPEND_U64("nvm_size", nc->size);
    append_stat("dram_node", add_stats, c, "%d", nc->dram_node);
    append_stat("nvm_emulate", add_stats, c, "%u:%u", nc->emulate_read_ns,
                nc->emulate_write_ns);
    tier_mode_stats(add_stats, c);
    append_stat("tier_threshold", add_stats, c, "%u",
                settings.tier.threshold_init);
    append_stat("tier_adjust_period", add_stats, c, "%u",
                settings.tier.adjust_period);
    if (settings.tier.decay_period_auto) {
        append_stat("tier_decay_period", add_stats, c, "auto");
    } else {
        APPEND_U64("tier_decay_period", settings.tier.decay_period);
    }
    append_stat("tier_mq_queues", add_stats, c, "%u", settings.tier.mq_queues);
    append_stat("tier_reassign", add_stats, c, "%s",
                tier_reassign_name(settings.tier.reassign));
    if (settings.tier.reassign_period_auto) {
        append_stat("tier_reassign_period", add_stats, c, "auto");
    } else {
        APPEND_U64("tier_reassign_period", settings.tier.reassign_period);
    }
    if (settings.tier.reassign_rate_auto) {
        append_stat("tier_reassign_rate", add_stats, c, "auto");
    } else {
        append_stat("tier_reassign_rate", add_stats, c, "%u",
                    settings.tier.reassign_rate);
    }
    append_stat("tier_reassign_weight", add_stats, c, "%s",
                settings.tier.reassign_weigh_recent ? "recent" : "counters");
    APPEND_U64("tier_inflight_limit", settings.tier.inflight_limit);
    APPEND_U64("tier_staging_limit", settings.tier.staging_limit);
    static const char *const restart_names[] = { "yes", "no", "require" };
    append_stat("nvm_restart", add_stats, c, "%s",
                restart_names[settings.tier.restart]);
    append_stat("nvm_verify", add_stats, c, "%s",
                settings.tier.verify_reads ? "read" : "recovery");
}

void stats_reset(void)
{
    pthread_mutex_lock(&stats_lock);
    stats.total_items = 0;
    stats.total_conns = 0;
    stats.rejected_conns = 0;
    stats.malloc_fails = 0;
    stats.listen_disabled_num = 0;
    stats.time_in_listen_disabled_us = 0;
    stats.idle_kicks = 0;
    stats.expired_unfetched = 0;
    stats.evicted_unfetched = 0;
    pthread_mutex_unlock(&stats_lock);
    stats_prefix_clear();
    tls_stats_reset();
    threadlocal_stats_reset();
    item_stats_reset();
    logger_stats_reset();
}

/* ------------------------------------------------------------------ */
/* per-prefix stats (stats detail)                                     */

#define PREFIX_HASH_SIZE 256

typedef struct prefix_stats {
    struct prefix_stats *next;
    uint64_t num_gets;
    uint64_t num_sets;
    uint64_t num_deletes;
    uint64_t num_hits;
    size_t len;
    char prefix[];
} prefix_stats;

static prefix_stats *prefix_table[PREFIX_HASH_SIZE];
static size_t num_prefixes;
static size_t total_prefix_size;
static pthread_mutex_t prefix_lock = PTHREAD_MUTEX_INITIALIZER;

void stats_prefix_clear(void)
{
    pthread_mutex_lock(&prefix_lock);
    for (int i = 0; i < PREFIX_HASH_SIZE; i++) {
        prefix_stats *p = prefix_table[i];
        while (p != NULL) {
            prefix_stats *next = p->next;
            free(p);
            p = next;
        }
        prefix_table[i] = NULL;
    }
    num_prefixes = 0;
    total_prefix_size = 0;
    pthread_mutex_unlock(&prefix_lock);
}

/* Keys without the delimiter belong to no prefix and are not counted. */
static prefix_stats *prefix_find(const char *key, size_t nkey)
{
    const char *delim = memchr(key, settings.prefix_delimiter, nkey);
    if (delim == NULL) {
        return NULL;
    }
    size_t len = delim - key;
    uint64_t hv = hash_key(key, len) % PREFIX_HASH_SIZE;
    for (prefix_stats *p = prefix_table[hv]; p != NULL; p = p->next) {
        if (p->len == len && memcmp(p->prefix, key, len) == 0) {
            return p;
        }
    }
    prefix_stats *p = calloc(1, sizeof(*p) + len + 1);
    if (p == NULL) {
        return NULL;
    }
    memcpy(p->prefix, key, len);
    p->len = len;
    p->next = prefix_table[hv];
    prefix_table[hv] = p;
    num_prefixes++;
    total_prefix_size += len;
    return p;
}

void stats_prefix_record_get(const char *key, size_t nkey, bool is_hit)
{
    pthread_mutex_lock(&prefix_lock);
    prefix_stats *p = prefix_find(key, nkey);
    if (p != NULL) {
        p->num_gets++;
        if (is_hit) {
            p->num_hits++;
        }
    }
    pthread_mutex_unlock(&prefix_lock);
}

void stats_prefix_record_delete(const char *key, size_t nkey)
{
    pthread_mutex_lock(&prefix_lock);
    prefix_stats *p = prefix_find(key, nkey);
    if (p != NULL) {
        p->num_deletes++;
    }
    pthread_mutex_unlock(&prefix_lock);
}

void stats_prefix_record_set(const char *key, size_t nkey)
{
    pthread_mutex_lock(&prefix_lock);
    prefix_stats *p = prefix_find(key, nkey);
    if (p != NULL) {
        p->num_sets++;
    }
    pthread_mutex_unlock(&prefix_lock);
}

/* "PREFIX <p> get <n> hit <n> set <n> del <n>\r\n" lines, then "END\r\n";
 * malloc'd, *length set. */
char *stats_prefix_dump(int *length)
{
    static const char fmt[] = "PREFIX %s get %llu hit %llu set %llu del %llu\r\n";
    pthread_mutex_lock(&prefix_lock);
    size_t size = total_prefix_size + num_prefixes * (sizeof(fmt) + 4 * 20)
                  + sizeof("END\r\n");
    char *buf = malloc(size);
    if (buf == NULL) {
        pthread_mutex_unlock(&prefix_lock);
        return NULL;
    }
    size_t pos = 0;
    for (int i = 0; i < PREFIX_HASH_SIZE; i++) {
        for (prefix_stats *p = prefix_table[i]; p != NULL; p = p->next) {
            pos += snprintf(buf + pos, size - pos, fmt, p->prefix,
                            (unsigned long long)p->num_gets,
                            (unsigned long long)p->num_hits,
                            (unsigned long long)p->num_sets,
                            (unsigned long long)p->num_deletes);
        }
    }
    pthread_mutex_unlock(&prefix_lock);
    memcpy(buf + pos, "END\r\n", 6);
    *length = (int)(pos + 5);
    return buf;
}
