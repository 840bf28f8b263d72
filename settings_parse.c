/*
 * settings_parse.c: how the command line fills the `settings` struct
 * (settings.c, settings.h).
 *
 * Owns memcached's defaults (settings_init), option and -o sub-option
 * parsing with their error lines and exit codes (settings_parse), the
 * usage and license text (policy names come from tier_registry.c) and the
 * checks that need every option known (settings_check).  `stats settings`
 * reports the result (stats.c).
 *
 * Locks: none.  Everything here runs on the main thread at start-up,
 * before any other thread exists; settings.h says who writes the struct
 * afterwards.
 */
#include "config.h"
#include "settings_parse.h"
#include "settings.h"
#include "nvm_config.h"
#include "storage/storage.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

void settings_init(void)
{
    memset(&settings, 0, sizeof(settings));
    settings.use_cas = true;
    settings.listen.access = 0700;
    settings.listen.port = 11211;
    settings.listen.udpport = 0;
    settings.listen.inter = NULL;
    settings.maxbytes = 64 * 1024 * 1024;
    settings.listen.maxconns = 1024;
    settings.verbose = 0;
    settings.oldest_live = 0;
    settings.oldest_cas = 0;
    settings.evict_to_free = 1;
    settings.listen.socketpath = NULL;
    settings.factor = 1.25;
    settings.chunk_size = 48;
    settings.num_threads = 4;
    settings.num_threads_per_udp = 0;
    settings.prefix_delimiter = ':';
    settings.detail_enabled = 0;
    settings.reqs_per_event = 20;
    settings.listen.backlog = 1024;
    settings.binding_protocol = negotiating_prot;
    settings.item_size_max = 1024 * 1024;
    settings.slab_page_size = 1024 * 1024;
    settings.slab_chunk_size_max = settings.slab_page_size / 2;
    settings.sasl = false;
    settings.listen.maxconns_fast = true;
    settings.lru_crawler = true;
    settings.lru_crawler_sleep = 100;
    settings.lru_crawler_tocrawl = 0;
    settings.lru_maintainer_thread = true;
    settings.lru_segmented = true;
    settings.hot_lru_pct = 20;
    settings.warm_lru_pct = 40;
    settings.hot_max_factor = 0.2;
    settings.warm_max_factor = 2.0;
    settings.temporary_ttl = 61;
    settings.temp_lru = false;
    settings.idle_timeout = 0;
    settings.logger_watcher_buf_size = 256 * 1024;
    settings.logger_buf_size = 64 * 1024;
    settings.read_buf_mem_limit = 0;
    settings.track_sizes = false;
    settings.shutdown_command = false;
    settings.flush_enabled = true;
    settings.dump_enabled = true;
    settings.watch_enabled = true;
    settings.hash_expand = true;
    settings.hashpower_init = 0;
    settings.tail_repair_time = 0;
    settings.slab_reassign = 1;
    settings.slab_automove = 1;
    settings.slab_automove_ratio = 0.8;
    settings.slab_automove_window = 30;
    settings.slab_automove_freeratio = 0.01;
    settings.hash_algorithm = "murmur3";
    nvm_config_init(&settings.nvm);
    tier_config_init(&settings.tier);
    tls_config_init(&settings.tls);
}

/* The policy names, the default first, from the registry. */
static const char *policy_names(void)
{
    static char names[256];
    struct tier_config defaults;
    tier_config_init(&defaults);
    tier_policy_names(names, sizeof(names), defaults.policy);
    return names;
}

/* usage()'s tier_policy line: the names wrapped under the description
 * column, the first marked as the default. */
static void usage_tier_policy(void)
{
    static const char lead[] = "   - tier_policy=<p>      ";
    const int indent = (int)sizeof(lead) - 1;
    char names[256];
    snprintf(names, sizeof(names), "%s", policy_names());
    int column = printf("%s", lead);
    char *save = NULL;
    for (char *name = strtok_r(names, ", ", &save); name != NULL;
            name = strtok_r(NULL, ", ", &save)) {
        if (column == indent) {
            column += printf("%s (default)", name);
        } else if (column + 2 + (int)strlen(name) > 78) {
            printf(",\n%*s%s", indent, "", name);
            column = indent + (int)strlen(name);
        } else {
            column += printf(", %s", name);
        }
    }
    printf("\n");
}

