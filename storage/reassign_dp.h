/*
 * reassign_dp.h: benefit-aware DRAM page reassignment across slab classes
 * (HMCached's; doc/tiering.md, "Reassignment") and the PSA baseline.
 *
 * Self-contained: depends on libc and pthreads only, so the engine includes
 * it without pulling in the daemon, and the unit test drives it alone.
 *
 * Four layers, each usable on its own:
 *   1. the mapping set: per slab class, a histogram of the access counters
 *      of the items it holds (both zones together), fed lock-free from the
 *      request path (reassign_note) and aggregated by the tier thread
 *      (reassign_drain);
 *   2. benefit curves built from it (Eq. 2 with a size-aware per-access
 *      gain, after X-Mem's access-pattern cost);
 *   3. the optimal split of M DRAM pages (Eq. 3 subject to Eq. 4): exact DP
 *      and greedy marginal gain;
 *   4. a rate-limited, hysteretic move plan, and PSA (Carra & Michiardi) as
 *      the miss-driven baseline.
 * reassign_period() runs 1-4 once per reassignment period and records the
 * figures `stats tier` reads through reassign_stats_get().
 *
 * Threads: reassign_note() from any thread that owns a slot (one writer per
 * slot); everything else from the tier thread, except the stats getters,
 * which any thread may call.  Details in reassign_dp.c's header.
 */
#ifndef REASSIGN_DP_H
#define REASSIGN_DP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Slab class ids index arrays directly (memcached's ids are 1..63; class 0
 * is unused and simply stays empty). Equals MAX_NUMBER_OF_SLAB_CLASSES. */
#define REASSIGN_MAX_CLASSES 65

/* ---- 1. the mapping set ----
 * Counter values 0..255 (every N item, and D items below 256) get one
 * bucket each.  Values 256..65535 share log-spaced buckets: 8 per power of
 * two, so a bucket spans at most 1/8 of its lower bound (2^e..2^(e+1) is
 * cut into 8 equal slices).  Values above 65535 count as 65535.  Each
 * bucket keeps the exact sum of its counters besides the item count, so
 * only a bucket that a top-k cut splits is approximated (by its mean). */
#define REASSIGN_COUNTER_MAX 65535
#define REASSIGN_EXACT_BUCKETS 256
#define REASSIGN_LOG_SLICES 8
#define REASSIGN_NBUCKETS (REASSIGN_EXACT_BUCKETS + 8 * REASSIGN_LOG_SLICES)

/* Bucket of a counter value, and the value range [low, high] it covers. */
static inline unsigned reassign_bucket_of(uint32_t counter)
{
    if (counter > REASSIGN_COUNTER_MAX) {
        counter = REASSIGN_COUNTER_MAX;
    }
    if (counter < REASSIGN_EXACT_BUCKETS) {
        return counter;
    }
    unsigned octave = 31 - (unsigned)__builtin_clz(counter); /* 8..15 */
    unsigned slice = (counter >> (octave - 3)) & (REASSIGN_LOG_SLICES - 1);
    return REASSIGN_EXACT_BUCKETS + (octave - 8) * REASSIGN_LOG_SLICES
           + slice;
}
uint32_t reassign_bucket_low(unsigned bucket);
uint32_t reassign_bucket_high(unsigned bucket);

/* Slots: 0..nworkers-1 belong to the worker threads (their index in
 * storage_worker.c's registry), then one for the tier thread, one for the
 * LRU crawler and one for the page mover (slabs.c's rebalance thread,
 * which demotes or evicts the items of the page it empties).  A slot must
 * only ever be written by one thread at a time.  Memory: one 65 x 320
 * matrix of 16-byte cells, 325 KiB, per slot.  Returns 0, or -1 when out
 * of memory. Call before any thread notes; not thread-safe. */
int reassign_init(unsigned nworkers);
/* Frees everything; only once no thread can call reassign_note(). */
void reassign_shutdown(void);
unsigned reassign_slot_tier(void);
unsigned reassign_slot_crawler(void);
unsigned reassign_slot_mover(void);

