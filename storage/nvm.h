/*
 * nvm.h: the N-zone (the slower byte-addressable tier) and the only
 * accessors allowed to read or write its bytes (doc/nvm.md, "Accessors and
 * accounting").  See nvm.c for the locking notes and doc/nvm.md for how
 * the backends, the line accounting and the latency emulation work.
 */
#ifndef NVM_H
#define NVM_H

#include "nvm_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pmem2_map;
struct pmem2_source;

enum nvm_backend {
    NVM_BACKEND_NONE = 0,       /* zone not open */
    NVM_BACKEND_DEVDAX,         /* nvm_path= a device-DAX character device */
    NVM_BACKEND_FSDAX,          /* nvm_path= a file that maps with DAX */
    NVM_BACKEND_FILE,           /* nvm_path= any other file (page cache) */
    NVM_BACKEND_NUMA_NODE,      /* nvm_node=: anonymous memory on a node */
    NVM_BACKEND_ANONYMOUS,      /* only nvm_size=: emulated on DRAM */
};

/* Store granularity of the mapping as libpmem2 reports it; NONE for the
 * backends that are not mapped through libpmem2. */
enum nvm_granularity {
    NVM_GRANULARITY_NONE = 0,
    NVM_GRANULARITY_BYTE,
    NVM_GRANULARITY_CACHE_LINE,
    NVM_GRANULARITY_PAGE,
};

struct nvm_zone {
    void *base;                 /* first byte of the N-zone */
    size_t size;                /* mapped bytes (nvm_size rounded up to the
                                 * source's alignment) */
    enum nvm_backend backend;
    enum nvm_granularity granularity;
    int node;                   /* NUMA node the zone is bound to, or -1 */
    int fd;                     /* nvm_path= backends: kept open and locked */
    struct pmem2_source *source;
    struct pmem2_map *map;
};

/* The daemon's N-zone, opened from settings.nvm at start-up by
 * memcached.c; backend NVM_BACKEND_NONE without one. */
extern struct nvm_zone nvm_zone;

#define NVM_LINE_SIZE 64

/* ---- start-up ---- */

/* Open the N-zone described by cfg and make it the process's active zone
 * (the one the accessors count against and emulate), with a SIGBUS
 * handler that reports a fault inside it and exits with status 74.  Returns 0, or -1 with
 * a message for the operator in err; on failure nothing stays mapped, open
 * or modified.  Call once at start-up, before worker threads exist. */
int nvm_zone_open(const struct nvm_config *cfg, struct nvm_zone *zone,
                  char *err, size_t errlen);
void nvm_zone_close(struct nvm_zone *zone);

/* 0 when NUMA node `node` exists, else -1 with "OPTION=N: no such NUMA
 * node (this machine has nodes ...)" in err. */
int nvm_check_node(const char *option, int node, char *err, size_t errlen);
/* One of the kernel's HMAT figures for NUMA node `node` as seen from its
 * nearest CPUs (/sys/devices/system/node/nodeN/access0/initiators/NAME:
 * read_latency and write_latency in ns, read_bandwidth and
 * write_bandwidth in MB/s), or "unknown" where the firmware gave none. */
void nvm_node_access_figure(int node, const char *name, char *out,
                            size_t len);
/* Bind DRAM (the D-zone) to `node` with mbind(MPOL_BIND) (dram_node=N). */
int nvm_bind_dram(void *addr, size_t len, int node, char *err, size_t errlen);

/* ---- durability (doc/restart.md "What survives") ---- */
/* Whether the zone outlives the process (nvm_path= backends). */
bool nvm_zone_is_persistent(const struct nvm_zone *zone);
/* Make [p, p+n) of the active zone durable before anything written after
 * this call: flush and drain on DAX mappings; elsewhere only a fence, as
 * the page cache (or anonymous memory) already holds every store. */
void nvm_persist(const void *p, size_t n);
/* Make the whole zone durable against power loss (msync for a file in the
 * page cache); graceful shutdown.  0 or -1 with errno. */
int nvm_zone_sync(const struct nvm_zone *zone);