static void usage(void)
{
    printf("memcached " MEMCACHED_COMPAT_VERSION " (tiercached " PACKAGE_VERSION ")" "\n"
"-p, --port=<num>          TCP port to listen on (default: 11211; 0: off,\n"
"                          -1: any free port)\n"
"-U, --udp-port=<num>      UDP port to listen on (default: 0, off; -1: any\n"
"                          free port); alone, the TCP port too\n"
"-s, --unix-socket=<file>  UNIX socket to listen on (disables network support)\n"
"-a, --unix-mask=<mask>    access mask for UNIX socket, in octal (default: 700)\n"
"-A, --enable-shutdown     enable ascii \"shutdown\" command\n"
"-l, --listen=<addr>       interface to listen on (default: INADDR_ANY);\n"
"                          repeatable, comma separated, host or host:port;\n"
"                          with -Z, notls:<host>:<port> is a plaintext one\n"
"-d, --daemon              run as a daemon\n"
"-r, --enable-coredumps    maximize core file limit\n"
"-u, --user=<user>         assume identity of <username> (only when run as root)\n"
"-m, --memory-limit=<num>  DRAM item memory in megabytes (default: 64)\n"
"-M, --disable-evictions   return error on memory exhausted instead of evicting\n"
"-c, --conn-limit=<num>    max simultaneous connections (default: 1024)\n"
"-k, --lock-memory         lock down all paged memory\n"
"-v, --verbose             verbose (print errors/warnings while in event loop)\n"
"-vv                       very verbose (also print client commands/responses)\n"
"-vvv                      extremely verbose (internal state transitions)\n"
"-h, --help                print this help and exit\n"
"-i, --license             print the license and exit\n"
"-V, --version             print version and exit\n"
"-P, --pidfile=<file>      save PID in <file>, only used with -d option\n"
"-f, --slab-growth-factor=<num> chunk size growth factor (default: 1.25)\n"
"-n, --slab-min-size=<bytes> min space used for key+value+flags (default: 48)\n"
"-L, --enable-largepages   try to use large memory pages (if available)\n"
"-D <char>                 use <char> as the delimiter between key prefixes and\n"
"                          IDs for per-prefix stats (default \":\"); turns\n"
"                          prefix stats on (also: \"stats detail on\")\n"
"-t, --threads=<num>       number of worker threads (default: 4)\n"
"-R, --max-reqs-per-event  requests served per connection before yielding to\n"
"                          the others (default: 20)\n"
"-C, --disable-cas         disable use of CAS\n"
"-b, --listen-backlog=<num> set the backlog queue limit (default: 1024)\n"
"-B, --protocol=<name>     protocol - one of ascii, binary, or auto\n"
"                          (default: auto-negotiate)\n"
"-I, --max-item-size=<num> adjusts max item size\n"
"                          (default: 1m, min: 1k, max: 1024m)\n"
"-F, --disable-flush-all   disable flush_all command\n"
"-X, --disable-dumping     disable stats cachedump and lru_crawler metadump\n"
"-W, --disable-watch       disable watch commands (live logging)\n"
"-e, --memory-file=<file>  (EXPERIMENTAL) mmap a file for item memory.\n"
"                          use only in ram disks or persistent memory"
" mounts!\n"
"                          enables restartable cache (stop with SIGUSR1)\n"
"-S, --enable-sasl         turn on SASL authentication (Cyrus SASL, binary\n"
"                          protocol only; see memcached(1))\n"
"-Y, --auth-file=<file>    enable ASCII protocol authentication. format:\n"
"                          user:pass\\nuser2:pass2\\n\n"
"-Z, --enable-ssl          enable TLS on the TCP listeners (options: ssl_*)\n"
"--stop-plan               print what a graceful stop (SIGUSR1) keeps with\n"
"                          these options and the stop time it asks systemd\n"
"                          for, then exit (tiercached-wrapper --dry-run)\n"
"-o, --extended            comma separated list of extended options\n"
"   - maxconns_fast / no_maxconns_fast: refuse new connections over -c at once\n"
"                          (default: enabled), or hold them until one closes\n"
"   - hashpower=<n>        initial hash table size as a power of two\n"
"                          (default: 16; the index starts at 12)\n"
"   - no_hashexpand        never grow the index\n"
"   - hash_algorithm=<x>   accepted for compatibility; tiercached has one hash\n"
"   - no_lru_crawler       disable the background crawler that reclaims\n"
"                          expired items\n"
"   - lru_crawler_sleep=<us> microseconds to sleep between items (default: 100)\n"
"   - lru_crawler_tocrawl=<n> max items to crawl per class per run (0: all)\n"
"   - lru_maintainer / no_lru_maintainer: reclaim expired items at the LRU\n"
"                          tails in the background (default), or when\n"
"                          memory is allocated\n"
"   - hot_lru_pct=<pct>    share of a class's items new keys may hold (HOT)\n"
"                          before the oldest move to COLD (default: 20)\n"
"   - hot_max_factor=<f>   HOT's oldest key moves to COLD once older than f\n"
"                          times COLD's oldest (default: 0.2)\n"
"   - idle_timeout=<s>     close connections idle longer (default: 0, off)\n"
"   - read_buf_mem_limit=<mb> memory for connection buffers beyond their\n"
"                          first (split between the workers; default: 0,\n"
"                          no limit)\n"
"   - track_sizes          enable \"stats sizes\"\n"
"   - watcher_logbuf_size=<kb> buffer of each `watch` connection (default:\n"
"                          256); lines it has no room for are skipped\n"
"   - worker_logbuf_size=<kb> buffer of each thread's log lines before they\n"
"                          go to the watchers (default: 64)\n"
"   - slab_automove=<0-2>, slab_automove_ratio, slab_automove_window,\n"
"     slab_reassign, no_slab_reassign\n"
"   Tiers (see doc/tiering.md; without nvm_size there is no N-zone, and\n"
"   the N-zone options warn that they have no effect):\n"
"   - nvm_path=<path>      N-zone on a device-DAX node, a file on an fsdax\n"
"                          mount or any file (mapped with libpmem2)\n"
"   - nvm_node=<n>|auto    N-zone from NUMA node n (auto: the CPU-less node)\n"
"   - nvm_size=<size>      N-zone capacity (512m, 64g; at least two slab\n"
"                          pages); alone: anonymous memory, for emulation\n"
"   - nvm_restart=<m>      items an nvm_path= zone holds at start: yes\n"
"                          (default: kept when the layout matches, else a\n"
"                          cold start that says why), no, require\n"
"   - nvm_verify=<m>       check N items' checksums at a warm restart\n"
"                          (recovery, the default) or also at every\n"
"                          lookup of an N item (read: a corrupt one is\n"
"                          dropped and answered as a miss)\n"
"   - dram_node=<n>        bind the D-zone (-m) to NUMA node n\n"
"   - nvm_emulate=<r>:<w>  add r/w ns per 64-byte N-zone line read/written\n"
"                          (the paper's NVM: 224:924)\n");
    usage_tier_policy();
    printf(
"   - tier_placement=<p>   new keys: dram_first (default) or nvm\n"
"   - tier_promote=<m>     promotion N->D: async (default) or sync\n"
"   - tier_threshold=<n>   initial migration threshold (default: 4)\n"
"   - tier_adjust_period=<n> requests to a class between threshold\n"
"                          adjustments (default: 100000)\n"
"   - tier_decay_period=<n> requests between counter decay epochs\n"
"                          (default: 1000000; auto, the default under\n"
"                          hotter: 32 per D chunk, at least 1000000)\n"
"   - tier_mq_queues=<q>   MQ queues per class in the D-zone (default: 8)\n"
"   - tier_reassign=<r>    DRAM page reassignment across slab classes: dp\n"
"                          (default), greedy, psa, none\n"
"   - tier_reassign_period=<n> requests between reassignments (default:\n"
"                          auto, one per item D holds, 20000-1000000,\n"
"                          a quarter of it while pages move)\n"
"   - tier_reassign_rate=<n> page moves per period at most (0-256;\n"
"                          default: auto, half the way to the best\n"
"                          split, at least 4)\n"
"   - tier_reassign_weight=<w> what dp and greedy weigh a class by: recent\n"
"                          (default: its hits and stores of late, spread\n"
"                          as its counters say) or counters (the counters\n"
"                          alone)\n"
"   - tier_inflight_limit=<size> N-zone values that one worker's replies\n"
"                          may hold while unwritten (default: 16m; 0: no\n"
"                          limit); past it N hits answer SERVER_ERROR\n"
"   - tier_staging_limit=<size> values bound for the N-zone that one\n"
"                          worker's clients may be sending (default: 8m;\n"
"                          0: no limit); past it sets answer SERVER_ERROR\n"
"   TLS, with -Z (see doc/protocol.md \"TLS\"):\n"
"   - ssl_chain_cert=<file> the server's certificate chain (PEM)\n"
"   - ssl_key=<file>       its private key, when not in the chain file\n"
"   - ssl_keyformat=<n>    the key's format: 1 PEM (default), 2 DER\n"
"   - ssl_verify_mode=<n>  client certificates: 0 not asked for (default),\n"
"                          1 requested, 2 required, 3 required once\n"
"   - ssl_ciphers=<list>   OpenSSL cipher list (TLS 1.2 and older)\n"
"   - ssl_ca_cert=<file>   CAs that client certificates must come from (PEM)\n"
"   - ssl_wbuf_size=<kb>   per-connection buffer replies are encrypted from\n"
"                          (default: 16)\n"
"   - ssl_session_cache    keep sessions server-side for session resumption\n"
"   - ssl_kernel_tls       let the kernel encrypt and decrypt (kTLS)\n"
"   - ssl_min_version=<n>  oldest protocol accepted: 0 tlsv1.0, 1 tlsv1.1,\n"
"                          2 tlsv1.2 (default), 3 tlsv1.3\n"
"   memcached 1.6.18's other sub-options have no effect here (a warning\n"
"   says so) or stop the start: doc/protocol.md lists them\n");
}