/* ---- the note table (request path) ----
 * reassign_dp.c's; here so that a note is inline and a hit does not
 * enter reassign_dp.c.  reassign_init publishes the table (release) and
 * reassign_shutdown takes it away; a slot's cells are written by their
 * one owner with relaxed load + store (see reassign_dp.c). */
struct hist_cell {
    _Atomic uint64_t items;       /* net items entered, wrapping */
    _Atomic uint64_t counter_sum; /* net counter values entered, wrapping */
};

/* A slot's classes: the bit of every class it has ever noted, set once by
 * the owner (a load first, so that the line stays shared with the drainer
 * afterwards) and never cleared.  The drain reads only those classes'
 * cells: a workload of a few sizes fills a few of the 65 classes, and
 * reading every class of every slot each period cost the tier thread
 * megabytes of loads a period at 16 workers (doc/scaling.md). */
#define REASSIGN_CLASS_WORDS ((REASSIGN_MAX_CLASSES + 63) / 64)

struct note_slot {
    _Atomic uint64_t classes[REASSIGN_CLASS_WORDS];
    /* its own cache lines: the mask is read by the drain, the cells are
     * written on every note */
    _Alignas(64) struct hist_cell cells[REASSIGN_MAX_CLASSES]
                                       [REASSIGN_NBUCKETS];
};

struct note_table {
    unsigned nworkers;
    unsigned nslots;
    struct note_slot *slots;
};

extern struct note_table *_Atomic reassign_notes;
extern _Atomic uint64_t reassign_notes_rejected;

/* Single writer per slot: a plain add made of relaxed load and store. */
static inline void reassign_cell_add(struct hist_cell *cell, uint64_t items,
                                     uint64_t counter_sum)
{
    atomic_store_explicit(&cell->items,
        atomic_load_explicit(&cell->items, memory_order_relaxed) + items,
        memory_order_relaxed);
    atomic_store_explicit(&cell->counter_sum,
        atomic_load_explicit(&cell->counter_sum, memory_order_relaxed)
            + counter_sum,
        memory_order_relaxed);
}

/* Single writer per slot: mark class cls noted (release: a drain that
 * sees the bit sees the slot's cells as they were when it was set, or
 * later). */
static inline void reassign_mark_class(struct note_slot *slot, unsigned cls)
{
    _Atomic uint64_t *word = &slot->classes[cls / 64];
    uint64_t bit = (uint64_t)1 << (cls % 64);
    uint64_t v = atomic_load_explicit(word, memory_order_relaxed);
    if ((v & bit) == 0) {
        atomic_store_explicit(word, v | bit, memory_order_release);
    }
}

static inline uint32_t reassign_clamp_counter(int counter)
{
    return counter > REASSIGN_COUNTER_MAX ? REASSIGN_COUNTER_MAX
                                          : (uint32_t)counter;
}

/* Request path: one item of class `cls` changed its counter from
 * old_counter to new_counter.  old_counter -1: a new item (stored, or
 * arrived from another class); new_counter -1: the item left (deleted,
 * evicted, expired, flushed, moved to another class).  Moving between the
 * D- and the N-zone changes nothing (both zones share the histogram).
 * No locks, no read-modify-write, no spinning, and it cannot overflow or
 * lose a record; notes before reassign_init() are ignored, notes with a bad
 * slot or class are counted in reassign_stats.notes_rejected.  Always
 * inline: a hit of an N item notes once, and the call would be one more
 * file its request enters (doc/design.md "The request path"). */
