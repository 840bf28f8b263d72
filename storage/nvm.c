/*
 * nvm.c: the N-zone backends and the only code that reads or writes N-zone
 * bytes (doc/nvm.md: "Backends", "Accessors and accounting", "Latency
 * emulation").
 *
 * Owns:
 *   - the daemon's N-zone `nvm_zone` (memcached.c opens and closes it);
 *   - opening and closing the N-zone: nvm_path= through libpmem2 (device
 *     DAX, fsdax file, any file; a file's mapped range is fully allocated
 *     at start-up; a device DAX onlined as system RAM refused by name),
 *     nvm_node= (anonymous memory bound with mbind; "auto" picks a
 *     CPU-less node found with hwloc and not faster than the CPUs' by the
 *     HMAT; a node without the free memory refused, one with CPUs warned
 *     about), and the anonymous emulated zone; dram_node= checks and
 *     binding; the HMAT figures of a node for `stats settings`;
 *   - the accessors (nvm_read_cls, nvm_write_cls, ...), which count the
 *     64-byte lines they touch and spin for the emulated latency;
 *   - the per-thread line counters and their sums for `stats tier`;
 *   - the TSC calibration behind the emulation spin;
 *   - durability: nvm_persist (flush and drain on DAX), nvm_zone_sync
 *     (msync of a file) and the SIGBUS handler for faults inside the zone
 *     (doc/restart.md "What survives", "Faults").
 *
 * Locks and atomics:
 *   - `active` (the open zone's base, size and libpmem2 copy functions) is
 *     written only by nvm_zone_open/close, at start-up and shutdown while no
 *     worker thread touches the zone; thread creation orders it for them.
 *   - registry_lock guards the list of per-thread counter blocks, which block
 *     is in use, the counts folded in from exited threads and the reset
 *     baseline.  Never taken on the access path (only when a thread touches
 *     the zone for the first time, when it exits, and by stats readers).
 *   - each counter in a block is written only by the thread that owns the
 *     block, with relaxed atomic load+store (stat_counter.h STAT_ADD): a plain
 *     add for the owner, race-free for the readers who sum under the lock.
 *     The one shared fallback block (used if a block cannot be allocated)
 *     uses atomic fetch-add instead.
 *   - the emulation R:W values are atomics stored with release after the
 *     clock is calibrated and loaded with acquire, so a thread that sees a
 *     non-zero latency also sees the calibration.
 *
 * Differences from the paper (HMCached / its HME emulator): the emulator
 * delayed at the memory controller, per real cache miss; here the delay is
 * per logical 64-byte line accessed through these functions (no CPU cache
 * model, so an upper bound), and the spin happens after the copy.
 */
#include "config.h"
#include "nvm.h"
#include "slab_class.h"
#include "stat_counter.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <hwloc/linux.h>
#include <inttypes.h>
#include <libpmem2.h>
#include <limits.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define NVM_HAVE_TSC 1
#else
#define NVM_HAVE_TSC 0
#endif

#define LINE_SHIFT 6
_Static_assert((1 << LINE_SHIFT) == NVM_LINE_SIZE, "line size");

struct nvm_zone nvm_zone;

/* ------------------------------------------------------------------ */
/* error messages                                                      */
/* ------------------------------------------------------------------ */

__attribute__((format(printf, 3, 4)))
static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* "3221225472 bytes = 3.0 GiB" (MiB below a GiB) style text, for
 * messages about sizes */
static const char *describe_size(uint64_t bytes, char *buf, size_t len) {
    const double mib = 1024.0 * 1024.0;
    if (bytes < (1ull << 30))
        snprintf(buf, len, "%" PRIu64 " bytes = %.1f MiB", bytes,
                 (double)bytes / mib);
    else
        snprintf(buf, len, "%" PRIu64 " bytes = %.1f GiB", bytes,
                 (double)bytes / (mib * 1024.0));
    return buf;
}

static size_t round_up(size_t value, size_t align, bool *overflow) {
    size_t rem = align ? value % align : 0;
    *overflow = false;
    if (rem == 0)
        return value;
    if (value > SIZE_MAX - (align - rem)) {
        *overflow = true;
        return value;
    }
    return value + (align - rem);
}

/* ------------------------------------------------------------------ */
/* the active zone                                                     */
/* ------------------------------------------------------------------ */

static struct {
    uintptr_t base;
    size_t size;
    pmem2_memcpy_fn memcpy_fn;      /* NULL: not a libpmem2 mapping */
    pmem2_memmove_fn memmove_fn;
    pmem2_memset_fn memset_fn;
    pmem2_persist_fn persist_fn;    /* set only where stores reach the
                                     * medium by flushing CPU caches (DAX) */
    enum nvm_backend backend;
    char fault_msg[PATH_MAX + 160]; /* written by the SIGBUS handler */
} active;

/* Copies are plain (temporal) copies with pmem-safe store widths; what
 * must be durable in order is made so by nvm_persist (doc/restart.md,
 * "What survives"). */
#define VOLATILE_COPY_FLAGS PMEM2_F_MEM_NOFLUSH

static void activate_zone(const struct nvm_zone *zone) {
    active.base = (uintptr_t)zone->base;
    active.size = zone->size;
    active.backend = zone->backend;
    active.persist_fn = NULL;
    if (zone->map != NULL && zone->granularity != NVM_GRANULARITY_PAGE)
        active.persist_fn = pmem2_get_persist_fn(zone->map);
    if (zone->map != NULL) {
        active.memcpy_fn = pmem2_get_memcpy_fn(zone->map);
        active.memmove_fn = pmem2_get_memmove_fn(zone->map);
        active.memset_fn = pmem2_get_memset_fn(zone->map);
    } else {
        active.memcpy_fn = NULL;
        active.memmove_fn = NULL;
        active.memset_fn = NULL;
    }
}

static void deactivate_zone(void) {
    memset(&active, 0, sizeof(active));
}

/* ------------------------------------------------------------------ */
/* durability and faults                                               */
/* ------------------------------------------------------------------ */