static void usage_license(void)
{
    printf("tiercached: a memcached-compatible server with a tiered slab\n"
           "allocator.  BSD 3-clause license; see the project's LICENSE.\n"
           "Links against libevent (3-clause BSD license) and OpenSSL\n"
           "(Apache License 2.0).\n");
}

/* "64", "64k", "2m", "1g" -> bytes; `unit` applies to plain numbers. */
static bool parse_size(const char *s, uint64_t unit, uint64_t *out)
{
    char buf[64];
    size_t len = strlen(s);
    if (len == 0 || len >= sizeof(buf)) {
        return false;
    }
    memcpy(buf, s, len + 1);
    uint64_t mult = unit;
    switch (tolower((unsigned char)buf[len - 1])) {
    case 'k': mult = 1024ULL; buf[len - 1] = '\0'; break;
    case 'm': mult = 1024ULL * 1024; buf[len - 1] = '\0'; break;
    case 'g': mult = 1024ULL * 1024 * 1024; buf[len - 1] = '\0'; break;
    default: break;
    }
    uint64_t v;
    if (!safe_strtoull(buf, &v) || (v != 0 && mult > UINT64_MAX / v)) {
        return false;
    }
    *out = v * mult;
    return true;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                     noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(EX_USAGE);
}

static uint32_t subopt_u32(const char *name, const char *val)
{
    uint32_t v;
    if (val == NULL || !safe_strtoul(val, &v)) {
        die("Invalid value for %s: %s", name, val ? val : "(missing)");
    }
    return v;
}

static double subopt_double(const char *name, const char *val)
{
    double v;
    if (val == NULL || !safe_strtod(val, &v)) {
        die("Invalid value for %s: %s", name, val ? val : "(missing)");
    }
    return v;
}

static void warn_no_effect(const char *name, const char *why)
{
    fprintf(stderr, "WARNING: -o %s has no effect: %s\n", name, why);
}

/* hot_lru_pct, warm_lru_pct: 1 to 79, as memcached takes them */
static int subopt_lru_pct(const char *name, const char *val)
{
    uint32_t pct = subopt_u32(name, val);
    if (pct < 1 || pct > 79) {
        die("%s must be between 1 and 79", name);
    }
    return (int)pct;
}

static double subopt_age_factor(const char *name, const char *val)
{
    double factor = subopt_double(name, val);
    if (!(factor > 0)) {
        die("%s must be greater than 0", name);
    }
    return factor;
}

/* memcached's LRU maintainer switch, the temporary LRU's TTL (which
 * turns that LRU on in memcached's stats; tiercached has no temporary
 * LRU), and its segments' tuning: HOT's share and age limit take effect
 * (items_mq.h mq_age_hot), WARM's are shown in `stats settings` only, as
 * WARM is the MQ's upper queues, which nothing limits.  Without the
 * maintainer memcached's LRU is flat, and its expired items are reclaimed
 * when memory is allocated (doc/protocol.md "Storage"). */
static bool parse_lru_subopt(const char *name, const char *val)
{
    if (strcmp(name, "lru_maintainer") == 0) {
        settings.lru_maintainer_thread = true;
        settings.lru_segmented = true;
    } else if (strcmp(name, "no_lru_maintainer") == 0) {
        settings.lru_maintainer_thread = false;
        settings.lru_segmented = false;
    } else if (strcmp(name, "temporary_ttl") == 0) {
        int32_t ttl;
        /* memcached reads it with atoi: anything that is not a number is 0 */
        settings.temporary_ttl = val != NULL && safe_strtol(val, &ttl) ? ttl
                                                                       : 0;
        settings.temp_lru = true;
    } else if (strcmp(name, "hot_lru_pct") == 0) {
        settings.hot_lru_pct = subopt_lru_pct(name, val);
    } else if (strcmp(name, "hot_max_factor") == 0) {
        settings.hot_max_factor = subopt_age_factor(name, val);
    } else if (strcmp(name, "warm_lru_pct") == 0) {
        settings.warm_lru_pct = subopt_lru_pct(name, val);
        warn_no_effect(name, "WARM is the MQ's upper queues, not limited");
    } else if (strcmp(name, "warm_max_factor") == 0) {
        settings.warm_max_factor = subopt_age_factor(name, val);
        warn_no_effect(name, "WARM is the MQ's upper queues, not limited");
    } else {
        return false;
    }
    return true;
}

/* memcached 1.6.18 sub-options that only tune mechanisms tiercached does
 * not have: accepted so that existing command lines keep working, each
 * with a warning that says why it changes nothing (doc/protocol.md
 * "Options that cannot take effect").  A name ending in '_' is a prefix. */
struct ignored_subopt {
    const char *name;
    const char *why;
};

static const struct ignored_subopt ignored_subopts[] = {
    { "tail_repair_time", "there is no LRU tail repair" },
    { "modern", "it selects memcached's own defaults" },
    { "no_modern", "it selects memcached's own defaults" },
    { "slab_chunk_max", "items are never split into chunks" },
    { "no_chunked_items", "items are never split into chunks" },
    { "no_inline_ascii_resp", "there is no inline response buffer" },
    { "sock_cookie_id", "sockets are not marked" },
    { "drop_privileges", "there is no system-call sandbox" },
    { "no_drop_privileges", "there is no system-call sandbox" },
    { "slab_automove_freeratio", "there is no free-memory automover" },
    { "ext_", "extstore is not part of tiercached" },
    { NULL, NULL }
};

static const char *ignored_subopt_reason(const char *name)
{
    for (int i = 0; ignored_subopts[i].name != NULL; i++) {
        const char *n = ignored_subopts[i].name;
        size_t len = strlen(n);
        bool prefix = n[len - 1] == '_';
        if (prefix ? strncmp(name, n, len) == 0 : strcmp(name, n) == 0) {
            return ignored_subopts[i].why;
        }
    }
    return NULL;
}

/* Sub-options whose absence would cost what the operator configured:
 * the start stops instead of running without it. */
static void refuse_unbuilt_subopt(const char *name)
{
    if (strcmp(name, "ext_path") == 0) {
        die("ext_path: extstore is not part of tiercached, so the capacity "
            "it names would be missing; give the second tier as "
            "nvm_path=FILE,nvm_size=SIZE instead (doc/tiering.md)");
    }
    if (strncmp(name, "proxy_", 6) == 0) {
        die("%s: the proxy is not supported yet by tiercached.", name);
    }
}

/* Tier sub-options that tune the N-zone or moves between the zones: given
 * while no N-zone is in use they change nothing (check_tier_settings
 * says so). */