__attribute__((always_inline))
static inline void reassign_note(unsigned slot, unsigned cls,
                                 int old_counter, int new_counter)
{
    struct note_table *t =
        atomic_load_explicit(&reassign_notes, memory_order_acquire);
    if (t == NULL) {
        return;
    }
    if (slot >= t->nslots || cls >= REASSIGN_MAX_CLASSES) {
        atomic_fetch_add_explicit(&reassign_notes_rejected, 1,
                                  memory_order_relaxed);
        return;
    }
    if (old_counter == new_counter || (old_counter < 0 && new_counter < 0)) {
        return;
    }
    reassign_mark_class(&t->slots[slot], cls);
    struct hist_cell *cells = t->slots[slot].cells[cls];
    if (old_counter >= 0 && new_counter >= 0) {
        uint32_t from = reassign_clamp_counter(old_counter);
        uint32_t to = reassign_clamp_counter(new_counter);
        unsigned bfrom = reassign_bucket_of(from);
        unsigned bto = reassign_bucket_of(to);
        if (bfrom == bto) {
            /* the common +1 on a hit: one cell, the count unchanged */
            reassign_cell_add(&cells[bto], 0, (uint64_t)to - from);
            return;
        }
        reassign_cell_add(&cells[bfrom], UINT64_MAX, 0 - (uint64_t)from);
        reassign_cell_add(&cells[bto], 1, to);
        return;
    }
    if (old_counter >= 0) {
        uint32_t from = reassign_clamp_counter(old_counter);
        reassign_cell_add(&cells[reassign_bucket_of(from)], UINT64_MAX,
                          0 - (uint64_t)from);
        return;
    }
    uint32_t to = reassign_clamp_counter(new_counter);
    reassign_cell_add(&cells[reassign_bucket_of(to)], 1, to);
}

/* Tier thread: aggregate every slot into the mapping set that curves and
 * the getters read.  O(slots * noted classes * buckets) relaxed loads. */
void reassign_drain(void);

/* The mapping set as of the last drain: items of `cls` in `bucket` and the
 * sum of their counters. Returns false for a bad class or bucket. */
bool reassign_hist_get(unsigned cls, unsigned bucket, uint64_t *items,
                       uint64_t *counter_sum);

/* ---- 2. benefit curves ----
 * Per-access gain of serving an item of S bytes from DRAM instead of NVM.
 * size_aware (default): X-Mem's view of a value of L = ceil(S/line) lines:
 * t(S) = rand + (L-1)*seq in each memory, gain = t_nvm(S) - t_dram(S), so
 * large values gain less per byte than small ones.  Otherwise the paper's
 * Eq. 2 factor S * P0/S0, with S0 = one line and P0 = nvm_rand - dram_rand
 * (both models agree for a one-line item). */
struct reassign_cost_model {
    double nvm_rand_ns;  /* 300: the paper's emulated NVM read latency */
    double nvm_seq_ns;   /* 100: our pick, see reassign_dp.c */
    double dram_rand_ns; /* 76: the paper's measured DRAM latency */
    double dram_seq_ns;  /* 10: one streamed line at ~6 GB/s */
    unsigned line_bytes; /* 64 */
    bool size_aware;
};
void reassign_cost_model_default(struct reassign_cost_model *cm);
double reassign_access_gain(const struct reassign_cost_model *cm,
                            unsigned item_bytes);

/* Curves are one flat matrix: row n holds Benefit[n][0..M] (M+1 doubles),
 * at curves[n * (M + 1) + m].  Benefit[n][m] = (sum of the top m*P_n
 * counters of class n) * gain(S_n); Benefit[n][0] = 0.  Builds row `cls`
 * from the mapping set as of the last drain. */
void reassign_curve_build(unsigned cls, unsigned chunk_size,
                          unsigned chunks_per_page, unsigned M,
                          const struct reassign_cost_model *cm, double *row);
/* Same from a caller's histogram (items[b], counter_sum[b], b < NBUCKETS). */
void reassign_curve_from_hist(const uint64_t *items,
                              const uint64_t *counter_sum, double gain,
                              unsigned chunks_per_page, unsigned M,
                              double *row);

/* ---- 3. optimal allocation ----
 * Both choose out[n] maximising sum_n curves[n][out[n]] subject to
 * sum_n out[n] = M and out[n] >= min_pages[n] (min_pages may be NULL: all
 * 0).  They return 0 and store the total in *total (may be NULL), or -1 if
 * sum min_pages > M, nclasses is 0 or memory ran out.
 *
 * dp_allocate: exact for any curves, O(N * E^2) time and O(N * E) memory
 * with E = M - sum min_pages.  Above REASSIGN_DP_MAX_UNITS it allocates in
 * units of g = ceil(E / REASSIGN_DP_MAX_UNITS) pages and hands the last
 * E mod g pages out by marginal gain: still feasible, no longer exact.
 * greedy_allocate: page by page to the largest marginal gain, a heap over
 * classes, O(N + E log N); exact when every curve is concave, which the
 * curves built above are (counters are taken in descending order). */
