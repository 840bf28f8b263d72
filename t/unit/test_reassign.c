/*
 * test_reassign.c: reassign_dp.c: counter buckets, the mapping set fed by
 * notes (single thread, then 4 producers + an evicting drainer, the part
 * to run under -fsanitize=thread), the gain model, benefit curves, DP vs
 * greedy vs brute force (concave and non-concave), DP coarsening, move
 * planning (surplus to deficit, rate limit, hysteresis), PSA, and one
 * whole period with its stats.
 *
 * Random inputs come from a fixed-seed xorshift, so runs repeat exactly.
 */
#include "config.h"
#include "reassign_dp.h"
#include "slab_class.h"
#include "tap.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(REASSIGN_MAX_CLASSES == MAX_NUMBER_OF_SLAB_CLASSES,
               "reassign_dp.h's class count must match slab_class.h's");

static uint64_t rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

static unsigned rng_below(uint64_t *state, unsigned n)
{
    return (unsigned)(rng_next(state) % n);
}

static double *curves_alloc(unsigned nclasses, unsigned M)
{
    double *c = calloc((size_t)nclasses * (M + 1), sizeof(*c));
    if (c == NULL) {
        fprintf(stderr, "out of memory\n");
    }
    return c;
}

static double *row_of(double *curves, unsigned M, unsigned n)
{
    return curves + (size_t)n * (M + 1);
}

static double curve_value(const double *curves, unsigned M, unsigned n,
                          unsigned m)
{
    return curves[(size_t)n * (M + 1) + m];
}

static int descending(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x < y) - (x > y);
}

/* ---- buckets ---- */

static void test_buckets(void)
{
    bool exact = true;
    for (uint32_t v = 0; v < REASSIGN_EXACT_BUCKETS; v++) {
        exact &= reassign_bucket_of(v) == v && reassign_bucket_low(v) == v
                 && reassign_bucket_high(v) == v;
    }
    ok(exact, "counters 0..255 each have their own bucket");

    bool contained = true;
    bool monotonic = true;
    bool narrow = true;
    unsigned prev = 0;
    for (uint32_t v = 0; v <= REASSIGN_COUNTER_MAX; v++) {
        unsigned b = reassign_bucket_of(v);
        contained &= reassign_bucket_low(b) <= v
                     && v <= reassign_bucket_high(b);
        monotonic &= b >= prev && b < REASSIGN_NBUCKETS;
        prev = b;
        uint32_t width = reassign_bucket_high(b) - reassign_bucket_low(b) + 1;
        narrow &= width * REASSIGN_LOG_SLICES <= reassign_bucket_low(b)
                  || b < REASSIGN_EXACT_BUCKETS;
    }
    ok(contained, "every counter lies within its bucket's [low, high]");
    ok(monotonic, "buckets grow with the counter and stay in range");
    ok(narrow, "a log bucket spans at most 1/8 of its lower bound");
    ok(reassign_bucket_of(REASSIGN_COUNTER_MAX) == REASSIGN_NBUCKETS - 1
       && reassign_bucket_of(1u << 20) == REASSIGN_NBUCKETS - 1
       && reassign_bucket_high(REASSIGN_NBUCKETS - 1) == REASSIGN_COUNTER_MAX,
       "65535 and above land in the last bucket");
    ok(reassign_bucket_of(256) == 256 && reassign_bucket_of(287) == 256
       && reassign_bucket_of(288) == 257 && reassign_bucket_low(257) == 288,
       "256..287 share the first log bucket, 288 opens the next");
}

/* ---- the mapping set, single thread ---- */

static void hist_expect(unsigned cls, uint32_t counter, uint64_t items,
                        uint64_t sum, const char *what)
{
    uint64_t got_items = 0;
    uint64_t got_sum = 0;
    reassign_hist_get(cls, reassign_bucket_of(counter), &got_items,
                      &got_sum);
    ok(got_items == items && got_sum == sum,
       "%s (items %llu sum %llu, expected %llu %llu)", what,
       (unsigned long long)got_items, (unsigned long long)got_sum,
       (unsigned long long)items, (unsigned long long)sum);
}