bool nvm_zone_is_persistent(const struct nvm_zone *zone) {
    return zone->backend == NVM_BACKEND_DEVDAX
        || zone->backend == NVM_BACKEND_FSDAX
        || zone->backend == NVM_BACKEND_FILE;
}

void nvm_persist(const void *p, size_t n) {
    /* Page-cache files need nothing here: a process crash cannot lose
     * what is in the page cache, and power loss is covered only by
     * nvm_zone_sync (doc/restart.md). */
    if (active.persist_fn != NULL && n != 0)
        active.persist_fn((void *)p, n);
    else
        atomic_thread_fence(memory_order_release);
}

int nvm_zone_sync(const struct nvm_zone *zone) {
    if (zone->backend == NVM_BACKEND_FILE)
        return msync(zone->base, zone->size, MS_SYNC);
    if (zone->map != NULL)
        pmem2_get_drain_fn(zone->map)();
    return 0;
}

/* SIGBUS inside the zone means its file shrank or its device went away:
 * nothing can be served or saved, so say so and leave (only
 * async-signal-safe calls here). */
static void zone_fault_handler(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    uintptr_t addr = (uintptr_t)info->si_addr;
    if (active.base != 0 && addr >= active.base
        && addr - active.base < active.size) {
        ssize_t w = write(STDERR_FILENO, active.fault_msg,
                          strlen(active.fault_msg));
        (void)w;
        _exit(74);              /* EX_IOERR */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_fault_handler(const struct nvm_config *cfg) {
    snprintf(active.fault_msg, sizeof(active.fault_msg),
             "N-zone fault: a read or write of %s failed (SIGBUS: the file "
             "was truncated or its device went away); exiting\n",
             cfg->path != NULL ? cfg->path : "the N-zone");
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = zone_fault_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

bool nvm_contains(const void *p, size_t n) {
    uintptr_t addr = (uintptr_t)p;
    if (active.base == 0 || addr < active.base)
        return false;
    uintptr_t off = addr - active.base;
    return off <= active.size && n <= active.size - off;
}

uint64_t nvm_lines_spanned(const void *p, size_t n) {
    if (n == 0)
        return 0;
    /* Offsets from the base make the count independent of where the
     * mapping landed; an address below the base (a caller's bug) is
     * counted on its absolute value rather than wrapping around. */
    uintptr_t addr = (uintptr_t)p;
    uintptr_t off = addr >= active.base ? addr - active.base : addr;
    return ((off + n - 1) >> LINE_SHIFT) - (off >> LINE_SHIFT) + 1;
}

/* ------------------------------------------------------------------ */
/* per-thread counters                                                 */
/* ------------------------------------------------------------------ */

struct nvm_thread_counters {
    stat_u64 lines_read[MAX_NUMBER_OF_SLAB_CLASSES];
    stat_u64 lines_written[MAX_NUMBER_OF_SLAB_CLASSES];
    struct nvm_thread_counters *next;   /* registry list (registry_lock) */
    bool in_use;                        /* owned by a live thread (lock) */
    bool shared;                        /* the fallback block: fetch-add */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvm_thread_counters *registry;
static struct nvm_thread_counters shared_counters = { .shared = true };
static uint64_t departed_read[MAX_NUMBER_OF_SLAB_CLASSES];
static uint64_t departed_written[MAX_NUMBER_OF_SLAB_CLASSES];
static uint64_t baseline_read[MAX_NUMBER_OF_SLAB_CLASSES];
static uint64_t baseline_written[MAX_NUMBER_OF_SLAB_CLASSES];

static pthread_once_t counters_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t counters_key;
static bool counters_key_ok;

static __thread struct nvm_thread_counters *my_counters;

/* Runs on the exiting thread (the block's owner): fold its counts into the
 * departed totals and free the block for the next new thread.  Under the
 * lock, so a reader sees the counts either in the block or folded. */
static void retire_thread_counters(void *arg) {
    struct nvm_thread_counters *block = arg;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        departed_read[i] += STAT_GET(block->lines_read[i]);
        departed_written[i] += STAT_GET(block->lines_written[i]);
        atomic_store_explicit(&block->lines_read[i], 0, memory_order_relaxed);
        atomic_store_explicit(&block->lines_written[i], 0,
                              memory_order_relaxed);
    }
    block->in_use = false;
    pthread_mutex_unlock(&registry_lock);
    my_counters = NULL;
}

static void create_counters_key(void) {
    counters_key_ok =
        pthread_key_create(&counters_key, retire_thread_counters) == 0;
}

static struct nvm_thread_counters *claim_free_block_locked(void) {
    for (struct nvm_thread_counters *b = registry; b != NULL; b = b->next) {
        if (!b->in_use) {
            b->in_use = true;
            return b;
        }
    }
    struct nvm_thread_counters *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    b->in_use = true;
    b->next = registry;
    registry = b;
    return b;
}

/* First N-zone access of this thread: give it a block of its own. */
static struct nvm_thread_counters *register_thread(void) {
    pthread_once(&counters_key_once, create_counters_key);
    pthread_mutex_lock(&registry_lock);
    struct nvm_thread_counters *block = claim_free_block_locked();
    pthread_mutex_unlock(&registry_lock);
    if (block == NULL) {
        /* out of memory: count on the shared block rather than fail */
        my_counters = &shared_counters;
        return my_counters;
    }
    /* Without the key the block is simply never recycled; its counts stay
     * in the sums, which is all that correctness needs. */
    if (counters_key_ok)
        pthread_setspecific(counters_key, block);
    my_counters = block;
    return block;
}

static inline struct nvm_thread_counters *thread_counters(void) {
    struct nvm_thread_counters *c = my_counters;
    if (__builtin_expect(c != NULL, 1))
        return c;
    return register_thread();
}

static inline unsigned class_index(unsigned cls) {
    return cls < MAX_NUMBER_OF_SLAB_CLASSES ? cls : 0;
}

static inline void counter_add(const struct nvm_thread_counters *c,
                               stat_u64 *field, uint64_t n) {
    if (__builtin_expect(c->shared, 0))
        atomic_fetch_add_explicit(field, n, memory_order_relaxed);
    else
        STAT_ADD(*field, n);
}

static void sum_counters_locked(uint64_t *reads, uint64_t *writes) {
    for (int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        reads[i] = departed_read[i] + STAT_GET(shared_counters.lines_read[i]);
        writes[i] = departed_written[i]
                    + STAT_GET(shared_counters.lines_written[i]);
    }
    for (struct nvm_thread_counters *b = registry; b != NULL; b = b->next) {
        for (int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
            reads[i] += STAT_GET(b->lines_read[i]);
            writes[i] += STAT_GET(b->lines_written[i]);
        }
    }
}

void nvm_stats_sum_classes(uint64_t *lines_read, uint64_t *lines_written,
                           size_t nclasses) {
    uint64_t reads[MAX_NUMBER_OF_SLAB_CLASSES];
    uint64_t writes[MAX_NUMBER_OF_SLAB_CLASSES];
    pthread_mutex_lock(&registry_lock);
    sum_counters_locked(reads, writes);
    for (int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        reads[i] -= baseline_read[i];
        writes[i] -= baseline_written[i];
    }
    pthread_mutex_unlock(&registry_lock);
    for (size_t i = 0; i < nclasses; i++) {
        bool known = i < MAX_NUMBER_OF_SLAB_CLASSES;
        if (lines_read != NULL)
            lines_read[i] = known ? reads[i] : 0;
        if (lines_written != NULL)
            lines_written[i] = known ? writes[i] : 0;
    }
}

void nvm_stats_sum(uint64_t *lines_read, uint64_t *lines_written) {
    uint64_t reads[MAX_NUMBER_OF_SLAB_CLASSES];
    uint64_t writes[MAX_NUMBER_OF_SLAB_CLASSES];
    uint64_t total_read = 0, total_written = 0;
    nvm_stats_sum_classes(reads, writes, MAX_NUMBER_OF_SLAB_CLASSES);
    for (int i = 0; i < MAX_NUMBER_OF_SLAB_CLASSES; i++) {
        total_read += reads[i];
        total_written += writes[i];
    }
    if (lines_read != NULL)
        *lines_read = total_read;
    if (lines_written != NULL)
        *lines_written = total_written;
}

/* Resetting other threads' counters would race with their plain adds, so
 * `stats reset` records a baseline that later sums subtract instead. */
void nvm_stats_reset(void) {
    pthread_mutex_lock(&registry_lock);
    sum_counters_locked(baseline_read, baseline_written);
    pthread_mutex_unlock(&registry_lock);
}

/* ------------------------------------------------------------------ */
/* latency emulation                                                   */
/* ------------------------------------------------------------------ */

enum spin_clock { SPIN_CLOCK_NONE, SPIN_CLOCK_TSC, SPIN_CLOCK_MONOTONIC };

static _Atomic uint32_t emulate_read_ns;
static _Atomic uint32_t emulate_write_ns;
static pthread_once_t calibration_once = PTHREAD_ONCE_INIT;
static enum spin_clock spin_clock = SPIN_CLOCK_NONE;   /* set once */
static double tsc_ticks_per_ns;                        /* set once */
static _Atomic bool calibrated;     /* release: the two above are set */

#define CALIBRATION_NS (15 * 1000 * 1000)

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A word from the "flags" line of /proc/cpuinfo, matched as a whole word */
static bool cpu_flag_present(const char *flags_line, const char *flag) {
    size_t len = strlen(flag);
    for (const char *p = strstr(flags_line, flag); p != NULL;
         p = strstr(p + 1, flag)) {
        bool starts = p == flags_line || isspace((unsigned char)p[-1]);
        bool ends = p[len] == '\0' || isspace((unsigned char)p[len]);
        if (starts && ends)
            return true;
    }
    return false;
}

/* Only a TSC that ticks at a constant rate and keeps ticking in deep
 * C-states measures wall time; otherwise the spin polls the clock. */
static bool tsc_is_invariant(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return false;
    char line[8192];
    bool invariant = false;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "flags", 5) == 0) {
            invariant = cpu_flag_present(line, "constant_tsc")
                        && cpu_flag_present(line, "nonstop_tsc");
            break;
        }
    }
    fclose(f);
    return invariant;
}