static const char *const tier_only_names[] = {
    "nvm_emulate", "nvm_restart", "nvm_verify", "tier_placement",
    "tier_promote", "tier_threshold", "tier_adjust_period",
    "tier_decay_period",
    "tier_reassign", "tier_reassign_period", "tier_reassign_rate",
    "tier_reassign_weight", "tier_inflight_limit", "tier_staging_limit",
    NULL
};
#define TIER_ONLY_COUNT \
    (sizeof(tier_only_names) / sizeof(tier_only_names[0]) - 1)
static bool tier_only_given[TIER_ONLY_COUNT];
/* tier_policy= was given: a policy asked for by name needs an N-zone
 * (the default one, without a zone, just leaves everything in DRAM). */
static bool tier_policy_given;

static void note_tier_only(const char *name)
{
    for (size_t i = 0; i < TIER_ONLY_COUNT; i++) {
        if (strcmp(name, tier_only_names[i]) == 0) {
            tier_only_given[i] = true;
        }
    }
}

static bool tier_only_was_given(const char *name)
{
    for (size_t i = 0; i < TIER_ONLY_COUNT; i++) {
        if (strcmp(name, tier_only_names[i]) == 0) {
            return tier_only_given[i];
        }
    }
    return false;
}

/* One line naming every tier-only option given, for a server that will
 * run without an N-zone in use. */
static void warn_tier_only_given(const char *why)
{
    char names[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < TIER_ONLY_COUNT; i++) {
        if (tier_only_given[i] && used < sizeof(names)) {
            used += (size_t)snprintf(names + used, sizeof(names) - used,
                                     "%s%s", used > 0 ? ", " : "",
                                     tier_only_names[i]);
        }
    }
    if (used > 0) {
        fprintf(stderr, "WARNING: -o %s: no effect without an N-zone in "
                "use (%s)\n", names, why);
    }
}

static enum tier_policy parse_tier_policy(const char *val)
{
    enum tier_policy p;
    if (val != NULL && tier_policy_by_name(val, &p)) {
        return p;
    }
    die("tier_policy must be one of %s (got %s)", policy_names(),
        val ? val : "nothing");
}

static bool is_auto(const char *val)
{
    return val != NULL && strcmp(val, "auto") == 0;
}

static uint32_t tier_u32_at_least_1(const char *name, const char *val)
{
    uint32_t v = subopt_u32(name, val);
    if (v == 0) {
        die("%s must be at least 1", name);
    }
    return v;
}

/* A per-worker byte limit: a size, or 0 for none. */
static size_t subopt_limit(const char *name, const char *val,
                           const char *example)
{
    size_t v = 0;
    if (val != NULL && strcmp(val, "0") == 0) {
        return 0;
    }
    if (val == NULL || !nvm_parse_size(val, &v)) {
        die("%s must be a size such as %s, or 0 (got %s)", name, example,
            val ? val : "nothing");
    }
    return v;
}

/* The index in choices (NULL-terminated) of the word val, or death with
 * the list: "x must be a, b or c (got v)". */
static unsigned int subopt_choice(const char *name, const char *val,
                                  const char *const *choices)
{
    unsigned int n = 0;
    for (; choices[n] != NULL; n++) {
        if (val != NULL && strcmp(val, choices[n]) == 0) {
            return n;
        }
    }
    char list[128] = "";
    for (unsigned int i = 0; i < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        size_t used = strlen(list);
        snprintf(list + used, sizeof(list) - used, "%s%s", sep, choices[i]);
    }
    die("%s must be %s (got %s)", name, list, val ? val : "nothing");
}

/* The N-zone and policy sub-options (doc/tiering.md); false when `name`
 * is not one of them. */
static bool parse_tier_subopt(const char *name, const char *val)
{
    struct nvm_config *nc = &settings.nvm;
    if (strcmp(name, "nvm_path") == 0) {
        if (val == NULL || *val == '\0') {
            die("nvm_path needs a path");
        }
        nc->path = strdup(val);
    } else if (strcmp(name, "nvm_node") == 0) {
        if (val == NULL || !nvm_parse_node(val, &nc->node, &nc->node_auto)) {
            die("nvm_node must be a NUMA node number or auto (got %s)",
                val ? val : "nothing");
        }
        nc->have_node = true;
    } else if (strcmp(name, "nvm_size") == 0) {
        if (val == NULL || !nvm_parse_size(val, &nc->size)) {
            die("nvm_size must be a size such as 512m or 64g (got %s)",
                val ? val : "nothing");
        }
    } else if (strcmp(name, "dram_node") == 0) {
        int32_t node;
        if (val == NULL || !safe_strtol(val, &node) || node < 0) {
            die("dram_node must be a NUMA node number (got %s)",
                val ? val : "nothing");
        }
        nc->dram_node = node;
    } else if (strcmp(name, "nvm_emulate") == 0) {
        if (val == NULL || !nvm_parse_emulate(val, &nc->emulate_read_ns,
                                              &nc->emulate_write_ns)) {
            die("nvm_emulate must be READ_NS:WRITE_NS such as 224:924 "
                "(got %s)", val ? val : "nothing");
        }
    } else if (strcmp(name, "tier_policy") == 0) {
        settings.tier.policy = parse_tier_policy(val);
        tier_policy_given = true;
    } else if (strcmp(name, "tier_placement") == 0) {
        static const char *const places[] = { "dram_first", "nvm", NULL };
        settings.tier.placement = subopt_choice(name, val, places);
    } else if (strcmp(name, "tier_promote") == 0) {
        static const char *const ways[] = { "sync", "async", NULL };
        settings.tier.promote_async = subopt_choice(name, val, ways) == 1;
    } else if (strcmp(name, "tier_threshold") == 0) {
        settings.tier.threshold_init = tier_u32_at_least_1(name, val);
    } else if (strcmp(name, "tier_adjust_period") == 0) {
        settings.tier.adjust_period = tier_u32_at_least_1(name, val);
    } else if (strcmp(name, "tier_decay_period") == 0) {
        settings.tier.decay_period_given = true;
        settings.tier.decay_period_auto = is_auto(val);
        if (!settings.tier.decay_period_auto) {
            settings.tier.decay_period = tier_u32_at_least_1(name, val);
        }
    } else if (strcmp(name, "tier_mq_queues") == 0) {
        settings.tier.mq_queues = tier_u32_at_least_1(name, val);
        if (settings.tier.mq_queues > 16) {
            die("tier_mq_queues must be between 1 and 16");
        }
    } else if (strcmp(name, "tier_reassign") == 0) {
        if (!tier_reassign_parse(val, &settings.tier.reassign)) {
            die("tier_reassign must be one of dp, greedy, psa, none "
                "(got %s)", val ? val : "nothing");
        }
    } else if (strcmp(name, "tier_reassign_period") == 0) {
        settings.tier.reassign_period_auto = is_auto(val);
        if (!settings.tier.reassign_period_auto) {
            settings.tier.reassign_period = tier_u32_at_least_1(name, val);
        }
    } else if (strcmp(name, "tier_reassign_rate") == 0) {
        settings.tier.reassign_rate_auto = is_auto(val);
        if (!settings.tier.reassign_rate_auto) {
            settings.tier.reassign_rate = subopt_u32(name, val);
        }
        if (settings.tier.reassign_rate > 256) {
            die("tier_reassign_rate must be auto or between 0 and 256");
        }
    } else if (strcmp(name, "tier_reassign_weight") == 0) {
        static const char *const weights[] = { "recent", "counters", NULL };
        settings.tier.reassign_weigh_recent =
            subopt_choice(name, val, weights) == 0;
    } else if (strcmp(name, "nvm_restart") == 0) {
        /* in enum tier_restart's order */
        static const char *const modes[] = { "yes", "no", "require", NULL };
        settings.tier.restart = subopt_choice(name, val, modes);
    } else if (strcmp(name, "nvm_verify") == 0) {
        static const char *const when[] = { "recovery", "read", NULL };
        settings.tier.verify_reads = subopt_choice(name, val, when) == 1;
    } else if (strcmp(name, "tier_inflight_limit") == 0) {
        settings.tier.inflight_limit = subopt_limit(name, val, "16m");
    } else if (strcmp(name, "tier_staging_limit") == 0) {
        settings.tier.staging_limit = subopt_limit(name, val, "8m");
    } else {
        return false;
    }
    return true;
}