static void test_notes_single_thread(void)
{
    reassign_note(0, 1, -1, 5); /* before init: ignored */
    ok(reassign_init(2) == 0, "reassign_init(2 workers)");
    ok(reassign_slot_tier() == 2 && reassign_slot_crawler() == 3
       && reassign_slot_mover() == 4,
       "the tier, crawler and mover slots follow the workers");
    reassign_drain();
    hist_expect(1, 5, 0, 0, "a note before init left no trace");

    reassign_note(0, 1, -1, 0);
    reassign_note(0, 1, -1, 0);
    reassign_note(1, 1, 0, 1);       /* another worker bumps it */
    reassign_note(1, 1, 1, 300);     /* into the log buckets */
    reassign_note(2, 1, 300, 301);   /* tier slot, same bucket */
    reassign_note(3, 1, -1, 100000); /* clamped to 65535 */
    reassign_drain();
    hist_expect(1, 0, 1, 0, "one item left at counter 0");
    hist_expect(1, 1, 0, 0, "counter 1 emptied again");
    hist_expect(1, 300, 1, 301, "log bucket keeps the exact counter sum");
    hist_expect(1, 65535, 1, 65535, "an oversized counter counts as 65535");

    reassign_note(0, 1, 301, -1);        /* deleted by another slot */
    reassign_note(1, 1, 100000, -1);     /* evicted, clamped alike */
    reassign_note(0, 1, 0, -1);
    reassign_drain();
    struct reassign_class_stats cs;
    reassign_class_stats_get(1, &cs);
    ok(cs.items == 0 && cs.counter_sum == 0,
       "every item gone: class 1 is empty (slots went negative, sum is 0)");

    reassign_note(5, 1, -1, 3);      /* no slot 5 */
    reassign_note(0, REASSIGN_MAX_CLASSES, -1, 3);
    reassign_note(0, 2, -1, -1);     /* nothing to do, not an error */
    reassign_drain();
    struct reassign_stats st;
    reassign_stats_get(&st);
    ok(st.notes_rejected == 2, "bad slot and bad class are rejected (%llu)",
       (unsigned long long)st.notes_rejected);
    reassign_class_stats_get(2, &cs);
    ok(cs.items == 0, "rejected notes changed nothing");

    reassign_note(0, 3, 7, -1);      /* an item never announced */
    reassign_drain();
    reassign_class_stats_get(3, &cs);
    ok(cs.items == 0 && cs.counter_sum == 0,
       "a bucket below zero reads as empty");
    reassign_note(0, 3, -1, 7);
    reassign_shutdown();
}

/* ---- the mapping set, 4 producers and an evicting drainer ---- */

#define PRODUCERS 4
#define ITEMS 2048
#define ITEM_LOCKS 64
#define TEST_CLASSES 8
#define OPS_PER_PRODUCER 60000

struct test_item {
    int cls;     /* 0 = absent */
    int counter;
};

struct expected {
    int64_t items[REASSIGN_MAX_CLASSES][REASSIGN_NBUCKETS];
    int64_t sum[REASSIGN_MAX_CLASSES][REASSIGN_NBUCKETS];
};

struct shared {
    struct test_item items[ITEMS];
    pthread_mutex_t locks[ITEM_LOCKS];
    _Atomic int producers_done;
    _Atomic uint64_t drains;
};

struct producer {
    struct shared *sh;
    unsigned slot;
    uint64_t seed;
    struct expected *noted; /* the sum of this thread's notes */
};

static int clamp_test_counter(int c)
{
    return c > REASSIGN_COUNTER_MAX ? REASSIGN_COUNTER_MAX : c;
}

static void expect_note(struct expected *e, int cls, int old_counter,
                        int new_counter)
{
    if (old_counter >= 0) {
        int v = clamp_test_counter(old_counter);
        e->items[cls][reassign_bucket_of((uint32_t)v)]--;
        e->sum[cls][reassign_bucket_of((uint32_t)v)] -= v;
    }
    if (new_counter >= 0) {
        int v = clamp_test_counter(new_counter);
        e->items[cls][reassign_bucket_of((uint32_t)v)]++;
        e->sum[cls][reassign_bucket_of((uint32_t)v)] += v;
    }
}

static void note_both(struct producer *p, int cls, int old_counter,
                      int new_counter)
{
    reassign_note(p->slot, (unsigned)cls, old_counter, new_counter);
    expect_note(p->noted, cls, old_counter, new_counter);
}

/* One request-path event on a locked item, as the engine would note it. */
static void item_event(struct producer *p, struct test_item *it)
{
    unsigned op = rng_below(&p->seed, 100);
    if (it->cls == 0) {
        it->cls = 1 + (int)rng_below(&p->seed, TEST_CLASSES);
        it->counter = (int)rng_below(&p->seed, 4);
        note_both(p, it->cls, -1, it->counter);
    } else if (op < 60) {
        note_both(p, it->cls, it->counter, it->counter + 1);
        it->counter++;
    } else if (op < 70) {
        int hotter = it->counter * 3 + 1; /* reaches the log buckets */
        hotter = hotter > 70000 ? 70000 : hotter;
        note_both(p, it->cls, it->counter, hotter);
        it->counter = hotter;
    } else if (op < 85) {
        note_both(p, it->cls, it->counter, it->counter >> 1); /* decay */
        it->counter >>= 1;
    } else if (op < 93) {
        note_both(p, it->cls, it->counter, -1); /* delete */
        it->cls = 0;
    } else {
        int to = 1 + (int)rng_below(&p->seed, TEST_CLASSES); /* resize */
        note_both(p, it->cls, it->counter, -1);
        note_both(p, to, -1, it->counter);
        it->cls = to;
    }
}

static void *producer_main(void *arg)
{
    struct producer *p = arg;
    for (unsigned i = 0; i < OPS_PER_PRODUCER; i++) {
        unsigned k = rng_below(&p->seed, ITEMS);
        pthread_mutex_t *lock = &p->sh->locks[k % ITEM_LOCKS];
        pthread_mutex_lock(lock);
        item_event(p, &p->sh->items[k]);
        pthread_mutex_unlock(lock);
    }
    atomic_fetch_add(&p->sh->producers_done, 1);
    return NULL;
}