#if NVM_HAVE_TSC
static inline uint64_t read_tsc(void) {
    return __rdtsc();
}

static inline void cpu_relax(void) {
    _mm_pause();
}

/* One (clock, TSC) pair read as close together as possible: of several
 * tries, the one whose two bracketing TSC reads are nearest, so that a
 * preemption or interrupt during a try cannot skew the pairing. */
static void paired_clock_read(uint64_t *ns, uint64_t *tsc) {
    uint64_t best_width = UINT64_MAX;
    for (int i = 0; i < 32; i++) {
        uint64_t before = read_tsc();
        uint64_t clock_ns = monotonic_ns();
        uint64_t after = read_tsc();
        if (after - before < best_width) {
            best_width = after - before;
            *ns = clock_ns;
            *tsc = before + (after - before) / 2;
        }
    }
}

/* TSC ticks per ns against CLOCK_MONOTONIC over ~15 ms.  Only the two end
 * points are paired; what happens in between (even being descheduled)
 * advances both clocks alike, so a loaded machine calibrates the same. */
static double measure_tsc_rate(void) {
    uint64_t start_ns, start_tsc, now_ns, now_tsc;
    paired_clock_read(&start_ns, &start_tsc);
    do {
        paired_clock_read(&now_ns, &now_tsc);
    } while (now_ns - start_ns < CALIBRATION_NS);
    return (double)(now_tsc - start_tsc) / (double)(now_ns - start_ns);
}
#else
static inline void cpu_relax(void) {
}
#endif

static void calibrate_spin_clock(void) {
#if NVM_HAVE_TSC
    if (tsc_is_invariant()) {
        double rate = measure_tsc_rate();
        /* a rate far outside any real CPU means a broken (virtual) TSC */
        if (rate > 0.05 && rate < 100.0) {
            tsc_ticks_per_ns = rate;
            spin_clock = SPIN_CLOCK_TSC;
            atomic_store_explicit(&calibrated, true, memory_order_release);
            return;
        }
    }
#endif
    spin_clock = SPIN_CLOCK_MONOTONIC;
    atomic_store_explicit(&calibrated, true, memory_order_release);
}

