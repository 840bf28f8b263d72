/*
 * reassign_dp.c: benefit-aware DRAM page reassignment (HMCached's;
 * doc/tiering.md, "Reassignment") and the periodic slab allocation
 * baseline (PSA, Carra & Michiardi).
 *
 * Owns:
 *   - the note table: one slot per writer thread (workers, tier thread,
 *     crawler, page mover), each a matrix of (items, counter_sum) cells
 *     per class and counter bucket;
 *   - the mapping set: the same matrix summed over the slots at the last
 *     drain, and the figures of the last period (stats).
 * It owns no items and moves no pages: the engine feeds counters in, asks
 * reassign_period() what to move and moves the pages itself.
 *
 * Synchronisation:
 *   - reassign_notes (the table's pointer) is published with a release
 *     store by reassign_init() and read with an acquire load by every
 *     note, so a note never sees a half-built table.  Init and shutdown must not run
 *     while anyone notes.
 *   - A slot's cells are written by the slot's one owner only, with relaxed
 *     atomic load + store (stat_counter.h's STAT_INCR pattern): no lock, no
 *     read-modify-write, no spinning on the request path.  The drainer
 *     only reads them.  Cells are cumulative net totals in wrapping
 *     unsigned arithmetic, so a slot may go "negative" (an item stored by
 *     one worker and deleted by another) and the sum over slots is still
 *     exact; nothing is consumed, so nothing can overflow or be lost.
 *   - A slot's class mask (reassign_dp.h) is set by the owner with a
 *     release store before it first writes a class's cells and read by
 *     the drain with an acquire load, which then clears and sums those
 *     classes only (masks never shrink, so they cover every row an
 *     earlier drain filled).  A class whose bit a drain missed is summed
 *     by the next one.
 *   - reassign_lock guards the mapping set and the stats; taken by the
 *     drainer, reassign_period() and the stats getters, never by a note.
 *   - reassign_notes_rejected is a relaxed atomic counter (error path
 *     only).
 * The note itself and the bucket of a counter are inline in reassign_dp.h
 * (every hit notes).
 *
 * Where this deliberately differs from the paper:
 *   - The paper's lock-free array of 8-byte (old,new) records drained into
 *     a red-black tree can fill up; per-slot cumulative cells cannot, and
 *     cost two cache lines per note.  A drain is a consistent sum per cell,
 *     not across cells: a note racing with the drain may be seen half
 *     applied (left the old bucket, not yet in the new one); the next
 *     drain sees it whole.  Cells summing below zero are read as empty.
 *   - Counters above 255 (D items only) share log-spaced buckets (8 per
 *     power of two) instead of one tree node per value; each bucket keeps
 *     its exact counter sum, so only the one bucket a top-k cut splits is
 *     approximated, by its mean.
 *   - The per-access benefit is size-aware (X-Mem, EuroSys 2016, access
 *     patterns): a value of L lines costs one random access and L-1
 *     sequential ones, so the gain of DRAM over NVM is
 *     (R_nvm - R_dram) + (L-1)(Q_nvm - Q_dram) rather than S * P0/S0.
 *     Defaults: R_nvm 300 ns and R_dram 76 ns (the paper's HME emulation),
 *     Q_dram 10 ns (a 64-byte line streamed at ~6 GB/s) and Q_nvm 100 ns,
 *     our pick: X-Mem's NVM configurations have 1/4 to 1/8 of DRAM's
 *     bandwidth (40-80 ns a streamed line), rounded up for NVM's weaker
 *     prefetching.  Note that nvm_emulate=R:W (doc/nvm.md) charges R
 *     per line whatever the pattern; to model that emulator exactly set
 *     nvm_seq_ns = dram_seq_ns + R and nvm_rand_ns = dram_rand_ns + R.
 *     size_aware = false gives the paper's linear factor.
 *   - The DP is the paper's; above REASSIGN_DP_MAX_UNITS spare pages it
 *     coarsens (see reassign_dp.h).  Greedy is offered because the curves
 *     built here are concave, which makes it exact and O(M log N).
 *   - With params.weigh_recent each class's curve is scaled so that all
 *     its items together are worth its recent accesses (given by the
 *     caller): the counters only say how those spread over the items.
 *   - Moves are rate limited (max_moves a period) and held back unless the
 *     optimum beats the current split by min_gain_fraction (default 2%):
 *     every page move evicts or demotes a page of items, so chasing noise
 *     in the counters would cost more than it gains.
 */