const char *nvm_zone_backend_name(const struct nvm_zone *zone);
const char *nvm_zone_granularity_name(const struct nvm_zone *zone);
/* true when [p, p+n) lies inside the active zone (for callers' asserts) */
bool nvm_contains(const void *p, size_t n);

/* ---- accessors: the only code that touches N-zone bytes ----
 * cls is the slab class the bytes belong to (1..MAX_NUMBER_OF_SLAB_CLASSES-1)
 * or 0 when unknown; out-of-range ids are counted as 0.  Each call counts
 * the 64-byte lines it touches and, with nvm_emulate=, spins for them. */
void nvm_read_cls(unsigned cls, void *dst, const void *src_in_nvm, size_t n);
void nvm_write_cls(unsigned cls, void *dst_in_nvm, const void *src, size_t n);
/* memmove semantics: the ranges may overlap */
void nvm_copy_within_cls(unsigned cls, void *dst_in_nvm,
                         const void *src_in_nvm, size_t n);
void nvm_memset_cls(unsigned cls, void *dst_in_nvm, int c, size_t n);
/* memcmp(nvm, dram, n); all n bytes are counted even if memcmp stops early */
int nvm_memcmp_cls(unsigned cls, const void *nvm, const void *dram, size_t n);
/* Bytes somebody else reads directly (the kernel, for a zero-copy send of a
 * value that lives in the N-zone): counted and emulated, not copied. */
void nvm_note_read_cls(unsigned cls, const void *nvm, size_t n);
/* A read of bytes another thread may be writing at that moment: an N
 * chunk's header read before the item lock that guards it is known (the
 * CLOCK hand and the crawler find the lock from the header's hash).
 * Counted and emulated as nvm_read_cls; the copy is made with volatile
 * loads hidden from the thread sanitizer, because the caller treats what
 * it got as a hint and re-reads what it acts on under the lock. */
void nvm_peek_cls(unsigned cls, void *dst, const void *src_in_nvm, size_t n);

static inline void nvm_read(void *dst, const void *src_in_nvm, size_t n) {
    nvm_read_cls(0, dst, src_in_nvm, n);
}
static inline void nvm_write(void *dst_in_nvm, const void *src, size_t n) {
    nvm_write_cls(0, dst_in_nvm, src, n);
}
static inline void nvm_copy_within(void *dst_in_nvm, const void *src_in_nvm,
                                   size_t n) {
    nvm_copy_within_cls(0, dst_in_nvm, src_in_nvm, n);
}
static inline void nvm_memset(void *dst_in_nvm, int c, size_t n) {
    nvm_memset_cls(0, dst_in_nvm, c, n);
}
static inline int nvm_memcmp(const void *nvm, const void *dram, size_t n) {
    return nvm_memcmp_cls(0, nvm, dram, n);
}
static inline void nvm_note_read(const void *nvm, size_t n) {
    nvm_note_read_cls(0, nvm, n);
}

/* 64-byte lines [p, p+n) touches, on offsets from the active zone's base */
uint64_t nvm_lines_spanned(const void *p, size_t n);

/* ---- accounting (stats tier) ----
 * Sums over every thread that ever touched the N-zone, exited ones
 * included, minus what nvm_stats_reset() recorded. */
void nvm_stats_sum(uint64_t *lines_read, uint64_t *lines_written);
/* arrays of nclasses entries, index = slab class id (0 = unknown class) */
void nvm_stats_sum_classes(uint64_t *lines_read, uint64_t *lines_written,
                           size_t nclasses);
void nvm_stats_reset(void);

/* ---- latency emulation ---- */
/* Change R:W at run time (calibrates the clock first if needed). */
void nvm_emulation_set(uint32_t read_ns, uint32_t write_ns);
void nvm_emulation_get(uint32_t *read_ns, uint32_t *write_ns);
/* TSC ticks per ns found by calibration; 0 when not calibrated yet or when
 * the spin polls clock_gettime (no invariant TSC). */
double nvm_emulation_calibration(void);
/* "tsc", "clock_monotonic" or "none" (not calibrated yet) */
const char *nvm_emulation_clock_name(void);
/* Busy-wait ns nanoseconds with the calibrated clock (exposed for tests). */
void nvm_spin_ns(uint64_t ns);

#endif /* NVM_H */