static void ensure_calibrated(void) {
    pthread_once(&calibration_once, calibrate_spin_clock);
}

/* The busy-wait itself: no syscalls (clock_gettime is the vDSO). */
static void spin_for(uint64_t ns) {
#if NVM_HAVE_TSC
    if (spin_clock == SPIN_CLOCK_TSC) {
        uint64_t ticks = (uint64_t)((double)ns * tsc_ticks_per_ns);
        uint64_t start = read_tsc();
        while (read_tsc() - start < ticks)
            cpu_relax();
        return;
    }
#endif
    uint64_t start = monotonic_ns();
    while (monotonic_ns() - start < ns)
        cpu_relax();
}

void nvm_spin_ns(uint64_t ns) {
    ensure_calibrated();
    spin_for(ns);
}

void nvm_emulation_set(uint32_t read_ns, uint32_t write_ns) {
    if (read_ns != 0 || write_ns != 0)
        ensure_calibrated();
    atomic_store_explicit(&emulate_read_ns, read_ns, memory_order_release);
    atomic_store_explicit(&emulate_write_ns, write_ns, memory_order_release);
}

void nvm_emulation_get(uint32_t *read_ns, uint32_t *write_ns) {
    if (read_ns != NULL)
        *read_ns = atomic_load_explicit(&emulate_read_ns,
                                        memory_order_acquire);
    if (write_ns != NULL)
        *write_ns = atomic_load_explicit(&emulate_write_ns,
                                         memory_order_acquire);
}

/* Stats threads read the calibration another thread made: the acquire of
 * `calibrated` orders them after it. */
double nvm_emulation_calibration(void) {
    if (!atomic_load_explicit(&calibrated, memory_order_acquire))
        return 0.0;
    return spin_clock == SPIN_CLOCK_TSC ? tsc_ticks_per_ns : 0.0;
}

const char *nvm_emulation_clock_name(void) {
    if (!atomic_load_explicit(&calibrated, memory_order_acquire))
        return "none";
    return spin_clock == SPIN_CLOCK_TSC ? "tsc" : "clock_monotonic";
}

/* ------------------------------------------------------------------ */
/* accessors                                                           */
/* ------------------------------------------------------------------ */

static inline void account_read(unsigned cls, const void *nvm, size_t n) {
    uint64_t lines = nvm_lines_spanned(nvm, n);
    if (lines == 0)
        return;
    struct nvm_thread_counters *c = thread_counters();
    counter_add(c, &c->lines_read[class_index(cls)], lines);
    uint32_t ns = atomic_load_explicit(&emulate_read_ns, memory_order_acquire);
    if (ns != 0)
        spin_for((uint64_t)ns * lines);
}

static inline void account_write(unsigned cls, const void *nvm, size_t n) {
    uint64_t lines = nvm_lines_spanned(nvm, n);
    if (lines == 0)
        return;
    struct nvm_thread_counters *c = thread_counters();
    counter_add(c, &c->lines_written[class_index(cls)], lines);
    uint32_t ns = atomic_load_explicit(&emulate_write_ns,
                                       memory_order_acquire);
    if (ns != 0)
        spin_for((uint64_t)ns * lines);
}

void nvm_read_cls(unsigned cls, void *dst, const void *src_in_nvm, size_t n) {
    if (n == 0)
        return;
    /* loads need no pmem care: a plain copy is what libpmem2 would do */
    memcpy(dst, src_in_nvm, n);
    account_read(cls, src_in_nvm, n);
}

void nvm_write_cls(unsigned cls, void *dst_in_nvm, const void *src, size_t n) {
    if (n == 0)
        return;
    if (active.memcpy_fn != NULL)
        active.memcpy_fn(dst_in_nvm, src, n, VOLATILE_COPY_FLAGS);
    else
        memcpy(dst_in_nvm, src, n);
    account_write(cls, dst_in_nvm, n);
}

void nvm_copy_within_cls(unsigned cls, void *dst_in_nvm,
                         const void *src_in_nvm, size_t n) {
    if (n == 0)
        return;
    if (active.memmove_fn != NULL)
        active.memmove_fn(dst_in_nvm, src_in_nvm, n, VOLATILE_COPY_FLAGS);
    else
        memmove(dst_in_nvm, src_in_nvm, n);
    account_read(cls, src_in_nvm, n);
    account_write(cls, dst_in_nvm, n);
}

void nvm_memset_cls(unsigned cls, void *dst_in_nvm, int c, size_t n) {
    if (n == 0)
        return;
    if (active.memset_fn != NULL)
        active.memset_fn(dst_in_nvm, c, n, VOLATILE_COPY_FLAGS);
    else
        memset(dst_in_nvm, c, n);
    account_write(cls, dst_in_nvm, n);
}

int nvm_memcmp_cls(unsigned cls, const void *nvm, const void *dram, size_t n) {
    if (n == 0)
        return 0;
    int diff = memcmp(nvm, dram, n);
    account_read(cls, nvm, n);
    return diff;
}

void nvm_note_read_cls(unsigned cls, const void *nvm, size_t n) {
    account_read(cls, nvm, n);
}

/* Not instrumented for TSan: the racing writer holds a lock this reader
 * cannot know yet (nvm.h); volatile keeps the loop a loop (no memcpy, which
 * TSan would intercept). */
__attribute__((no_sanitize_thread))
static void racy_copy(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const volatile unsigned char *s = src;
    for (size_t i = 0; i < n; i++)
        d[i] = s[i];
}

void nvm_peek_cls(unsigned cls, void *dst, const void *src_in_nvm, size_t n) {
    if (n == 0)
        return;
    racy_copy(dst, src_in_nvm, n);
    account_read(cls, src_in_nvm, n);
}

/* ------------------------------------------------------------------ */
/* NUMA nodes                                                          */
/* ------------------------------------------------------------------ */