/* The tier thread: drains, and evicts now and then through its slot. */
static void *drainer_main(void *arg)
{
    struct producer *p = arg;
    while (atomic_load(&p->sh->producers_done) < PRODUCERS) {
        reassign_drain();
        atomic_fetch_add(&p->sh->drains, 1);
        for (unsigned i = 0; i < 16; i++) {
            unsigned k = rng_below(&p->seed, ITEMS);
            pthread_mutex_t *lock = &p->sh->locks[k % ITEM_LOCKS];
            pthread_mutex_lock(lock);
            struct test_item *it = &p->sh->items[k];
            if (it->cls != 0) {
                note_both(p, it->cls, it->counter, -1);
                it->cls = 0;
            }
            pthread_mutex_unlock(lock);
        }
    }
    return NULL;
}

static bool hist_matches(const struct expected *e, const char *what)
{
    unsigned bad = 0;
    for (unsigned c = 0; c < REASSIGN_MAX_CLASSES; c++) {
        for (unsigned b = 0; b < REASSIGN_NBUCKETS; b++) {
            uint64_t items = 0;
            uint64_t sum = 0;
            reassign_hist_get(c, b, &items, &sum);
            if ((int64_t)items != e->items[c][b]
                || (int64_t)sum != e->sum[c][b]) {
                if (bad++ < 3) {
                    diag("%s: class %u bucket %u: %llu/%llu vs %lld/%lld",
                         what, c, b, (unsigned long long)items,
                         (unsigned long long)sum,
                         (long long)e->items[c][b], (long long)e->sum[c][b]);
                }
            }
        }
    }
    return bad == 0;
}

static void expected_from_items(const struct shared *sh, struct expected *e)
{
    memset(e, 0, sizeof(*e));
    for (unsigned k = 0; k < ITEMS; k++) {
        if (sh->items[k].cls != 0) {
            expect_note(e, sh->items[k].cls, -1, sh->items[k].counter);
        }
    }
}

/* The drain reads only the classes a slot has noted: a class first noted
 * after other classes were drained, one in the mask's second word (64),
 * and the classes next to them, which stay empty. */
static void test_notes_sparse_classes(void)
{
    ok(reassign_init(2) == 0, "reassign_init(2 workers)");
    reassign_note(0, 5, -1, 3);
    reassign_drain();
    hist_expect(5, 3, 1, 3, "class 5 noted by slot 0");
    reassign_note(1, 64, -1, 9);
    reassign_note(2, 63, -1, 300);
    reassign_note(0, 5, 3, 4);
    reassign_drain();
    hist_expect(64, 9, 1, 9, "class 64, the mask's second word");
    hist_expect(63, 300, 1, 300, "class 63, first noted by the tier slot");
    hist_expect(5, 4, 1, 4, "class 5 moved on to counter 4");
    hist_expect(5, 3, 0, 0, "and left counter 3");
    hist_expect(6, 3, 0, 0, "class 6, never noted, is empty");
    hist_expect(62, 300, 0, 0, "class 62, never noted, is empty");
    reassign_note(1, 64, 9, -1);
    reassign_drain();
    hist_expect(64, 9, 0, 0, "class 64 emptied again");
    reassign_shutdown();
}

static void test_notes_concurrent(void)
{
    struct shared *sh = calloc(1, sizeof(*sh));
    struct expected *noted = calloc(PRODUCERS + 1, sizeof(*noted));
    struct expected *total = calloc(1, sizeof(*total));
    if (sh == NULL || noted == NULL || total == NULL) {
        ok(false, "memory for the concurrent test");
        return;
    }
    for (unsigned i = 0; i < ITEM_LOCKS; i++) {
        pthread_mutex_init(&sh->locks[i], NULL);
    }
    ok(reassign_init(PRODUCERS) == 0, "reassign_init(%d workers)",
       PRODUCERS);
    struct producer prod[PRODUCERS + 1];
    pthread_t tids[PRODUCERS + 1];
    for (unsigned i = 0; i <= PRODUCERS; i++) {
        prod[i] = (struct producer){
            .sh = sh,
            .slot = i < PRODUCERS ? i : reassign_slot_tier(),
            .seed = 0x1234567ULL * (i + 1) + 99,
            .noted = &noted[i],
        };
    }
    pthread_create(&tids[PRODUCERS], NULL, drainer_main, &prod[PRODUCERS]);
    for (unsigned i = 0; i < PRODUCERS; i++) {
        pthread_create(&tids[i], NULL, producer_main, &prod[i]);
    }
    for (unsigned i = 0; i <= PRODUCERS; i++) {
        pthread_join(tids[i], NULL);
    }
    reassign_drain();
    diag("%llu drains ran alongside the producers",
         (unsigned long long)atomic_load(&sh->drains));

    for (unsigned t = 0; t <= PRODUCERS; t++) {
        for (unsigned c = 0; c < REASSIGN_MAX_CLASSES; c++) {
            for (unsigned b = 0; b < REASSIGN_NBUCKETS; b++) {
                total->items[c][b] += noted[t].items[c][b];
                total->sum[c][b] += noted[t].sum[c][b];
            }
        }
    }
    ok(hist_matches(total, "notes"),
       "after 4 producers + an evicting drainer: histogram == sum of notes");
    expected_from_items(sh, total);
    ok(hist_matches(total, "items"),
       "and == the histogram of the items' final counters");
    reassign_shutdown();
    for (unsigned i = 0; i < ITEM_LOCKS; i++) {
        pthread_mutex_destroy(&sh->locks[i]);
    }
    free(sh);
    free(noted);
    free(total);
}