#include "config.h"
#include "reassign_dp.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define EXTRA_SLOTS 3 /* the tier thread, the LRU crawler, the mover */
#define CACHE_LINE 64

/* ---- counter buckets ---- */

uint32_t reassign_bucket_low(unsigned bucket)
{
    if (bucket >= REASSIGN_NBUCKETS) {
        bucket = REASSIGN_NBUCKETS - 1;
    }
    if (bucket < REASSIGN_EXACT_BUCKETS) {
        return bucket;
    }
    unsigned k = bucket - REASSIGN_EXACT_BUCKETS;
    unsigned octave = 8 + k / REASSIGN_LOG_SLICES;
    unsigned slice = k % REASSIGN_LOG_SLICES;
    return (uint32_t)(REASSIGN_LOG_SLICES + slice) << (octave - 3);
}

uint32_t reassign_bucket_high(unsigned bucket)
{
    if (bucket >= REASSIGN_NBUCKETS - 1) {
        return REASSIGN_COUNTER_MAX;
    }
    return reassign_bucket_low(bucket + 1) - 1;
}

/* ---- the note table (request path: reassign_dp.h) ---- */

struct note_table *_Atomic reassign_notes;
_Atomic uint64_t reassign_notes_rejected;

/* ---- the mapping set and stats (reassign_lock) ---- */

static pthread_mutex_t reassign_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ms_items[REASSIGN_MAX_CLASSES][REASSIGN_NBUCKETS];
static uint64_t ms_sum[REASSIGN_MAX_CLASSES][REASSIGN_NBUCKETS];
static struct reassign_stats last_stats;
static struct reassign_class_stats last_class[REASSIGN_MAX_CLASSES];

static void mapping_set_clear_locked(void)
{
    memset(ms_items, 0, sizeof(ms_items));
    memset(ms_sum, 0, sizeof(ms_sum));
}

/* The next class in the mask after `from` (from -1: the first), or -1. */
static int next_class(const uint64_t *mask, int from)
{
    for (int c = from + 1; c < REASSIGN_MAX_CLASSES; c++) {
        uint64_t rest = mask[c / 64] >> (c % 64);
        if (rest == 0) {
            c = (c / 64 + 1) * 64 - 1;   /* on to the next word */
            continue;
        }
        return c + __builtin_ctzll(rest);
    }
    return -1;
}

static void reset_stats_locked(void)
{
    memset(&last_stats, 0, sizeof(last_stats));
    memset(last_class, 0, sizeof(last_class));
    atomic_store_explicit(&reassign_notes_rejected, 0, memory_order_relaxed);
}

int reassign_init(unsigned nworkers)
{
    reassign_shutdown();
    struct note_table *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return -1;
    }
    t->nworkers = nworkers;
    t->nslots = nworkers + EXTRA_SLOTS;
    size_t bytes = (size_t)t->nslots * sizeof(struct note_slot);
    bytes = (bytes + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
    /* aligned so that no two slots share a cache line */
    t->slots = aligned_alloc(CACHE_LINE, bytes);
    if (t->slots == NULL) {
        free(t);
        return -1;
    }
    memset(t->slots, 0, bytes);
    pthread_mutex_lock(&reassign_lock);
    mapping_set_clear_locked();
    reset_stats_locked();
    pthread_mutex_unlock(&reassign_lock);
    atomic_store_explicit(&reassign_notes, t, memory_order_release);
    return 0;
}

void reassign_shutdown(void)
{
    struct note_table *t =
        atomic_exchange_explicit(&reassign_notes, NULL, memory_order_acq_rel);
    if (t != NULL) {
        free(t->slots);
        free(t);
    }
}

unsigned reassign_slot_tier(void)
{
    struct note_table *t =
        atomic_load_explicit(&reassign_notes, memory_order_acquire);
    return t == NULL ? 0 : t->nworkers;
}