/* "0-3,6" from the nodes this process may allocate on */
static void describe_numa_nodes(char *buf, size_t len) {
    size_t used = 0;
    int max = numa_max_node();
    buf[0] = '\0';
    for (int n = 0; n <= max; n++) {
        if (!numa_bitmask_isbitset(numa_all_nodes_ptr, n))
            continue;
        int last = n;
        while (last + 1 <= max
               && numa_bitmask_isbitset(numa_all_nodes_ptr, last + 1))
            last++;
        int w = last == n
            ? snprintf(buf + used, len - used, "%s%d", used ? "," : "", n)
            : snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "",
                       n, last);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
        n = last;
    }
}

int nvm_check_node(const char *option, int node, char *err, size_t errlen) {
    if (numa_available() < 0) {
        set_err(err, errlen, "%s=%d: NUMA is not available on this system "
                "(libnuma: numa_available() failed)", option, node);
        return -1;
    }
    if (node < 0 || node > numa_max_node()
        || !numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)node)) {
        char nodes[256];
        describe_numa_nodes(nodes, sizeof(nodes));
        set_err(err, errlen, "%s=%d: no such NUMA node (this machine has "
                "nodes %s)", option, node, nodes);
        return -1;
    }
    return 0;
}

/* mbind(MPOL_BIND) to one node; MPOL_MF_MOVE migrates pages that were
 * already touched (dram_node= may bind memory the slab code has used). */
static int bind_to_node(void *addr, size_t len, int node, const char *option,
                        char *err, size_t errlen) {
    const size_t bits_per_word = sizeof(unsigned long) * CHAR_BIT;
    size_t bits = (size_t)numa_max_possible_node() + 1;
    size_t words = (bits + bits_per_word - 1) / bits_per_word;
    /* our own mask: libnuma's bitmask allocator exits on failure */
    unsigned long *mask = calloc(words, sizeof(unsigned long));
    if (mask == NULL) {
        set_err(err, errlen, "%s=%d: out of memory", option, node);
        return -1;
    }
    size_t bit = (size_t)node;
    mask[bit / bits_per_word] |= 1UL << (bit % bits_per_word);
    long rc = mbind(addr, len, MPOL_BIND, mask, words * bits_per_word + 1,
                    MPOL_MF_MOVE);
    int saved = errno;
    free(mask);
    if (rc != 0) {
        set_err(err, errlen, "%s=%d: mbind(MPOL_BIND) failed: %s", option,
                node, strerror(saved));
        return -1;
    }
    return 0;
}

int nvm_bind_dram(void *addr, size_t len, int node, char *err, size_t errlen) {
    if (nvm_check_node("dram_node", node, err, errlen) < 0)
        return -1;
    return bind_to_node(addr, len, node, "dram_node", err, errlen);
}

/* CPUs local to a NUMA node.  hwloc 2 attaches a CPU-less node (CXL,
 * KMEM-DAX, HBM in flat mode) under the package or machine it is close to
 * and gives it that parent's cpuset, so on the live system the kernel's
 * own per-node cpumap (read through hwloc) is what says "no CPUs". */
static int numa_node_cpu_count(hwloc_topology_t topo, hwloc_obj_t numa) {
    int count = hwloc_bitmap_weight(numa->cpuset);
    if (!hwloc_topology_is_thissystem(topo))
        return count;
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    if (cpus == NULL)
        return count;
    char path[128];
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/cpumap",
             numa->os_index);
    if (hwloc_linux_read_path_as_cpumask(path, cpus) == 0)
        count = hwloc_bitmap_weight(cpus);
    hwloc_bitmap_free(cpus);
    return count;
}

static void append_node_description(char *buf, size_t len, unsigned node,
                                    int cpus, uint64_t bytes) {
    size_t used = strlen(buf);
    if (used >= len)
        return;
    snprintf(buf + used, len - used, "%s%u (%d CPUs, %.1f GiB)",
             used ? ", " : "", node, cpus,
             (double)bytes / (1024.0 * 1024.0 * 1024.0));
}

void nvm_node_access_figure(int node, const char *name, char *out,
                            size_t len) {
    char path[128];
    snprintf(path, sizeof(path),
             "/sys/devices/system/node/node%d/access0/initiators/%s", node,
             name);
    snprintf(out, len, "unknown");
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char line[32];
    if (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] != '\0')
            snprintf(out, len, "%s", line);
    }
    fclose(f);
}

/* The HMAT's read latency of a node from its nearest CPUs, in ns; 0 when
 * the firmware gave none. */
static unsigned long node_read_latency(unsigned node) {
    char v[32];
    nvm_node_access_figure((int)node, "read_latency", v, sizeof(v));
    char *end;
    unsigned long ns = strtoul(v, &end, 10);
    return end != v && *end == '\0' ? ns : 0;
}

/* The lowest read latency the HMAT gives for a node with CPUs (what the
 * D-zone's DRAM answers in); 0 when it gives none. */
static unsigned long cpu_nodes_latency(hwloc_topology_t topo) {
    unsigned long best = 0;
    for (hwloc_obj_t numa = hwloc_get_next_obj_by_type(topo,
             HWLOC_OBJ_NUMANODE, NULL);
         numa != NULL;
         numa = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, numa)) {
        unsigned long ns = node_read_latency(numa->os_index);
        if (numa_node_cpu_count(topo, numa) > 0 && ns > 0
                && (best == 0 || ns < best))
            best = ns;
    }
    return best;
}

/* nvm_node=auto: the largest NUMA node that has memory and no CPUs and is
 * not faster than the CPUs' own memory by the HMAT (a fast CPU-less node
 * is HBM, ADM's place for the D-zone, not a slower tier); where the
 * firmware gives no latencies, the largest CPU-less node. */