/* memcached's ssl_* errors: its wording and its exit status (1) */
static void ssl_subopt_missing(const char *name)
{
    fprintf(stderr, "Missing %s argument\n", name);
    exit(EXIT_FAILURE);
}

static void ssl_subopt_unparsable(const char *name)
{
    fprintf(stderr, "could not parse argument to %s\n", name);
    exit(EXIT_FAILURE);
}

static int ssl_subopt_int(const char *name, const char *val, int max)
{
    int32_t v;
    if (val == NULL) {
        ssl_subopt_missing(name);
    }
    if (!safe_strtol(val, &v)) {
        ssl_subopt_unparsable(name);
    }
    if (v < 0 || v > max) {
        fprintf(stderr, "Invalid %s. Use help to see valid options.\n",
                name);
        exit(EXIT_FAILURE);
    }
    return v;
}

/* A file name or cipher list; given twice, the last one counts. */
static void ssl_subopt_string(char **slot, const char *name, const char *val)
{
    if (val == NULL) {
        ssl_subopt_missing(name);
    }
    char *copy = strdup(val);
    if (copy == NULL) {
        die("Failed to allocate memory for %s", name);
    }
    free(*slot);
    *slot = copy;
}

/* -o ssl_*: the TLS options (tls.h), used with -Z */
static bool parse_ssl_subopt(const char *name, const char *val)
{
    struct tls_config *tc = &settings.tls;
    if (strcmp(name, "ssl_chain_cert") == 0) {
        ssl_subopt_string(&tc->chain_cert, name, val);
    } else if (strcmp(name, "ssl_key") == 0) {
        ssl_subopt_string(&tc->key, name, val);
    } else if (strcmp(name, "ssl_verify_mode") == 0) {
        tc->verify_mode = ssl_subopt_int(name, val, TLS_VERIFY_MODE_MAX);
    } else if (strcmp(name, "ssl_keyformat") == 0) {
        tc->keyformat = ssl_subopt_int(name, val, INT32_MAX);
    } else if (strcmp(name, "ssl_ciphers") == 0) {
        ssl_subopt_string(&tc->ciphers, name, val);
    } else if (strcmp(name, "ssl_ca_cert") == 0) {
        ssl_subopt_string(&tc->ca_cert, name, val);
    } else if (strcmp(name, "ssl_wbuf_size") == 0) {
        int kb = ssl_subopt_int(name, val, INT32_MAX / 1024);
        if (kb == 0) {
            ssl_subopt_unparsable(name);
        }
        tc->wbuf_size = (unsigned int)kb * 1024;
    } else if (strcmp(name, "ssl_session_cache") == 0) {
        tc->session_cache = true;
    } else if (strcmp(name, "ssl_kernel_tls") == 0) {
        tc->kernel_tls = true;
    } else if (strcmp(name, "ssl_min_version") == 0) {
        tc->min_version = ssl_subopt_int(name, val, TLS_MIN_VERSION_MAX);
    } else {
        return false;
    }
    tc->any_option = true;
    return true;
}

/* watcher_logbuf_size, worker_logbuf_size: kilobytes, refused with
 * memcached's words (those of the ssl_* options) when missing or
 * unparsable; 0 and sizes past 4 GB, which memcached takes (and wraps),
 * are refused too. */
static bool parse_logger_subopt(const char *name, const char *val)
{
    unsigned int *slot;
    if (strcmp(name, "watcher_logbuf_size") == 0) {
        slot = &settings.logger_watcher_buf_size;
    } else if (strcmp(name, "worker_logbuf_size") == 0) {
        slot = &settings.logger_buf_size;
    } else {
        return false;
    }
    uint32_t kb;
    if (val == NULL) {
        ssl_subopt_missing(name);
    }
    if (!safe_strtoul(val, &kb)) {
        ssl_subopt_unparsable(name);
    }
    if (kb < 1 || kb > UINT32_MAX / 1024) {
        die("%s must be between 1 and %u (kilobytes)", name,
            UINT32_MAX / 1024);
    }
    *slot = kb * 1024;
    return true;
}