unsigned reassign_slot_crawler(void)
{
    struct note_table *t =
        atomic_load_explicit(&reassign_notes, memory_order_acquire);
    return t == NULL ? 0 : t->nworkers + 1;
}

unsigned reassign_slot_mover(void)
{
    struct note_table *t =
        atomic_load_explicit(&reassign_notes, memory_order_acquire);
    return t == NULL ? 0 : t->nworkers + 2;
}

/* The classes any slot has noted.  Masks only grow, so these cover every
 * row of the mapping set an earlier drain filled. */
static void noted_classes(const struct note_table *t, uint64_t *noted)
{
    memset(noted, 0, REASSIGN_CLASS_WORDS * sizeof(*noted));
    for (unsigned s = 0; s < t->nslots; s++) {
        for (unsigned w = 0; w < REASSIGN_CLASS_WORDS; w++) {
            noted[w] |= atomic_load_explicit(&t->slots[s].classes[w],
                                             memory_order_acquire);
        }
    }
}

/* Add the slot's cells of the classes it has noted (within `noted`). */
static void add_slot_locked(const struct note_slot *slot,
                            const uint64_t *noted)
{
    uint64_t mask[REASSIGN_CLASS_WORDS];
    for (unsigned w = 0; w < REASSIGN_CLASS_WORDS; w++) {
        mask[w] = noted[w] & atomic_load_explicit(&slot->classes[w],
                                                  memory_order_relaxed);
    }
    for (int c = next_class(mask, -1); c >= 0; c = next_class(mask, c)) {
        for (unsigned b = 0; b < REASSIGN_NBUCKETS; b++) {
            const struct hist_cell *cell = &slot->cells[c][b];
            ms_items[c][b] += atomic_load_explicit(&cell->items,
                                                   memory_order_relaxed);
            ms_sum[c][b] += atomic_load_explicit(&cell->counter_sum,
                                                 memory_order_relaxed);
        }
    }
}

/* A net total below zero in class c's row is a note seen half applied, or
 * an item the engine dropped without having announced it: either way,
 * empty. */
static void clamp_negative_row_locked(int c)
{
    for (unsigned b = 0; b < REASSIGN_NBUCKETS; b++) {
        if ((int64_t)ms_items[c][b] <= 0 || (int64_t)ms_sum[c][b] < 0) {
            ms_items[c][b] = 0;
            ms_sum[c][b] = 0;
        }
    }
}

void reassign_drain(void)
{
    struct note_table *t =
        atomic_load_explicit(&reassign_notes, memory_order_acquire);
    pthread_mutex_lock(&reassign_lock);
    if (t == NULL) {
        mapping_set_clear_locked();
        pthread_mutex_unlock(&reassign_lock);
        return;
    }
    uint64_t noted[REASSIGN_CLASS_WORDS];
    noted_classes(t, noted);
    for (int c = next_class(noted, -1); c >= 0; c = next_class(noted, c)) {
        memset(ms_items[c], 0, sizeof(ms_items[c]));
        memset(ms_sum[c], 0, sizeof(ms_sum[c]));
    }
    for (unsigned s = 0; s < t->nslots; s++) {
        add_slot_locked(&t->slots[s], noted);
    }
    for (int c = next_class(noted, -1); c >= 0; c = next_class(noted, c)) {
        clamp_negative_row_locked(c);
    }
    pthread_mutex_unlock(&reassign_lock);
}

bool reassign_hist_get(unsigned cls, unsigned bucket, uint64_t *items,
                       uint64_t *counter_sum)
{
    if (cls >= REASSIGN_MAX_CLASSES || bucket >= REASSIGN_NBUCKETS) {
        return false;
    }
    pthread_mutex_lock(&reassign_lock);
    if (items != NULL) {
        *items = ms_items[cls][bucket];
    }
    if (counter_sum != NULL) {
        *counter_sum = ms_sum[cls][bucket];
    }
    pthread_mutex_unlock(&reassign_lock);
    return true;
}

/* ---- benefit curves ---- */