static int find_cpuless_node(int *node_out, char *err, size_t errlen) {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) < 0) {
        set_err(err, errlen, "nvm_node=auto: hwloc_topology_init failed: %s",
                strerror(errno));
        return -1;
    }
    if (hwloc_topology_load(topo) < 0) {
        set_err(err, errlen, "nvm_node=auto: hwloc could not read the "
                "topology: %s", strerror(errno));
        hwloc_topology_destroy(topo);
        return -1;
    }
    char seen[512] = "";
    int best = -1, fast = -1;
    uint64_t best_bytes = 0;
    unsigned long cpu_ns = cpu_nodes_latency(topo), fast_ns = 0;
    for (hwloc_obj_t numa = hwloc_get_next_obj_by_type(topo,
             HWLOC_OBJ_NUMANODE, NULL);
         numa != NULL;
         numa = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, numa)) {
        int cpus = numa_node_cpu_count(topo, numa);
        uint64_t bytes = numa->attr->numanode.local_memory;
        append_node_description(seen, sizeof(seen), numa->os_index, cpus,
                                bytes);
        if (cpus != 0 || bytes == 0)
            continue;
        unsigned long ns = node_read_latency(numa->os_index);
        if (cpu_ns > 0 && ns > 0 && ns < cpu_ns) {
            fast = (int)numa->os_index;
            fast_ns = ns;
        } else if (bytes > best_bytes) {
            best = (int)numa->os_index;
            best_bytes = bytes;
        }
    }
    hwloc_topology_destroy(topo);
    if (best < 0 && fast >= 0) {
        set_err(err, errlen, "nvm_node=auto: the only CPU-less NUMA node, "
                "%d, is faster than the CPUs' memory (read latency %lu ns "
                "against %lu ns: HBM, a place for dram_node=); give "
                "nvm_node=N or nvm_path= (nodes: %s)", fast, fast_ns,
                cpu_ns, seen);
        return -1;
    }
    if (best < 0) {
        set_err(err, errlen, "nvm_node=auto: no CPU-less NUMA node found "
                "(nodes: %s); give nvm_node=N or nvm_path=", seen);
        return -1;
    }
    *node_out = best;
    return 0;
}

/* ------------------------------------------------------------------ */
/* backends                                                            */
/* ------------------------------------------------------------------ */

static void zone_reset(struct nvm_zone *zone) {
    memset(zone, 0, sizeof(*zone));
    zone->fd = -1;
    zone->node = -1;
}

static int map_anonymous(size_t size, void **out, const char *what,
                         char *err, size_t errlen) {
    /* NORESERVE: a cache larger than the commit limit is still useful;
     * pages are taken as the slab allocator touches them */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        char sz[64];
        set_err(err, errlen, "%s: cannot map nvm_size=%s of memory: %s",
                what, describe_size(size, sz, sizeof(sz)), strerror(errno));
        return -1;
    }
    *out = p;
    return 0;
}

static size_t page_rounded(size_t size, bool *overflow) {
    long page = sysconf(_SC_PAGESIZE);
    return round_up(size, page > 0 ? (size_t)page : 4096, overflow);
}

static int open_anonymous(const struct nvm_config *cfg, struct nvm_zone *zone,
                          char *err, size_t errlen) {
    bool overflow;
    size_t size = page_rounded(cfg->size, &overflow);
    if (overflow) {
        set_err(err, errlen, "nvm_size=%zu is too large", cfg->size);
        return -1;
    }
    if (map_anonymous(size, &zone->base, "N-zone (emulated on DRAM)", err,
                      errlen) < 0)
        return -1;
    zone->size = size;
    zone->backend = NVM_BACKEND_ANONYMOUS;
    return 0;
}

/* nvm_path= naming a device DAX that `daxctl reconfigure-device
 * --mode=system-ram` handed to the kmem driver: its character device
 * stays but cannot be opened (ENXIO), so say what it is instead.  0 when
 * the path is not such a device. */
static int dax_in_system_ram_mode(const char *path, char *err,
                                  size_t errlen) {
    char real[PATH_MAX], link[PATH_MAX], drv[PATH_MAX];
    if (realpath(path, real) == NULL || strncmp(real, "/dev/dax", 8) != 0)
        return 0;
    snprintf(link, sizeof(link), "/sys/bus/dax/devices/%.64s/driver",
             real + 5);
    ssize_t n = readlink(link, drv, sizeof(drv) - 1);
    if (n <= 0)
        return 0;
    drv[n] = '\0';
    const char *name = strrchr(drv, '/');
    name = name != NULL ? name + 1 : drv;
    if (strcmp(name, "kmem") != 0)
        return 0;
    set_err(err, errlen, "nvm_path=%.200s: the device DAX is onlined as "
            "system RAM (kmem driver, a NUMA node's memory): give that "
            "node with nvm_node=, or give the device back with `daxctl "
            "reconfigure-device --mode=devdax %.64s`", path, real + 5);
    return -1;
}

/* nvm_node= naming a node that has CPUs is allowed (a test machine, a
 * far socket) but is rarely what an operator means by slower memory:
 * say so, naming the node and its CPUs. */
static void warn_node_with_cpus(int node) {
    char path[64], cpus[256] = "";
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist",
             node);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    if (fgets(cpus, sizeof(cpus), f) == NULL)
        cpus[0] = '\0';
    fclose(f);
    cpus[strcspn(cpus, "\n")] = '\0';
    if (cpus[0] != '\0')
        fprintf(stderr, "Warning: the N-zone is on NUMA node %d, which has "
                "CPUs (%s): it is usually a node of the D-zone's tier, not "
                "slower memory\n", node, cpus);
}