/* ---- gain and curves ---- */

static void test_gain(void)
{
    struct reassign_cost_model cm;
    reassign_cost_model_default(&cm);
    ok(reassign_access_gain(&cm, 64) == 224.0,
       "one line: 300 - 76 = 224 ns");
    ok(reassign_access_gain(&cm, 65) == 224.0 + 90.0,
       "65 bytes: two lines, + (100 - 10)");
    ok(reassign_access_gain(&cm, 1024) == 224.0 + 15 * 90.0,
       "1 KiB: 16 lines = 1574 ns");
    bool per_byte_falls = true;
    for (unsigned s = 128; s <= 1 << 20; s *= 2) {
        per_byte_falls &= reassign_access_gain(&cm, s) / s
                          < reassign_access_gain(&cm, s / 2) / (s / 2);
    }
    ok(per_byte_falls, "size-aware gain per byte falls as items grow");
    ok(reassign_access_gain(&cm, 0) == 0.0, "an unused class gains nothing");
    cm.size_aware = false;
    ok(reassign_access_gain(&cm, 64) == 224.0
       && reassign_access_gain(&cm, 1024) == 224.0 * 16,
       "paper mode: S * P0/S0, linear in the chunk size");
}

static void test_curve_by_hand(void)
{
    uint64_t items[REASSIGN_NBUCKETS] = {0};
    uint64_t sums[REASSIGN_NBUCKETS] = {0};
    items[10] = 3;
    sums[10] = 30;
    items[4] = 5;
    sums[4] = 20;
    unsigned b = reassign_bucket_of(1000); /* log bucket 960..1023 */
    items[b] = 2;
    sums[b] = 1000 + 1010;
    double row[7];
    /* 2 items a page: {1000,1010} {10,10} {10,4} {4,4} {4,4} -, - */
    reassign_curve_from_hist(items, sums, 2.0, 2, 6, row);
    double want[7] = {0, 2010, 2030, 2044, 2052, 2060, 2060};
    bool same = true;
    for (unsigned m = 0; m <= 6; m++) {
        same &= row[m] == want[m] * 2.0;
    }
    ok(same, "top-k sums by page, hottest first, flat once items run out");

    reassign_curve_from_hist(items, sums, 1.0, 3, 2, row);
    ok(row[1] == 2010 + 10 && row[2] == 2010 + 30 + 4,
       "a page ending inside a bucket takes that bucket's mean");

    items[b] = 4;
    sums[b] = 1000 + 1004 + 1008 + 1020; /* mean 1008 */
    reassign_curve_from_hist(items, sums, 1.0, 1, 1, row);
    ok(row[1] == 1008.0, "a split log bucket is approximated by its mean");
}

static void random_hist(uint64_t *seed, uint64_t *items, uint64_t *sums)
{
    memset(items, 0, sizeof(uint64_t) * REASSIGN_NBUCKETS);
    memset(sums, 0, sizeof(uint64_t) * REASSIGN_NBUCKETS);
    unsigned n = rng_below(seed, 400);
    for (unsigned i = 0; i < n; i++) {
        uint32_t c = rng_below(seed, 4) == 0 ? rng_below(seed, 70000)
                                             : rng_below(seed, 256);
        c = c > REASSIGN_COUNTER_MAX ? REASSIGN_COUNTER_MAX : c;
        items[reassign_bucket_of(c)]++;
        sums[reassign_bucket_of(c)] += c;
    }
}

static bool curve_is_concave(const double *row, unsigned M)
{
    for (unsigned m = 1; m < M; m++) {
        double a = row[m] - row[m - 1];
        double b = row[m + 1] - row[m];
        if (b > a * (1 + 1e-12) + 1e-9 || b < -1e-9) {
            return false;
        }
    }
    return true;
}

static void test_curves_concave(void)
{
    uint64_t seed = 42;
    uint64_t items[REASSIGN_NBUCKETS];
    uint64_t sums[REASSIGN_NBUCKETS];
    double row[65];
    bool concave = true;
    for (unsigned t = 0; t < 300; t++) {
        random_hist(&seed, items, sums);
        reassign_curve_from_hist(items, sums, 314.0,
                                 1 + rng_below(&seed, 9), 64, row);
        concave &= curve_is_concave(row, 64);
    }
    ok(concave, "curves from 300 random histograms are concave, rising");
}

/* ---- allocation ---- */

/* Concave: marginal gains drawn, sorted descending. Otherwise arbitrary,
 * negative ones included. Integer values keep the sums exact. */