void reassign_cost_model_default(struct reassign_cost_model *cm)
{
    cm->nvm_rand_ns = 300.0;
    cm->nvm_seq_ns = 100.0;
    cm->dram_rand_ns = 76.0;
    cm->dram_seq_ns = 10.0;
    cm->line_bytes = 64;
    cm->size_aware = true;
}

double reassign_access_gain(const struct reassign_cost_model *cm,
                            unsigned item_bytes)
{
    if (item_bytes == 0) {
        return 0.0;
    }
    unsigned line = cm->line_bytes > 0 ? cm->line_bytes : 64;
    if (!cm->size_aware) {
        return item_bytes * (cm->nvm_rand_ns - cm->dram_rand_ns) / line;
    }
    double extra_lines = (item_bytes - 1) / line; /* ceil(S/line) - 1 */
    double t_nvm = cm->nvm_rand_ns + extra_lines * cm->nvm_seq_ns;
    double t_dram = cm->dram_rand_ns + extra_lines * cm->dram_seq_ns;
    return t_nvm - t_dram;
}

/* Walks the histogram from its hottest bucket down, handing out items. */
struct topk_walk {
    const uint64_t *items;
    const uint64_t *counter_sum;
    int bucket;          /* current bucket, -1 once exhausted */
    uint64_t taken;      /* items already taken from it */
    double counter_total; /* sum of the counters taken so far */
};

/* Takes up to `want` more items, hottest first. */
static void topk_take(struct topk_walk *w, uint64_t want)
{
    while (want > 0 && w->bucket >= 0) {
        uint64_t in_bucket = w->items[w->bucket];
        if (w->taken >= in_bucket) {
            w->bucket--;
            w->taken = 0;
            continue;
        }
        uint64_t take = in_bucket - w->taken;
        if (take > want) {
            take = want;
        }
        /* a whole bucket adds its exact sum; a part, its mean's share */
        double mean = (double)w->counter_sum[w->bucket] / (double)in_bucket;
        w->counter_total += take == in_bucket
                            ? (double)w->counter_sum[w->bucket]
                            : (double)take * mean;
        w->taken += take;
        want -= take;
    }
}

void reassign_curve_from_hist(const uint64_t *items,
                              const uint64_t *counter_sum, double gain,
                              unsigned chunks_per_page, unsigned M,
                              double *row)
{
    struct topk_walk w = {
        .items = items,
        .counter_sum = counter_sum,
        .bucket = REASSIGN_NBUCKETS - 1,
    };
    row[0] = 0.0;
    for (unsigned m = 1; m <= M; m++) {
        topk_take(&w, chunks_per_page);
        row[m] = w.counter_total * gain;
    }
}

void reassign_curve_build(unsigned cls, unsigned chunk_size,
                          unsigned chunks_per_page, unsigned M,
                          const struct reassign_cost_model *cm, double *row)
{
    if (cls >= REASSIGN_MAX_CLASSES) {
        memset(row, 0, sizeof(*row) * ((size_t)M + 1));
        return;
    }
    double gain = reassign_access_gain(cm, chunk_size);
    pthread_mutex_lock(&reassign_lock);
    reassign_curve_from_hist(ms_items[cls], ms_sum[cls], gain,
                             chunks_per_page, M, row);
    pthread_mutex_unlock(&reassign_lock);
}

/* ---- optimal allocation ---- */

static inline double curve_at(const double *curves, unsigned M, unsigned n,
                              unsigned m)
{
    return curves[(size_t)n * ((size_t)M + 1) + m];
}

static inline unsigned min_of(const unsigned *min_pages, unsigned n)
{
    return min_pages == NULL ? 0 : min_pages[n];
}

/* Pages left after every class got its minimum, or -1 if infeasible. */
static int64_t spare_pages(unsigned nclasses, unsigned M,
                           const unsigned *min_pages)
{
    uint64_t reserved = 0;
    for (unsigned n = 0; n < nclasses; n++) {
        reserved += min_of(min_pages, n);
    }
    return reserved > M ? -1 : (int64_t)(M - reserved);
}