static int open_numa_node(const struct nvm_config *cfg, struct nvm_zone *zone,
                          char *err, size_t errlen) {
    int node = cfg->node;
    if (cfg->node_auto && find_cpuless_node(&node, err, errlen) < 0)
        return -1;
    if (nvm_check_node("nvm_node", node, err, errlen) < 0)
        return -1;
    bool overflow;
    size_t size = page_rounded(cfg->size, &overflow);
    long long free_bytes = 0;
    long long node_bytes = numa_node_size64(node, &free_bytes);
    bool too_big = node_bytes > 0 && (uint64_t)size > (uint64_t)node_bytes;
    if (overflow || too_big) {
        char want[64], have[64];
        set_err(err, errlen, "nvm_size=%s is larger than NUMA node %d (%s)",
                describe_size(cfg->size, want, sizeof(want)), node,
                describe_size((uint64_t)node_bytes, have, sizeof(have)));
        return -1;
    }
    /* the zone's pages are taken as the slabs first touch them, and
     * MPOL_BIND lets none go elsewhere: a node without room for them
     * would fail the server later, under load, so it is refused now */
    if (node_bytes > 0 && (uint64_t)size > (uint64_t)free_bytes) {
        char want[64], have[64], total[64];
        set_err(err, errlen, "nvm_size=%s is more than NUMA node %d has "
                "free (%s of %s)",
                describe_size(cfg->size, want, sizeof(want)), node,
                describe_size((uint64_t)free_bytes, have, sizeof(have)),
                describe_size((uint64_t)node_bytes, total, sizeof(total)));
        return -1;
    }
    void *base = NULL;
    if (map_anonymous(size, &base, "nvm_node", err, errlen) < 0)
        return -1;
    if (bind_to_node(base, size, node, "nvm_node", err, errlen) < 0) {
        munmap(base, size);
        return -1;
    }
    zone->base = base;
    zone->size = size;
    zone->node = node;
    zone->backend = NVM_BACKEND_NUMA_NODE;
    /* with dram_node= elsewhere (ADM: D on a fast node) a node with CPUs
     * is the slower tier on purpose */
    if (cfg->dram_node < 0 || cfg->dram_node == node)
        warn_node_with_cpus(node);
    return 0;
}

/* The pieces of an nvm_path= open, released in reverse on failure. */
struct path_open {
    const char *path;
    int fd;
    bool grown;                 /* the file was extended: shrink it back */
    off_t original_size;
    struct pmem2_source *source;
    struct pmem2_config *config;
    struct pmem2_map *map;
};

static void path_open_release(struct path_open *po) {
    if (po->map != NULL)
        pmem2_map_delete(&po->map);
    if (po->config != NULL)
        pmem2_config_delete(&po->config);
    if (po->source != NULL)
        pmem2_source_delete(&po->source);
    if (po->grown && ftruncate(po->fd, po->original_size) != 0) {
        /* nothing more to do: the file stays longer than it was */
    }
    if (po->fd >= 0)
        close(po->fd);
    po->fd = -1;
}

static int open_path_fd(struct path_open *po, char *err, size_t errlen) {
    struct stat st;
    if (stat(po->path, &st) != 0) {
        if (errno == ENOENT)
            set_err(err, errlen, "nvm_path=%s: no such file or device "
                    "(create the file first, or give an existing "
                    "/dev/daxX.Y)", po->path);
        else
            set_err(err, errlen, "nvm_path=%s: %s", po->path,
                    strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "nvm_path=%s is a directory: give a file on "
                "the fsdax mount or a /dev/daxX.Y device", po->path);
        return -1;
    }
    po->fd = open(po->path, O_RDWR | O_CLOEXEC);
    if (po->fd < 0) {
        set_err(err, errlen, "nvm_path=%s: cannot open for reading and "
                "writing: %s", po->path, strerror(errno));
        return -1;
    }
    /* two servers caching in one file would overwrite each other's items */
    if (flock(po->fd, LOCK_EX | LOCK_NB) != 0) {
        int saved = errno;
        set_err(err, errlen, saved == EWOULDBLOCK
                ? "nvm_path=%s is in use by another process (locked)"
                : "nvm_path=%s: cannot lock: %s", po->path, strerror(saved));
        return -1;
    }
    return 0;
}

static int pmem2_failed(char *err, size_t errlen, const char *path,
                        const char *what) {
    set_err(err, errlen, "nvm_path=%s: %s failed: %s", path, what,
            pmem2_errormsg());
    return -1;
}

/* Every block of a regular file's mapped range must exist before the zone
 * is used: a store into a hole that the file system can no longer fill
 * kills the server with SIGBUS.  posix_fallocate allocates the holes of a
 * pre-sized sparse file as well as the tail of a short one, and leaves
 * the bytes already there as they are. */
static int allocate_regular_file(struct path_open *po, off_t current,
                                 size_t size, char *err, size_t errlen) {
    int rc = posix_fallocate(po->fd, 0, (off_t)size);
    if (rc == 0) {
        if (current < (off_t)size) {
            po->grown = true;
            po->original_size = current;
        }
        return 0;
    }
    /* a failed fallocate may have extended a short file: give it back its
     * length (holes it filled inside that length stay allocated) */
    if (current < (off_t)size && ftruncate(po->fd, current) != 0) {
        /* the file stays longer; the message below still holds */
    }
    char want[64], avail[64];
    struct statvfs fs;
    if (rc == ENOSPC) {
        uint64_t free_bytes = statvfs(po->path, &fs) == 0
            ? (uint64_t)fs.f_bavail * fs.f_frsize : 0;
        set_err(err, errlen, "nvm_path=%s: not enough space on its file "
                "system to allocate nvm_size=%s (%s available)", po->path,
                describe_size(size, want, sizeof(want)),
                describe_size(free_bytes, avail, sizeof(avail)));
    } else {
        set_err(err, errlen, "nvm_path=%s: cannot allocate nvm_size=%s in "
                "the file: %s", po->path,
                describe_size(size, want, sizeof(want)), strerror(rc));
    }
    return -1;
}

/* The source's size and alignment decide the length mapped; a regular
 * file gets that whole length allocated, a short device is an error. */
static int size_path_source(struct path_open *po, size_t want, size_t *length,
                            char *err, size_t errlen) {
    size_t align, have;
    if (pmem2_source_alignment(po->source, &align) != 0)
        return pmem2_failed(err, errlen, po->path, "pmem2_source_alignment");
    if (pmem2_source_size(po->source, &have) != 0)
        return pmem2_failed(err, errlen, po->path, "pmem2_source_size");
    bool overflow;
    size_t size = round_up(want, align, &overflow);
    struct stat st;
    if (overflow || fstat(po->fd, &st) != 0) {
        set_err(err, errlen, "nvm_path=%s: cannot size nvm_size=%zu: %s",
                po->path, want, overflow ? "too large" : strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode)) {
        if (allocate_regular_file(po, st.st_size, size, err, errlen) < 0)
            return -1;
    } else if (have < size) {
        char w[64], h[64];
        set_err(err, errlen, "nvm_size=%s is larger than the device %s "
                "(%s)", describe_size(size, w, sizeof(w)), po->path,
                describe_size(have, h, sizeof(h)));
        return -1;
    }
    *length = size;
    return 0;
}