static void random_curves(uint64_t *seed, double *curves, unsigned nclasses,
                          unsigned M, bool concave)
{
    for (unsigned n = 0; n < nclasses; n++) {
        double *row = row_of(curves, M, n);
        double marg[M + 1];
        unsigned scale = 1 + rng_below(seed, 1000);
        for (unsigned m = 1; m <= M; m++) {
            marg[m] = concave ? (double)rng_below(seed, scale)
                              : (double)rng_below(seed, scale)
                                - (double)scale / 4;
        }
        if (concave && M > 0) {
            qsort(marg + 1, M, sizeof(marg[0]), descending);
        }
        row[0] = 0;
        for (unsigned m = 1; m <= M; m++) {
            row[m] = row[m - 1] + marg[m];
        }
    }
}

static void brute_search(const double *curves, unsigned nclasses, unsigned M,
                         const unsigned *min_pages, unsigned n,
                         unsigned left, double acc, double *best)
{
    if (n == nclasses - 1) {
        if (left >= min_pages[n]) {
            double v = acc + curve_value(curves, M, n, left);
            *best = v > *best ? v : *best;
        }
        return;
    }
    for (unsigned x = min_pages[n]; x <= left; x++) {
        brute_search(curves, nclasses, M, min_pages, n + 1, left - x,
                     acc + curve_value(curves, M, n, x), best);
    }
}

static double brute_force(const double *curves, unsigned nclasses,
                          unsigned M, const unsigned *min_pages)
{
    double best = -INFINITY;
    brute_search(curves, nclasses, M, min_pages, 0, M, 0.0, &best);
    return best;
}

static bool allocation_valid(const unsigned *out, unsigned nclasses,
                             unsigned M, const unsigned *min_pages)
{
    unsigned sum = 0;
    for (unsigned n = 0; n < nclasses; n++) {
        if (out[n] < (min_pages ? min_pages[n] : 0)) {
            return false;
        }
        sum += out[n];
    }
    return sum == M;
}

static void test_small_vs_brute_force(bool concave)
{
    uint64_t seed = concave ? 7 : 8;
    unsigned dp_ok = 0;
    unsigned greedy_ok = 0;
    unsigned cases = 400;
    for (unsigned t = 0; t < cases; t++) {
        unsigned N = 1 + rng_below(&seed, 4);
        unsigned M = rng_below(&seed, 9);
        unsigned min_pages[4] = {0};
        for (unsigned n = 0; n < N && t % 3 == 0; n++) {
            min_pages[n] = rng_below(&seed, 2 + M / N);
        }
        double *curves = curves_alloc(N, M);
        random_curves(&seed, curves, N, M, concave);
        double best = brute_force(curves, N, M, min_pages);
        unsigned out[4];
        double dp_total = 0;
        double greedy_total = 0;
        int rc = dp_allocate(curves, N, M, min_pages, out, &dp_total);
        if (best == -INFINITY) {
            dp_ok += rc == -1;
            greedy_ok += greedy_allocate(curves, N, M, min_pages, out,
                                         NULL) == -1;
            free(curves);
            continue;
        }
        dp_ok += rc == 0 && dp_total == best
                 && allocation_valid(out, N, M, min_pages);
        rc = greedy_allocate(curves, N, M, min_pages, out, &greedy_total);
        greedy_ok += rc == 0 && allocation_valid(out, N, M, min_pages)
                     && (!concave || greedy_total == best);
        free(curves);
    }
    ok(dp_ok == cases, "%s: DP == brute force on %u cases, N<=4 M<=8 "
       "(%u ok)", concave ? "concave" : "non-concave", cases, dp_ok);
    ok(greedy_ok == cases, "%s: greedy %s on %u cases (%u ok)",
       concave ? "concave" : "non-concave",
       concave ? "== brute force" : "feasible (optimality not asserted)",
       cases, greedy_ok);
}

static void test_greedy_can_lose_on_non_concave(void)
{
    /* class 0: 1 per page; class 1: nothing until 3 pages, then 10 */
    unsigned M = 3;
    double curves[2 * 4] = {0, 1, 2, 3, 0, 0, 0, 10};
    unsigned out[2];
    double dp_total = 0;
    double greedy_total = 0;
    dp_allocate(curves, 2, M, NULL, out, &dp_total);
    ok(dp_total == 10 && out[1] == 3, "DP finds the non-concave optimum");
    greedy_allocate(curves, 2, M, NULL, out, &greedy_total);
    ok(greedy_total == 3, "greedy does not (why the paper uses a DP)");
}