static double total_benefit(const double *curves, unsigned M,
                            unsigned nclasses, const unsigned *pages)
{
    double total = 0.0;
    for (unsigned n = 0; n < nclasses; n++) {
        total += curve_at(curves, M, n, pages[n]);
    }
    return total;
}

static inline double marginal_gain(const double *curves, unsigned M,
                                   unsigned n, unsigned pages)
{
    if (pages >= M) {
        return -INFINITY;
    }
    return curve_at(curves, M, n, pages + 1) - curve_at(curves, M, n, pages);
}

/* Hands `pages` more pages out one at a time by marginal gain: O(pages*N). */
static void hand_out_by_marginal(const double *curves, unsigned nclasses,
                                 unsigned M, unsigned *out, unsigned pages)
{
    for (unsigned p = 0; p < pages; p++) {
        unsigned best = 0;
        double best_gain = marginal_gain(curves, M, 0, out[0]);
        for (unsigned n = 1; n < nclasses; n++) {
            double g = marginal_gain(curves, M, n, out[n]);
            if (g > best_gain) {
                best = n;
                best_gain = g;
            }
        }
        out[best]++;
    }
}

/* The DP over classes 0..n with units of `unit` pages on top of the
 * minimums: best[j] is the best benefit of classes 0..n given j units,
 * choice[n][j] the units class n takes in it. */
struct dp_problem {
    const double *curves;
    unsigned M;
    const unsigned *min_pages;
    unsigned unit;
    unsigned units;
};

static inline double unit_value(const struct dp_problem *p, unsigned n,
                                unsigned u)
{
    return curve_at(p->curves, p->M, n,
                    min_of(p->min_pages, n) + u * p->unit);
}

static void dp_add_class(const struct dp_problem *p, unsigned n,
                         const double *prev, double *cur, unsigned *choice)
{
    for (unsigned j = 0; j <= p->units; j++) {
        double best = -INFINITY;
        unsigned best_x = 0;
        for (unsigned x = 0; x <= j; x++) {
            double v = prev[j - x] + unit_value(p, n, x);
            if (v > best) {
                best = v;
                best_x = x;
            }
        }
        cur[j] = best;
        choice[j] = best_x;
    }
}

static int dp_solve(const struct dp_problem *p, unsigned nclasses,
                    unsigned *out)
{
    size_t width = (size_t)p->units + 1;
    double *prev = malloc(width * sizeof(*prev));
    double *cur = malloc(width * sizeof(*cur));
    unsigned *choice = malloc(nclasses * width * sizeof(*choice));
    if (prev == NULL || cur == NULL || choice == NULL) {
        free(prev);
        free(cur);
        free(choice);
        return -1;
    }
    for (unsigned j = 0; j < width; j++) {
        prev[j] = unit_value(p, 0, j);
        choice[j] = j;
    }
    for (unsigned n = 1; n < nclasses; n++) {
        dp_add_class(p, n, prev, cur, choice + n * width);
        double *swap = prev;
        prev = cur;
        cur = swap;
    }
    unsigned left = p->units;
    for (unsigned n = nclasses; n-- > 0;) {
        unsigned x = choice[n * width + left];
        out[n] = min_of(p->min_pages, n) + x * p->unit;
        left -= x;
    }
    free(prev);
    free(cur);
    free(choice);
    return 0;
}

int dp_allocate(const double *curves, unsigned nclasses, unsigned M,
                const unsigned *min_pages, unsigned *out, double *total)
{
    if (curves == NULL || out == NULL || nclasses == 0) {
        return -1;
    }
    int64_t spare = spare_pages(nclasses, M, min_pages);
    if (spare < 0) {
        return -1;
    }
    unsigned unit = 1;
    if (spare > REASSIGN_DP_MAX_UNITS) {
        unit = (unsigned)((spare + REASSIGN_DP_MAX_UNITS - 1)
                          / REASSIGN_DP_MAX_UNITS);
    }
    struct dp_problem p = {
        .curves = curves,
        .M = M,
        .min_pages = min_pages,
        .unit = unit,
        .units = (unsigned)(spare / unit),
    };
    if (dp_solve(&p, nclasses, out) != 0) {
        return -1;
    }
    hand_out_by_marginal(curves, nclasses, M, out,
                         (unsigned)(spare - (int64_t)p.units * unit));
    if (total != NULL) {
        *total = total_benefit(curves, M, nclasses, out);
    }
    return 0;
}