static void parse_subopt(char *name, char *val)
{
    if (strcmp(name, "maxconns_fast") == 0) {
        settings.listen.maxconns_fast = true;
    } else if (strcmp(name, "no_maxconns_fast") == 0) {
        settings.listen.maxconns_fast = false;
    } else if (strcmp(name, "hashpower") == 0) {
        uint32_t hp = subopt_u32(name, val);
        if (hp < 12) {
            die("Initial hashtable multiplier of %u is too low", hp);
        }
        if (hp > 32) {
            die("Initial hashtable multiplier of %u is too high\n"
                "Choose a value based on \"STAT hash_power_level\" from a "
                "running instance", hp);
        }
        settings.hashpower_init = (int)hp;
    } else if (strcmp(name, "no_hashexpand") == 0) {
        settings.hash_expand = false;
    } else if (strcmp(name, "hash_algorithm") == 0) {
        if (val == NULL || (strcmp(val, "jenkins") && strcmp(val, "murmur3") &&
                            strcmp(val, "xxh3"))) {
            die("Unknown hash_algorithm option (jenkins, murmur3, xxh3)");
        }
        settings.hash_algorithm = strdup(val);
    } else if (strcmp(name, "lru_crawler") == 0) {
        settings.lru_crawler = true;
    } else if (strcmp(name, "no_lru_crawler") == 0) {
        settings.lru_crawler = false;
    } else if (strcmp(name, "lru_crawler_sleep") == 0) {
        settings.lru_crawler_sleep = subopt_u32(name, val);
        if (settings.lru_crawler_sleep > 1000000) {
            die("LRU crawler sleep must be between 0 and 1 second");
        }
    } else if (strcmp(name, "lru_crawler_tocrawl") == 0) {
        settings.lru_crawler_tocrawl = subopt_u32(name, val);
    } else if (strcmp(name, "idle_timeout") == 0) {
        /* memcached takes any integer; 0 or less never times out */
        int32_t secs;
        if (val == NULL || !safe_strtol(val, &secs)) {
            die("Invalid value for %s: %s", name, val ? val : "(missing)");
        }
        settings.idle_timeout = secs;
    } else if (strcmp(name, "read_buf_mem_limit") == 0) {
        settings.read_buf_mem_limit = subopt_u32(name, val);
    } else if (strcmp(name, "track_sizes") == 0) {
        settings.track_sizes = true;
    } else if (strcmp(name, "slab_reassign") == 0) {
        settings.slab_reassign = 1;
    } else if (strcmp(name, "no_slab_reassign") == 0) {
        settings.slab_reassign = 0;
    } else if (strcmp(name, "slab_automove") == 0) {
        settings.slab_automove = val == NULL ? 1 : (int)subopt_u32(name, val);
        if (settings.slab_automove > 2) {
            die("slab_automove must be between 0 and 2");
        }
    } else if (strcmp(name, "no_slab_automove") == 0) {
        settings.slab_automove = 0;
    } else if (strcmp(name, "slab_automove_ratio") == 0) {
        /* kept for `stats settings`, as memcached shows it */
        settings.slab_automove_ratio = subopt_double(name, val);
        warn_no_effect(name, "the automover compares hits, not ages");
    } else if (strcmp(name, "slab_automove_window") == 0) {
        settings.slab_automove_window = subopt_u32(name, val);
    } else if (parse_tier_subopt(name, val)) {
        note_tier_only(name);
    } else if (parse_lru_subopt(name, val)) {
        return;
    } else if (parse_ssl_subopt(name, val)) {
        return;
    } else if (parse_logger_subopt(name, val)) {
        return;
    } else if (ignored_subopt_reason(name) != NULL) {
        refuse_unbuilt_subopt(name);
        warn_no_effect(name, ignored_subopt_reason(name));
    } else if (strncmp(name, "proxy_", 6) == 0) {
        refuse_unbuilt_subopt(name);
    } else {
        fprintf(stderr, "Illegal suboption \"%s\"\n", name);
        exit(EX_USAGE);
    }
}

static void parse_subopts(char *list)
{
    char *save = NULL;
    for (char *opt = strtok_r(list, ",", &save); opt != NULL;
         opt = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(opt, '=');
        char *val = NULL;
        if (eq != NULL) {
            *eq = '\0';
            val = eq + 1;
        }
        parse_subopt(opt, val);
    }
}

static void append_listen(const char *addr)
{
    if (settings.listen.inter == NULL) {
        settings.listen.inter = strdup(addr);
        return;
    }
    size_t len = strlen(settings.listen.inter) + strlen(addr) + 2;
    char *joined = malloc(len);
    if (joined == NULL) {
        die("Failed to allocate memory for the listen list");
    }
    snprintf(joined, len, "%s,%s", settings.listen.inter, addr);
    free(settings.listen.inter);
    settings.listen.inter = joined;
}

static void parse_item_size(const char *arg)
{
    uint64_t size;
    if (!parse_size(arg, 1, &size)) {
        die("Invalid -I argument: %s", arg);
    }
    if (size < 1024) {
        die("Item max size cannot be less than 1024 bytes.");
    }
    if (size > 1024ULL * 1024 * 1024) {
        die("Cannot set item size limit higher than 1024 mb.");
    }
    settings.item_size_max = (int)size;
}

/* -S and -Y pick the protocol themselves unless -B named one */
static bool protocol_specified;

static void parse_protocol(const char *arg)
{
    protocol_specified = true;
    if (strcmp(arg, "auto") == 0) {
        settings.binding_protocol = negotiating_prot;
    } else if (strcmp(arg, "ascii") == 0) {
        settings.binding_protocol = ascii_prot;
    } else if (strcmp(arg, "binary") == 0) {
        settings.binding_protocol = binary_prot;
    } else {
        die("Invalid value for binding protocol: %s\n"
            " -- should be one of auto, binary, or ascii", arg);
    }
}

/* long options without a letter: past every char getopt returns */
#define STOP_PLAN_OPT 0x100

static const struct option long_options[] = {
    { "unix-mask", required_argument, 0, 'a' },
    { "enable-shutdown", no_argument, 0, 'A' },
    { "port", required_argument, 0, 'p' },
    { "unix-socket", required_argument, 0, 's' },
    { "udp-port", required_argument, 0, 'U' },
    { "memory-limit", required_argument, 0, 'm' },
    { "disable-evictions", no_argument, 0, 'M' },
    { "conn-limit", required_argument, 0, 'c' },
    { "lock-memory", no_argument, 0, 'k' },
    { "help", no_argument, 0, 'h' },
    { "license", no_argument, 0, 'i' },
    { "version", no_argument, 0, 'V' },
    { "enable-coredumps", no_argument, 0, 'r' },
    { "verbose", optional_argument, 0, 'v' },
    { "daemon", no_argument, 0, 'd' },
    { "listen", required_argument, 0, 'l' },
    { "user", required_argument, 0, 'u' },
    { "pidfile", required_argument, 0, 'P' },
    { "slab-growth-factor", required_argument, 0, 'f' },
    { "slab-min-size", required_argument, 0, 'n' },
    { "threads", required_argument, 0, 't' },
    { "enable-largepages", no_argument, 0, 'L' },
    { "max-reqs-per-event", required_argument, 0, 'R' },
    { "disable-cas", no_argument, 0, 'C' },
    { "listen-backlog", required_argument, 0, 'b' },
    { "protocol", required_argument, 0, 'B' },
    { "max-item-size", required_argument, 0, 'I' },
    { "enable-sasl", no_argument, 0, 'S' },
    { "disable-flush-all", no_argument, 0, 'F' },
    { "disable-dumping", no_argument, 0, 'X' },
    { "disable-watch", no_argument, 0, 'W' },
    { "auth-file", required_argument, 0, 'Y' },
    { "memory-file", required_argument, 0, 'e' },
    { "enable-ssl", no_argument, 0, 'Z' },
    { "extended", required_argument, 0, 'o' },
    { "napi-ids", required_argument, 0, 'N' },
    { "stop-plan", no_argument, 0, STOP_PLAN_OPT },
    { 0, 0, 0, 0 }
};

static int parse_int_arg(const char *arg, const char *what)
{
    int32_t v;
    if (!safe_strtol(arg, &v)) {
        die("Invalid value for %s: %s", what, arg);
    }
    return v;
}