static enum nvm_granularity granularity_of(struct pmem2_map *map) {
    switch (pmem2_map_get_store_granularity(map)) {
    case PMEM2_GRANULARITY_BYTE: return NVM_GRANULARITY_BYTE;
    case PMEM2_GRANULARITY_CACHE_LINE: return NVM_GRANULARITY_CACHE_LINE;
    case PMEM2_GRANULARITY_PAGE: return NVM_GRANULARITY_PAGE;
    }
    return NVM_GRANULARITY_NONE;
}

static enum nvm_backend path_backend_kind(int fd, enum nvm_granularity g) {
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode))
        return NVM_BACKEND_DEVDAX;
    /* MAP_SYNC (byte or cache-line granularity) only works on DAX files */
    return g == NVM_GRANULARITY_PAGE ? NVM_BACKEND_FILE : NVM_BACKEND_FSDAX;
}

static int map_path(struct path_open *po, size_t want, char *err,
                    size_t errlen) {
    size_t length = 0;
    if (pmem2_source_from_fd(&po->source, po->fd) != 0)
        return pmem2_failed(err, errlen, po->path, "pmem2_source_from_fd");
    if (size_path_source(po, want, &length, err, errlen) < 0)
        return -1;
    if (pmem2_config_new(&po->config) != 0)
        return pmem2_failed(err, errlen, po->path, "pmem2_config_new");
    /* PAGE is the weakest requirement, so any file maps; nvm_persist
     * flushes only where the mapping reports a finer granularity */
    if (pmem2_config_set_required_store_granularity(po->config,
            PMEM2_GRANULARITY_PAGE) != 0)
        return pmem2_failed(err, errlen, po->path,
                            "pmem2_config_set_required_store_granularity");
    if (pmem2_config_set_length(po->config, length) != 0)
        return pmem2_failed(err, errlen, po->path, "pmem2_config_set_length");
    if (pmem2_map_new(&po->map, po->config, po->source) != 0)
        return pmem2_failed(err, errlen, po->path, "pmem2_map_new");
    return 0;
}

static int open_path(const struct nvm_config *cfg, struct nvm_zone *zone,
                     char *err, size_t errlen) {
    struct path_open po = { .path = cfg->path, .fd = -1 };
    if (open_path_fd(&po, err, errlen) < 0
        || map_path(&po, cfg->size, err, errlen) < 0) {
        path_open_release(&po);
        return -1;
    }
    pmem2_config_delete(&po.config);
    zone->base = pmem2_map_get_address(po.map);
    zone->size = pmem2_map_get_size(po.map);
    zone->granularity = granularity_of(po.map);
    zone->backend = path_backend_kind(po.fd, zone->granularity);
    zone->fd = po.fd;
    zone->source = po.source;
    zone->map = po.map;
    return 0;
}

int nvm_zone_open(const struct nvm_config *cfg, struct nvm_zone *zone,
                  char *err, size_t errlen) {
    zone_reset(zone);
    if (active.base != 0) {
        set_err(err, errlen, "an N-zone is already open in this process");
        return -1;
    }
    if (cfg->size == 0) {
        set_err(err, errlen, "an N-zone needs nvm_size=SIZE (e.g. 4g)");
        return -1;
    }
    if (cfg->path != NULL && cfg->have_node) {
        set_err(err, errlen, "nvm_path= and nvm_node= both given: the "
                "N-zone comes from one of them");
        return -1;
    }
    if (cfg->dram_node >= 0
        && nvm_check_node("dram_node", cfg->dram_node, err, errlen) < 0)
        return -1;
    if (cfg->path != NULL
        && dax_in_system_ram_mode(cfg->path, err, errlen) != 0)
        return -1;
    int rc;
    if (cfg->path != NULL)
        rc = open_path(cfg, zone, err, errlen);
    else if (cfg->have_node)
        rc = open_numa_node(cfg, zone, err, errlen);
    else
        rc = open_anonymous(cfg, zone, err, errlen);
    if (rc < 0) {
        zone_reset(zone);
        return -1;
    }
    nvm_emulation_set(cfg->emulate_read_ns, cfg->emulate_write_ns);
    activate_zone(zone);
    install_fault_handler(cfg);
    return 0;
}

void nvm_zone_close(struct nvm_zone *zone) {
    if (zone->base != NULL && (uintptr_t)zone->base == active.base)
        deactivate_zone();
    if (zone->map != NULL)
        pmem2_map_delete(&zone->map);
    else if (zone->base != NULL)
        munmap(zone->base, zone->size);
    if (zone->source != NULL)
        pmem2_source_delete(&zone->source);
    if (zone->fd >= 0)
        close(zone->fd);            /* also drops the flock */
    zone_reset(zone);
}

const char *nvm_zone_backend_name(const struct nvm_zone *zone) {
    switch (zone->backend) {
    case NVM_BACKEND_NONE: return "none";
    case NVM_BACKEND_DEVDAX: return "devdax";
    case NVM_BACKEND_FSDAX: return "fsdax";
    case NVM_BACKEND_FILE: return "file";
    case NVM_BACKEND_NUMA_NODE: return "numa_node";
    case NVM_BACKEND_ANONYMOUS: return "anonymous";
    }
    return "unknown";
}

const char *nvm_zone_granularity_name(const struct nvm_zone *zone) {
    switch (zone->granularity) {
    case NVM_GRANULARITY_NONE: return "none";
    case NVM_GRANULARITY_BYTE: return "byte";
    case NVM_GRANULARITY_CACHE_LINE: return "cache_line";
    case NVM_GRANULARITY_PAGE: return "page";
    }
    return "unknown";
}