/* A max-heap of classes by marginal gain of their next page; ties go to
 * the lower class id so that results are deterministic. */
struct gain_entry {
    double gain;
    unsigned cls;
};

static inline bool gain_before(const struct gain_entry *a,
                               const struct gain_entry *b)
{
    return a->gain > b->gain || (a->gain == b->gain && a->cls < b->cls);
}

static void heap_sift_down(struct gain_entry *heap, unsigned size,
                           unsigned i)
{
    for (;;) {
        unsigned top = i;
        unsigned left = 2 * i + 1;
        unsigned right = left + 1;
        if (left < size && gain_before(&heap[left], &heap[top])) {
            top = left;
        }
        if (right < size && gain_before(&heap[right], &heap[top])) {
            top = right;
        }
        if (top == i) {
            return;
        }
        struct gain_entry swap = heap[i];
        heap[i] = heap[top];
        heap[top] = swap;
        i = top;
    }
}

int greedy_allocate(const double *curves, unsigned nclasses, unsigned M,
                    const unsigned *min_pages, unsigned *out, double *total)
{
    if (curves == NULL || out == NULL || nclasses == 0) {
        return -1;
    }
    int64_t spare = spare_pages(nclasses, M, min_pages);
    if (spare < 0) {
        return -1;
    }
    struct gain_entry *heap = malloc(nclasses * sizeof(*heap));
    if (heap == NULL) {
        return -1;
    }
    for (unsigned n = 0; n < nclasses; n++) {
        out[n] = min_of(min_pages, n);
        heap[n].cls = n;
        heap[n].gain = marginal_gain(curves, M, n, out[n]);
    }
    for (unsigned i = nclasses / 2; i-- > 0;) {
        heap_sift_down(heap, nclasses, i);
    }
    for (int64_t p = 0; p < spare; p++) {
        unsigned n = heap[0].cls;
        out[n]++;
        heap[0].gain = marginal_gain(curves, M, n, out[n]);
        heap_sift_down(heap, nclasses, 0);
    }
    free(heap);
    if (total != NULL) {
        *total = total_benefit(curves, M, nclasses, out);
    }
    return 0;
}

/* ---- planning moves ---- */

/* The class with the largest a[n] - b[n] > 0 (lowest id on ties), or -1. */
static int largest_excess(const unsigned *a, const unsigned *b,
                          unsigned nclasses)
{
    int best = -1;
    unsigned best_excess = 0;
    for (unsigned n = 0; n < nclasses; n++) {
        if (a[n] > b[n] && a[n] - b[n] > best_excess) {
            best = (int)n;
            best_excess = a[n] - b[n];
        }
    }
    return best;
}

static bool pages_fit(const unsigned *pages, unsigned nclasses, unsigned M)
{
    for (unsigned n = 0; n < nclasses; n++) {
        if (pages[n] > M) {
            return false;
        }
    }
    return true;
}

/* Moves page by page from `work` toward `optimal`; returns the count. */
static unsigned plan_moves(const double *curves, unsigned M, unsigned *work,
                           const unsigned *optimal, unsigned nclasses,
                           unsigned max_moves, struct reassign_move *out)
{
    unsigned planned = 0;
    while (planned < max_moves) {
        int from = largest_excess(work, optimal, nclasses);
        int to = largest_excess(optimal, work, nclasses);
        if (from < 0 || to < 0) {
            break;
        }
        double gain = marginal_gain(curves, M, (unsigned)to, work[to])
                      - marginal_gain(curves, M, (unsigned)from,
                                      work[from] - 1);
        if (gain < 0) {
            break; /* only non-concave curves get here */
        }
        out[planned].from_class = (unsigned)from;
        out[planned].to_class = (unsigned)to;
        out[planned].predicted_gain = gain;
        planned++;
        work[from]--;
        work[to]++;
    }
    return planned;
}