static void test_dp_equals_greedy(void)
{
    uint64_t seed = 99;
    unsigned cases = 150;
    unsigned same = 0;
    for (unsigned t = 0; t < cases; t++) {
        unsigned N = 1 + rng_below(&seed, 16);
        unsigned M = rng_below(&seed, 160);
        unsigned min_pages[16] = {0};
        for (unsigned n = 0; n < N && t % 2 == 0; n++) {
            min_pages[n] = rng_below(&seed, 1 + M / (2 * N));
        }
        double *curves = curves_alloc(N, M);
        random_curves(&seed, curves, N, M, true);
        unsigned dp_out[16];
        unsigned greedy_out[16];
        double dp_total = -1;
        double greedy_total = -2;
        int a = dp_allocate(curves, N, M, min_pages, dp_out, &dp_total);
        int b = greedy_allocate(curves, N, M, min_pages, greedy_out,
                                &greedy_total);
        same += a == 0 && b == 0 && dp_total == greedy_total
                && allocation_valid(dp_out, N, M, min_pages)
                && allocation_valid(greedy_out, N, M, min_pages);
        free(curves);
    }
    ok(same == cases, "DP == greedy total on %u random concave cases, "
       "N<=16 M<160 (%u ok)", cases, same);

    /* the daemon's largest shape: 64 classes, 1024 spare pages */
    unsigned N = 64;
    unsigned M = 1024;
    double *curves = curves_alloc(N, M);
    random_curves(&seed, curves, N, M, true);
    unsigned dp_out[64];
    unsigned greedy_out[64];
    double dp_total = -1;
    double greedy_total = -2;
    dp_allocate(curves, N, M, NULL, dp_out, &dp_total);
    greedy_allocate(curves, N, M, NULL, greedy_out, &greedy_total);
    ok(dp_total == greedy_total && allocation_valid(dp_out, N, M, NULL),
       "64 classes x 1024 pages: DP == greedy (%.0f)", dp_total);
    free(curves);
}

static void test_allocation_edges(void)
{
    double curves[2 * 3] = {0, 5, 6, 0, 1, 2};
    unsigned out[2];
    unsigned too_many[2] = {2, 1};
    ok(dp_allocate(curves, 2, 2, too_many, out, NULL) == -1
       && greedy_allocate(curves, 2, 2, too_many, out, NULL) == -1,
       "minimums above M are refused");
    ok(dp_allocate(curves, 0, 2, NULL, out, NULL) == -1
       && greedy_allocate(curves, 0, 2, NULL, out, NULL) == -1,
       "no classes is refused");
    unsigned keep[2] = {0, 2};
    double total = 0;
    ok(dp_allocate(curves, 2, 2, keep, out, &total) == 0 && out[1] == 2
       && total == 2, "a minimum overrides a better use of the pages");
    double flat[3 * 1] = {0, 0, 0};
    unsigned out3[3];
    ok(dp_allocate(flat, 3, 0, NULL, out3, &total) == 0 && total == 0,
       "M = 0 allocates nothing");
}

static void test_dp_coarsened(void)
{
    uint64_t seed = 5;
    unsigned N = 8;
    unsigned M = 3 * REASSIGN_DP_MAX_UNITS + 77;
    unsigned min_pages[8] = {3, 0, 0, 10, 0, 0, 1, 0};
    double *curves = curves_alloc(N, M);
    random_curves(&seed, curves, N, M, true);
    unsigned dp_out[8];
    unsigned greedy_out[8];
    double dp_total = 0;
    double greedy_total = 0;
    int rc = dp_allocate(curves, N, M, min_pages, dp_out, &dp_total);
    greedy_allocate(curves, N, M, min_pages, greedy_out, &greedy_total);
    ok(rc == 0 && allocation_valid(dp_out, N, M, min_pages),
       "above %d spare pages the DP still returns a feasible split",
       REASSIGN_DP_MAX_UNITS);
    ok(dp_total >= greedy_total * 0.999 && dp_total <= greedy_total,
       "within 0.1%% of the optimum (%.0f vs %.0f)", dp_total, greedy_total);
    free(curves);
}

/* ---- planning ---- */

/* Concave rows with decreasing marginals: class n's m-th page is worth
 * base[n] - m. */
static void linear_curves(double *curves, unsigned nclasses, unsigned M,
                          const double *base)
{
    for (unsigned n = 0; n < nclasses; n++) {
        double *row = row_of(curves, M, n);
        row[0] = 0;
        for (unsigned m = 1; m <= M; m++) {
            row[m] = row[m - 1] + (base[n] - m > 0 ? base[n] - m : 0);
        }
    }
}

static void test_plan(void)
{
    unsigned M = 8;
    double base[3] = {10, 20, 20};
    double curves[3 * 9];
    linear_curves(curves, 3, M, base);
    unsigned current[3] = {6, 1, 1};
    unsigned optimal[3];
    dp_allocate(curves, 3, M, NULL, optimal, NULL);
    diag("optimal split %u %u %u", optimal[0], optimal[1], optimal[2]);
    struct reassign_plan_params pp = {.max_moves = 3,
                                      .min_gain_fraction = 0.02};
    struct reassign_move moves[8];
    unsigned n = reassign_plan(curves, M, current, optimal, 3, &pp, moves);
    ok(n == 3, "rate limit: 3 moves of the %u needed", current[0]
       - optimal[0]);
    ok(n == 3 && moves[0].from_class == 0 && moves[0].to_class == 1
       && moves[1].from_class == 0 && moves[1].to_class == 2
       && moves[2].to_class == 1,
       "largest surplus to largest deficit, lowest id on ties");
    bool positive = true;
    for (unsigned i = 0; i < n; i++) {
        positive &= moves[i].predicted_gain > 0;
    }
    ok(positive && moves[0].predicted_gain == (20 - 2) - (10 - 6),
       "each move predicts a positive gain (first: %.0f)",
       moves[0].predicted_gain);

    pp.max_moves = 8;
    n = reassign_plan(curves, M, current, optimal, 3, &pp, moves);
    unsigned work[3] = {6, 1, 1};
    for (unsigned i = 0; i < n; i++) {
        work[moves[i].from_class]--;
        work[moves[i].to_class]++;
    }
    ok(memcmp(work, optimal, sizeof(work)) == 0,
       "with room, the plan reaches the optimum (%u moves)", n);
    ok(reassign_plan(curves, M, optimal, optimal, 3, &pp, moves) == 0,
       "at the optimum nothing moves");

    pp.max_moves = 0;
    ok(reassign_plan(curves, M, current, optimal, 3, &pp, moves) == 0,
       "max_moves 0 plans nothing");
}