#define REASSIGN_DP_MAX_UNITS 1024
int dp_allocate(const double *curves, unsigned nclasses, unsigned M,
                const unsigned *min_pages, unsigned *out, double *total);
int greedy_allocate(const double *curves, unsigned nclasses, unsigned M,
                    const unsigned *min_pages, unsigned *out, double *total);

/* ---- 4. planning moves ---- */
struct reassign_move {
    unsigned from_class;
    unsigned to_class;
    double predicted_gain; /* benefit after this move minus before it */
};
struct reassign_plan_params {
    unsigned max_moves; /* rate limit: page moves per period */
    /* Hysteresis: plan nothing unless the optimum beats the current split
     * by more than this fraction of the current benefit. */
    double min_gain_fraction;
};
/* Up to max_moves single-page moves, each from the class with the largest
 * surplus (current - optimal) to the one with the largest deficit, lowest
 * class id on ties; stops early at a move whose predicted gain is
 * negative.  `current` and `optimal` must both sum to M. Returns the
 * number of moves written to out (room for max_moves). */
unsigned reassign_plan(const double *curves, unsigned M,
                       const unsigned *current, const unsigned *optimal,
                       unsigned nclasses,
                       const struct reassign_plan_params *params,
                       struct reassign_move *out);

/* ---- 5. PSA baseline ----
 * One period's misses and evictions per class (deltas; either array may
 * be NULL).  pressure[n] = misses[n] + evictions[n]; the receiver is the
 * class with the highest pressure per page, pressure / max(pages, 1); the
 * donor the class with the lowest pressure per page among the others that
 * hold more than one page.  One page moves iff the receiver's pressure is
 * non-zero and its per-page pressure exceeds the donor's. Returns 1 and
 * fills *out (predicted_gain = the difference of per-page pressures), or
 * 0 when nothing should move. */
int psa_plan(const uint64_t *misses, const uint64_t *evictions,
             const unsigned *pages, unsigned nclasses,
             struct reassign_move *out);

/* ---- one period and its stats ---- */
struct reassign_class_input {
    unsigned chunk_size;      /* S_n, bytes; 0 = class unused */
    unsigned chunks_per_page; /* P_n */
    unsigned d_pages;         /* DRAM pages the class holds now */
    unsigned min_pages;       /* pages it must keep */
    double recent_accesses;   /* hits + stores a request of late */
};
struct reassign_params {
    struct reassign_cost_model cost;
    struct reassign_plan_params plan;
    bool use_greedy; /* greedy_allocate instead of dp_allocate */
    bool weigh_recent; /* scale each curve to its class's recent_accesses */
};
void reassign_params_default(struct reassign_params *p);
/* Drain, build curves, allocate M = sum of d_pages, plan.  classes is
 * indexed by class id (nclasses <= REASSIGN_MAX_CLASSES); out has room for
 * params->plan.max_moves.  Returns the number of moves planned, or -1. */
int reassign_period(const struct reassign_class_input *classes,
                    unsigned nclasses, const struct reassign_params *params,
                    struct reassign_move *out);

struct reassign_stats {
    uint64_t periods;          /* reassign_period() calls completed */
    uint64_t moves_planned;    /* all moves ever planned */
    uint64_t hysteresis_skips; /* periods the threshold held back */
    uint64_t notes_rejected;   /* bad slot or class */
    unsigned last_moves;       /* moves planned by the last period */
    unsigned last_total_pages; /* M of the last period */
    double benefit_current;    /* predicted benefit of the split found */
    double benefit_optimal;    /* predicted benefit of the optimum */
};
struct reassign_class_stats {
    unsigned current_pages; /* d_pages given to the last period */
    unsigned optimal_pages; /* its allocation */
    double benefit_optimal; /* Benefit[n][optimal_pages] */
    uint64_t items;         /* items in the mapping set at the last drain */
    uint64_t counter_sum;   /* the sum of their counters */
};
void reassign_stats_get(struct reassign_stats *out);
/* Returns false for a bad class. */
bool reassign_class_stats_get(unsigned cls, struct reassign_class_stats *out);

#endif