/* Like reassign_plan(); *held_back says the hysteresis stopped it. */
static unsigned plan_with_hysteresis(const double *curves, unsigned M,
                                     const unsigned *current,
                                     const unsigned *optimal,
                                     unsigned nclasses,
                                     const struct reassign_plan_params *pp,
                                     struct reassign_move *out,
                                     bool *held_back)
{
    *held_back = false;
    if (pp->max_moves == 0 || nclasses == 0
        || !pages_fit(current, nclasses, M)
        || !pages_fit(optimal, nclasses, M)) {
        return 0;
    }
    double now = total_benefit(curves, M, nclasses, current);
    double best = total_benefit(curves, M, nclasses, optimal);
    if (best - now <= pp->min_gain_fraction * now) {
        *held_back = best > now;
        return 0;
    }
    unsigned *work = malloc(nclasses * sizeof(*work));
    if (work == NULL) {
        return 0;
    }
    memcpy(work, current, nclasses * sizeof(*work));
    unsigned planned = plan_moves(curves, M, work, optimal, nclasses,
                                  pp->max_moves, out);
    free(work);
    return planned;
}

unsigned reassign_plan(const double *curves, unsigned M,
                       const unsigned *current, const unsigned *optimal,
                       unsigned nclasses,
                       const struct reassign_plan_params *params,
                       struct reassign_move *out)
{
    bool held_back;
    return plan_with_hysteresis(curves, M, current, optimal, nclasses,
                                params, out, &held_back);
}

/* ---- PSA ---- */

static double pressure_per_page(const uint64_t *misses,
                                const uint64_t *evictions,
                                const unsigned *pages, unsigned n)
{
    double pressure = (misses != NULL ? (double)misses[n] : 0.0)
                      + (evictions != NULL ? (double)evictions[n] : 0.0);
    return pressure / (pages[n] > 0 ? pages[n] : 1);
}

int psa_plan(const uint64_t *misses, const uint64_t *evictions,
             const unsigned *pages, unsigned nclasses,
             struct reassign_move *out)
{
    if (pages == NULL || out == NULL || nclasses < 2) {
        return 0;
    }
    int to = -1;
    double to_score = 0.0;
    for (unsigned n = 0; n < nclasses; n++) {
        double s = pressure_per_page(misses, evictions, pages, n);
        if (s > to_score) {
            to = (int)n;
            to_score = s;
        }
    }
    if (to < 0) {
        return 0;
    }
    int from = -1;
    double from_score = INFINITY;
    for (unsigned n = 0; n < nclasses; n++) {
        double s = pressure_per_page(misses, evictions, pages, n);
        if ((int)n != to && pages[n] > 1 && s < from_score) {
            from = (int)n;
            from_score = s;
        }
    }
    if (from < 0 || !(to_score > from_score)) {
        return 0;
    }
    out->from_class = (unsigned)from;
    out->to_class = (unsigned)to;
    out->predicted_gain = to_score - from_score;
    return 1;
}

/* ---- one period ---- */

void reassign_params_default(struct reassign_params *p)
{
    reassign_cost_model_default(&p->cost);
    p->plan.max_moves = 2;
    p->plan.min_gain_fraction = 0.02;
    p->use_greedy = false;
    p->weigh_recent = false;
}

/* The counters say how a class's accesses spread over its items; its
 * recent accesses say how many it gets now.  Scaled, a class the workload
 * has left is worth nothing at once instead of when its counters decay. */
static void weigh_by_recent_locked(unsigned n, double recent_accesses,
                                   unsigned M, double *row)
{
    double counters = 0.0;
    for (unsigned b = 0; b < REASSIGN_NBUCKETS; b++) {
        counters += (double)ms_sum[n][b];
    }
    double scale = counters > 0.0 ? recent_accesses / counters : 0.0;
    for (unsigned m = 0; m <= M; m++) {
        row[m] *= scale;
    }
}