static void test_plan_hysteresis(void)
{
    /* one page more for class 1 gains 1 over a benefit of 201: 0.5% */
    double curves[2 * 3] = {0, 100, 200, 0, 101, 202};
    unsigned current[2] = {1, 1};
    unsigned optimal[2] = {0, 2};
    struct reassign_plan_params pp = {.max_moves = 4,
                                      .min_gain_fraction = 0.02};
    struct reassign_move moves[4];
    ok(reassign_plan(curves, 2, current, optimal, 2, &pp, moves) == 0,
       "hysteresis: a gain under 2%% of the benefit moves nothing");
    pp.min_gain_fraction = 0.0;
    ok(reassign_plan(curves, 2, current, optimal, 2, &pp, moves) == 1
       && moves[0].from_class == 0 && moves[0].predicted_gain == 1.0,
       "without hysteresis the same case moves one page, gain 1");
}

/* ---- PSA ---- */

static void test_psa(void)
{
    struct reassign_move mv;
    uint64_t misses[4] = {0, 100, 10, 0};
    unsigned pages[4] = {0, 2, 5, 3};
    ok(psa_plan(misses, NULL, pages, 4, &mv) == 1 && mv.to_class == 1
       && mv.from_class == 3,
       "most misses per page receives; fewest per page (>1 page) gives");
    unsigned one_page[4] = {0, 2, 1, 1};
    uint64_t m2[4] = {0, 100, 0, 0};
    ok(psa_plan(m2, NULL, one_page, 4, &mv) == 0,
       "classes with a single page never give");
    uint64_t none[4] = {0};
    ok(psa_plan(none, none, pages, 4, &mv) == 0, "no pressure, no move");
    uint64_t even[3] = {10, 20, 30};
    unsigned pages_even[3] = {1, 2, 3};
    ok(psa_plan(even, NULL, pages_even, 3, &mv) == 0,
       "equal pressure per page: no move");
    uint64_t ev[3] = {0, 3, 50};
    unsigned p3[3] = {4, 4, 4};
    ok(psa_plan(NULL, ev, p3, 3, &mv) == 1 && mv.to_class == 2
       && mv.from_class == 0, "evictions alone drive it too");
    uint64_t both_m[3] = {5, 0, 0};
    uint64_t both_e[3] = {0, 6, 0};
    ok(psa_plan(both_m, both_e, p3, 3, &mv) == 1 && mv.to_class == 1
       && mv.from_class == 2, "pressure = misses + evictions");
}

/* ---- a whole period ---- */

static void test_size_aware_changes_the_choice(void)
{
    struct reassign_cost_model cm;
    reassign_cost_model_default(&cm);
    /* 8 KiB pages: class 0 holds 128 chunks of 64 B, counters 10;
     * class 1 holds 2 chunks of 4 KiB, counters 15. One page to give. */
    uint64_t items[2][REASSIGN_NBUCKETS] = {{0}};
    uint64_t sums[2][REASSIGN_NBUCKETS] = {{0}};
    items[0][10] = 1000;
    sums[0][10] = 10000;
    items[1][15] = 1000;
    sums[1][15] = 15000;
    double curves[2 * 2];
    unsigned out[2];
    for (int aware = 1; aware >= 0; aware--) {
        cm.size_aware = aware;
        reassign_curve_from_hist(items[0], sums[0],
                                 reassign_access_gain(&cm, 64), 128, 1,
                                 curves);
        reassign_curve_from_hist(items[1], sums[1],
                                 reassign_access_gain(&cm, 4096), 2, 1,
                                 curves + 2);
        dp_allocate(curves, 2, 1, NULL, out, NULL);
        ok(out[aware ? 0 : 1] == 1,
           "%s gives the page to the %s (%.0f vs %.0f)",
           aware ? "size-aware gain" : "paper's S*P0/S0",
           aware ? "many small items" : "few large, hotter items",
           curves[1], curves[3]);
    }
}