void settings_parse(int argc, char **argv)
{
    const char *shortopts = "a:Ap:s:U:m:Mc:khiVrvdl:u:P:f:n:t:LD:R:Cb:B:"
                            "I:SFXWY:e:Zo:N:";
    bool tcp_specified = false;
    bool udp_specified = false;
    int c;
    while ((c = getopt_long(argc, argv, shortopts, long_options, NULL))
           != -1) {
        switch (c) {
        case 'a': {
            char *end;
            long mask = strtol(optarg, &end, 8);
            if (*optarg == '\0' || *end != '\0' || mask < 0 || mask > 0777) {
                die("Invalid unix socket mask: %s", optarg);
            }
            settings.listen.access = (int)mask;
            break;
        }
        case 'A': settings.shutdown_command = true; break;
        case 'p':
            settings.listen.port = parse_int_arg(optarg, "-p");
            tcp_specified = true;
            break;
        case 's': settings.listen.socketpath = optarg; break;
        case 'U':
            settings.listen.udpport = parse_int_arg(optarg, "-U");
            udp_specified = true;
            break;
        case 'm': {
            uint64_t bytes;
            if (!parse_size(optarg, 1024 * 1024, &bytes) || bytes == 0) {
                die("Invalid value for -m: %s", optarg);
            }
            settings.maxbytes = bytes;
            break;
        }
        case 'M': settings.evict_to_free = 0; break;
        case 'c':
            settings.listen.maxconns = parse_int_arg(optarg, "-c");
            if (settings.listen.maxconns <= 0) {
                die("Maximum connections must be greater than 0");
            }
            break;
        case 'k': settings.lock_memory = true; break;
        case 'h': usage(); exit(EXIT_SUCCESS);
        case 'i': usage_license(); exit(EXIT_SUCCESS);
        case 'V':
            printf("memcached " MEMCACHED_COMPAT_VERSION "\n");
            exit(EXIT_SUCCESS);
        case 'r': settings.enable_coredumps = true; break;
        case 'v':
            settings.verbose++;
            if (optarg != NULL) {
                for (const char *p = optarg; *p == 'v'; p++) {
                    settings.verbose++;
                }
            }
            break;
        case 'd': settings.daemonize = true; break;
        case 'l': append_listen(optarg); break;
        case 'u': settings.username = optarg; break;
        case 'P': settings.pid_file = optarg; break;
        case 'f':
            if (!safe_strtod(optarg, &settings.factor) ||
                settings.factor <= 1.0) {
                die("Factor must be greater than 1");
            }
            break;
        case 'n':
            settings.chunk_size = parse_int_arg(optarg, "-n");
            if (settings.chunk_size <= 0) {
                die("Chunk size must be greater than 0");
            }
            break;
        case 't':
            settings.num_threads = parse_int_arg(optarg, "-t");
            if (settings.num_threads <= 0) {
                die("Number of threads must be greater than 0");
            }
            if (settings.num_threads > 64) {
                fprintf(stderr, "WARNING: Setting a high number of worker "
                        "threads is not recommended.\n"
                        " Set this value to the number of cores in your "
                        "machine or less.\n");
            }
            break;
        case 'L': settings.large_pages = true; break;
        case 'D':
            if (optarg[0] == '\0' || optarg[1] != '\0') {
                die("No delimiter specified");
            }
            settings.prefix_delimiter = optarg[0];
            settings.detail_enabled = 1;
            break;
        case 'R':
            settings.reqs_per_event = parse_int_arg(optarg, "-R");
            if (settings.reqs_per_event <= 0) {
                die("Number of requests per event must be greater than 0");
            }
            break;
        case 'C': settings.use_cas = false; break;
        case 'b':
            settings.listen.backlog = parse_int_arg(optarg, "-b");
            if (settings.listen.backlog <= 0) {
                die("Listen backlog must be greater than 0");
            }
            break;
        case 'B': parse_protocol(optarg); break;
        case 'I': parse_item_size(optarg); break;
        case 'S': settings.sasl = true; break;
        case 'Z': settings.tls.enabled = true; break;
        case 'e':
            if (optarg[0] == '\0') {
                die("-e needs a file name");
            }
            settings.memory_file = optarg;
            break;
        case 'Y': settings.auth_file = optarg; break;
        case 'F': settings.flush_enabled = false; break;
        case 'X': settings.dump_enabled = false; break;
        case 'W': settings.watch_enabled = false; break;
        case 'N': break;
        case STOP_PLAN_OPT: settings.stop_plan = true; break;
        case 'o': {
            char *copy = strdup(optarg);
            if (copy == NULL) {
                die("Failed to allocate memory for -o");
            }
            parse_subopts(copy);
            free(copy);
            break;
        }
        default:
            fprintf(stderr, "Illegal argument \"%c\"\n", optopt ? optopt : c);
            exit(EX_USAGE);
        }
    }
    if (optind < argc) {
        die("Unexpected argument: %s", argv[optind]);
    }
    if (udp_specified && settings.listen.udpport != 0 && !tcp_specified) {
        /* memcached: -U alone sets the TCP port too */
        settings.listen.port = settings.listen.udpport;
    }
}

/* -Z needs a TCP listener; ssl_* options mean nothing without -Z. */
static void check_tls_settings(void)
{
    if (settings.tls.enabled && settings.listen.port == 0) {
        fprintf(stderr, "ERROR: You cannot enable SSL without a TCP port.\n");
        exit(EX_USAGE);
    }
    if (!settings.tls.enabled && settings.tls.any_option) {
        fprintf(stderr, "WARNING: the ssl_* options have no effect without "
                "-Z (--enable-ssl)\n");
    }
}

/* The zone's first page holds its metadata (doc/restart.md "The N-zone
 * on disk"): a zone of fewer than two pages could hold no item. */
static void check_nzone_size(void)
{
    uint64_t page = settings.slab_page_size;
    if (settings.nvm.size == 0 || settings.nvm.size >= 2 * page) {
        return;
    }
    die("nvm_size: an N-zone of %zu bytes is too small; the minimum is two "
        "slab pages, %llum (a page is the larger of -I and 1m), the first "
        "holding the zone's metadata", settings.nvm.size,
        (unsigned long long)(2 * page / (1024 * 1024)));
}

/* Given while no N-zone is in use, the tier options change nothing.  Two
 * would leave the operator without what they asked for (new keys in the
 * N-zone, items kept across restarts) and stop the start; the others are
 * tuning and get a warning (doc/tiering.md "Options"). */