static void build_curves_locked(const struct reassign_class_input *classes,
                                unsigned nclasses, unsigned M,
                                const struct reassign_params *params,
                                double *curves)
{
    for (unsigned n = 0; n < nclasses; n++) {
        double *row = curves + (size_t)n * ((size_t)M + 1);
        double gain = reassign_access_gain(&params->cost,
                                           classes[n].chunk_size);
        reassign_curve_from_hist(ms_items[n], ms_sum[n], gain,
                                 classes[n].chunks_per_page, M, row);
        if (params->weigh_recent) {
            weigh_by_recent_locked(n, classes[n].recent_accesses, M,
                                   row);
        }
    }
}

static void record_period_locked(const struct reassign_class_input *classes,
                                 unsigned nclasses, unsigned M,
                                 const double *curves,
                                 const unsigned *optimal, unsigned moves,
                                 bool held_back)
{
    unsigned current[REASSIGN_MAX_CLASSES];
    memset(last_class, 0, sizeof(last_class));
    for (unsigned n = 0; n < nclasses; n++) {
        current[n] = classes[n].d_pages;
        last_class[n].current_pages = current[n];
        last_class[n].optimal_pages = optimal[n];
        last_class[n].benefit_optimal = curve_at(curves, M, n, optimal[n]);
    }
    last_stats.periods++;
    last_stats.moves_planned += moves;
    last_stats.hysteresis_skips += held_back ? 1 : 0;
    last_stats.last_moves = moves;
    last_stats.last_total_pages = M;
    last_stats.benefit_current = total_benefit(curves, M, nclasses, current);
    last_stats.benefit_optimal = total_benefit(curves, M, nclasses, optimal);
}

int reassign_period(const struct reassign_class_input *classes,
                    unsigned nclasses, const struct reassign_params *params,
                    struct reassign_move *out)
{
    if (classes == NULL || nclasses == 0
        || nclasses > REASSIGN_MAX_CLASSES) {
        return -1;
    }
    unsigned current[REASSIGN_MAX_CLASSES];
    unsigned minimum[REASSIGN_MAX_CLASSES];
    uint64_t M64 = 0;
    for (unsigned n = 0; n < nclasses; n++) {
        current[n] = classes[n].d_pages;
        minimum[n] = classes[n].min_pages;
        M64 += current[n];
    }
    if (M64 > UINT32_MAX - 1) {
        return -1;
    }
    unsigned M = (unsigned)M64;
    double *curves = malloc((size_t)nclasses * (M + 1) * sizeof(*curves));
    if (curves == NULL) {
        return -1;
    }
    reassign_drain();
    pthread_mutex_lock(&reassign_lock);
    build_curves_locked(classes, nclasses, M, params, curves);
    pthread_mutex_unlock(&reassign_lock);

    unsigned optimal[REASSIGN_MAX_CLASSES];
    int rc = params->use_greedy
             ? greedy_allocate(curves, nclasses, M, minimum, optimal, NULL)
             : dp_allocate(curves, nclasses, M, minimum, optimal, NULL);
    if (rc != 0) {
        free(curves);
        return -1;
    }
    bool held_back;
    unsigned moves = plan_with_hysteresis(curves, M, current, optimal,
                                          nclasses, &params->plan, out,
                                          &held_back);
    pthread_mutex_lock(&reassign_lock);
    record_period_locked(classes, nclasses, M, curves, optimal, moves,
                         held_back);
    pthread_mutex_unlock(&reassign_lock);
    free(curves);
    return (int)moves;
}

/* ---- stats ---- */

void reassign_stats_get(struct reassign_stats *out)
{
    pthread_mutex_lock(&reassign_lock);
    *out = last_stats;
    pthread_mutex_unlock(&reassign_lock);
    out->notes_rejected =
        atomic_load_explicit(&reassign_notes_rejected, memory_order_relaxed);
}

bool reassign_class_stats_get(unsigned cls, struct reassign_class_stats *out)
{
    if (cls >= REASSIGN_MAX_CLASSES) {
        return false;
    }
    pthread_mutex_lock(&reassign_lock);
    *out = last_class[cls];
    out->items = 0;
    out->counter_sum = 0;
    for (unsigned b = 0; b < REASSIGN_NBUCKETS; b++) {
        out->items += ms_items[cls][b];
        out->counter_sum += ms_sum[cls][b];
    }
    pthread_mutex_unlock(&reassign_lock);
    return true;
}