static void test_period(void)
{
    ok(reassign_init(2) == 0, "reassign_init for a period");
    for (unsigned i = 0; i < 20; i++) {
        reassign_note(i % 2, 1, -1, 100); /* hot small items */
        reassign_note(i % 2, 2, -1, 1);   /* cold 1 KiB items */
    }
    struct reassign_class_input classes[3] = {
        {.chunk_size = 0},
        {.chunk_size = 96, .chunks_per_page = 4, .d_pages = 1},
        {.chunk_size = 1024, .chunks_per_page = 4, .d_pages = 4,
         .min_pages = 1},
    };
    struct reassign_params params;
    reassign_params_default(&params);
    struct reassign_move moves[2];
    int n = reassign_period(classes, 3, &params, moves);
    ok(n == 2 && moves[0].from_class == 2 && moves[0].to_class == 1
       && moves[1].from_class == 2,
       "period: 2 moves (the rate limit) from cold class 2 to hot class 1");

    struct reassign_stats st;
    reassign_stats_get(&st);
    struct reassign_class_stats c1;
    struct reassign_class_stats c2;
    reassign_class_stats_get(1, &c1);
    reassign_class_stats_get(2, &c2);
    ok(st.periods == 1 && st.moves_planned == 2 && st.last_moves == 2
       && st.last_total_pages == 5, "stats: periods, moves, pages");
    ok(c1.optimal_pages == 4 && c2.optimal_pages == 1
       && c1.current_pages == 1 && c2.current_pages == 4,
       "stats: optimum 4+1 pages (class 2 keeps its minimum)");
    double page1 = 4 * 100 * reassign_access_gain(&params.cost, 96);
    ok(c1.benefit_optimal == 4 * page1 && c1.items == 20
       && c1.counter_sum == 2000,
       "stats: class benefit %.0f, 20 items, counter sum 2000",
       c1.benefit_optimal);
    double row[6];
    reassign_curve_build(1, 96, 4, 5, &params.cost, row);
    ok(row[5] == 20 * 100 * reassign_access_gain(&params.cost, 96)
       && row[1] == page1, "reassign_curve_build reads the mapping set");
    ok(st.benefit_optimal > st.benefit_current,
       "stats: predicted benefit %.0f now, %.0f at the optimum",
       st.benefit_current, st.benefit_optimal);

    classes[1].d_pages = 4;
    classes[2].d_pages = 1;
    n = reassign_period(classes, 3, &params, moves);
    reassign_stats_get(&st);
    ok(n == 0 && st.periods == 2 && st.hysteresis_skips == 0,
       "at the optimum the next period plans nothing");
    params.use_greedy = true;
    classes[1].d_pages = 3;
    classes[2].d_pages = 2;
    n = reassign_period(classes, 3, &params, moves);
    ok(n == 1 && moves[0].to_class == 1, "greedy mode plans the same way");
    ok(reassign_period(classes, REASSIGN_MAX_CLASSES + 1, &params, moves)
       == -1, "too many classes is refused");
    classes[2].min_pages = 9;
    ok(reassign_period(classes, 3, &params, moves) == -1,
       "minimums above M are refused");
    reassign_shutdown();
}

/* A class the workload has left keeps its counters until they decay;
 * weighed by recent accesses it is worth nothing at once. */
static void test_period_weighs_recent_accesses(void)
{
    ok(reassign_init(1) == 0, "reassign_init for recent accesses");
    for (unsigned i = 0; i < 12; i++) {
        reassign_note(0, 1, -1, 50); /* the old mix: hot, now idle */
        reassign_note(0, 2, -1, 5);  /* the new mix: counters still low */
    }
    struct reassign_class_input classes[3] = {
        {.chunk_size = 0},
        {.chunk_size = 96, .chunks_per_page = 4, .d_pages = 3,
         .min_pages = 1, .recent_accesses = 0.0},
        {.chunk_size = 96, .chunks_per_page = 4, .d_pages = 1,
         .min_pages = 1, .recent_accesses = 0.9},
    };
    struct reassign_params params;
    reassign_params_default(&params);
    struct reassign_move moves[2];
    ok(reassign_period(classes, 3, &params, moves) == 0,
       "by counters alone the idle class keeps its pages");
    params.weigh_recent = true;
    int n = reassign_period(classes, 3, &params, moves);
    ok(n == 2 && moves[0].from_class == 1 && moves[0].to_class == 2
       && moves[1].from_class == 1,
       "weighed by recent accesses, its pages go to the class used now");
    struct reassign_class_stats c2;
    reassign_class_stats_get(2, &c2);
    double gain = reassign_access_gain(&params.cost, 96);
    ok(fabs(c2.benefit_optimal - 0.9 * gain) < 1e-9 * gain,
       "a class's whole curve is its recent accesses times the gain (%.3f)",
       c2.benefit_optimal / gain);
    classes[1].recent_accesses = 0.45;
    classes[2].recent_accesses = 0.45;
    classes[1].d_pages = 2;
    classes[2].d_pages = 2;
    ok(reassign_period(classes, 3, &params, moves) == 0,
       "equal recent accesses, equal spread: an even split stays");
    reassign_shutdown();
}

int main(void)
{
    test_buckets();
    test_notes_single_thread();
    test_notes_sparse_classes();
    test_notes_concurrent();
    test_gain();
    test_curve_by_hand();
    test_curves_concave();
    test_small_vs_brute_force(true);
    test_small_vs_brute_force(false);
    test_greedy_can_lose_on_non_concave();
    test_dp_equals_greedy();
    test_allocation_edges();
    test_dp_coarsened();
    test_plan();
    test_plan_hysteresis();
    test_psa();
    test_size_aware_changes_the_choice();
    test_period();
    test_period_weighs_recent_accesses();
    return done_testing();
}