static void check_tier_only_options(void)
{
    const struct tier_config *tc = &settings.tier;
    const char *why = settings.nvm.size == 0
        ? "no nvm_size= was given"
        : "tier_policy=dram leaves it unused";
    if (!tier_enabled()) {
        if (tier_only_was_given("tier_placement") &&
            tc->placement == TIER_PLACE_NVM) {
            die("tier_placement=nvm needs an N-zone in use to place new "
                "keys in: %s", why);
        }
        if (tier_only_was_given("nvm_restart") &&
            tc->restart == TIER_RESTART_REQUIRE) {
            die("nvm_restart=require needs an N-zone in use to keep items "
                "across restarts: %s", why);
        }
        warn_tier_only_given(why);
        if (settings.nvm.size > 0) {
            fprintf(stderr, "WARNING: tier_policy=dram leaves the N-zone "
                    "unused: its %zu bytes hold no item\n", settings.nvm.size);
        }
        return;
    }
    if (settings.nvm.path == NULL && tier_only_was_given("nvm_restart")) {
        const char *zone = settings.nvm.have_node ? "an nvm_node="
                                                  : "an anonymous";
        if (tc->restart == TIER_RESTART_REQUIRE) {
            die("nvm_restart=require needs an nvm_path= N-zone: %s N-zone "
                "starts empty at every start", zone);
        }
        fprintf(stderr, "WARNING: -o nvm_restart has no effect: %s N-zone "
                "starts empty at every start (only nvm_path= keeps items)\n",
                zone);
    }
}

static void check_tier_settings(void)
{
    const struct nvm_config *nc = &settings.nvm;
    if (nc->path != NULL && nc->have_node) {
        die("nvm_path and nvm_node both name the N-zone: give one of them");
    }
    if ((nc->path != NULL || nc->have_node) && nc->size == 0) {
        die("nvm_path/nvm_node need nvm_size= (how much of it to use)");
    }
    if (nc->size == 0 && tier_policy_given &&
        settings.tier.policy != TIER_POLICY_DRAM) {
        die("tier_policy=%s needs an N-zone: give nvm_size=",
            tier_policy_name(settings.tier.policy));
    }
    if (!settings.tier.decay_period_given) {
        settings.tier.decay_period_auto =
            tier_policy_decay_period_auto(settings.tier.policy);
    }
    if (settings.tier.threshold_init > (1u << settings.tier.mq_queues)) {
        die("tier_threshold must be at most 2^tier_mq_queues (%u)",
            1u << settings.tier.mq_queues);
    }
    check_nzone_size();
    check_tier_only_options();
}

/* -e names a file relative to where the server was started; -d changes
 * directory before the file is opened (doc/restart.md). */
static void absolute_memory_file(void)
{
    char cwd[PATH_MAX];
    const char *path = settings.memory_file;
    if (path == NULL || path[0] == '/') {
        return;
    }
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        die("-e %s: cannot tell the current directory: %s", path,
            strerror(errno));
    }
    size_t len = strlen(cwd) + strlen(path) + 2;
    char *abs = malloc(len);
    if (abs == NULL) {
        die("Failed to allocate memory for -e");
    }
    snprintf(abs, len, "%s/%s", cwd, path);
    settings.memory_file = abs;
}

/* -S speaks the binary protocol only, -Y the ASCII one, and neither
 * works over UDP: memcached's start-up errors, in its order. */
static void check_auth_settings(void)
{
    if (settings.sasl) {
        if (!protocol_specified) {
            settings.binding_protocol = binary_prot;
        } else if (settings.binding_protocol != binary_prot) {
            die("ERROR: You cannot allow the ASCII protocol while using "
                "SASL.");
        }
        if (settings.listen.udpport != 0) {
            die("ERROR: Cannot enable UDP while using binary SASL "
                "authentication.");
        }
    }
    if (settings.auth_file != NULL) {
        if (!protocol_specified) {
            settings.binding_protocol = ascii_prot;
        } else if (settings.binding_protocol != ascii_prot) {
            die("ERROR: You cannot allow the BINARY protocol while using "
                "ascii authentication tokens.");
        }
        if (settings.listen.udpport != 0) {
            die("Cannot use UDP with ascii authentication enabled "
                "(-U 0 to disable)");
        }
    }
}

/* A -c that leaves no room for one client next to the descriptors the
 * workers reserve and the listener (curr_connections counts listeners, as
 * memcached's does) would start a server that refuses every connection.
 * memcached, whose descriptor limit is -c, fails to start then ("Too many
 * open files") with status 1; so do we, saying why.  Servers with more
 * listeners (several addresses, UDP) need more than this minimum. */
static void check_maxconns(void)
{
    long taken = (long)RESERVED_FDS_PER_THREAD * settings.num_threads + 1;
    if ((long)settings.listen.maxconns - 1 <= taken) {
        fprintf(stderr, "Maximum connections (-c %d) leave no room for "
                "clients: the listener and -t %d worker threads take %ld; "
                "give -c %ld or more, or fewer threads\n",
                settings.listen.maxconns, settings.num_threads, taken,
                taken + 2);
        exit(EXIT_FAILURE);
    }
}

/* memcached's item lock table for -t N workers (thread.c of 1.6.18), which
 * its hash table must outgrow: the power it refuses -o hashpower at or
 * below. */
static unsigned int memcached_lock_power(int nthreads)
{
    if (nthreads < 3) {
        return 10;
    }
    if (nthreads < 4) {
        return 11;
    }
    if (nthreads < 5) {
        return 12;
    }
    return nthreads <= 10 ? 13 : nthreads <= 20 ? 14 : 15;
}

static void check_hashpower(void)
{
    unsigned int locks = memcached_lock_power(settings.num_threads);
    if (settings.hashpower_init != 0
            && (unsigned int)settings.hashpower_init <= locks) {
        die("Hash table power size (%d) cannot be equal to or less than "
            "item lock table (%u)\n"
            "Item lock table grows with `-t N` (worker threadcount)\n"
            "Hash table grows with `-o hashpower=N` ",
            settings.hashpower_init, locks);
    }
}

/* Checks that need every option to be known. */
void settings_check(void)
{
    if (settings.item_size_max > 1024 * 1024) {
        settings.slab_page_size = settings.item_size_max;
    }
    /* memcached's: half of its page, which stays 1 MB whatever -I is (it
     * refuses an -I below it; we take -I as the largest class then) */
    settings.slab_chunk_size_max = 512 * 1024;
    if ((uint64_t)settings.item_size_max > settings.maxbytes / 2) {
        die("Cannot set item size limit higher than 1/2 of memory max.");
    }
    if (settings.listen.socketpath != NULL && settings.listen.inter != NULL) {
        fprintf(stderr, "WARNING: -l is ignored with -s\n");
    }
    /* as memcached: with several -l addresses one worker serves each UDP
     * socket, else every worker does */
    settings.num_threads_per_udp =
        settings.listen.inter != NULL && strchr(settings.listen.inter, ',')
            ? 1 : settings.num_threads;
    check_tls_settings();
    if (settings.temp_lru && !settings.lru_maintainer_thread) {
        die("temporary_ttl requires lru_maintainer to be enabled");
    }
    if (settings.hot_lru_pct + settings.warm_lru_pct > 80) {
        die("hot_lru_pct + warm_lru_pct must be at most 80");
    }
    check_maxconns();
    check_hashpower();
    absolute_memory_file();
    check_tier_settings();
    check_auth_settings();
}
