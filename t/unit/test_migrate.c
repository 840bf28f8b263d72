/*
 * test_migrate.c: migrate.c: counter bump and lazy decay (against a direct
 * simulation of the paper's per-epoch rule), Algorithm 1 on synthetic
 * periods, Equation 1, epoch and period accounting through fake per-thread
 * counters and a fake engine, the promotion queue (FIFO, full, drain,
 * de-duplication) and concurrent producers with a live tier thread.
 *
 * The concurrent part is the one to run under -fsanitize=thread.
 */
#include "config.h"
#include "migrate.h"
#include "tap.h"
#include "unit_support.h"
#include "item.h"
#include "settings.h"
#include "slab_class.h"
#include "stat_counter.h"
#include "stat_line.h"
#include "storage_worker.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 3

static struct storage_worker workers[NTHREADS];

/* ---- decay ---- */

/* The paper's rule applied at the end of every epoch, one epoch at a
 * time: idle is 0 at the end of an epoch with an access, else one more
 * than at the previous end; zero once idle reaches 3. */
struct sim_item {
    uint32_t counter;
    uint32_t idle;
    bool accessed;
};

static void sim_end_epoch(struct sim_item *s)
{
    s->idle = s->accessed ? 0 : s->idle + 1;
    s->accessed = false;
    if (s->idle >= 3) {
        s->counter = 0;
    } else {
        s->counter >>= s->idle + 1;
    }
}

static uint32_t sim_decay(uint32_t counter, uint32_t epochs)
{
    struct sim_item s = { .counter = counter, .idle = 0, .accessed = true };
    for (uint32_t e = 0; e < epochs; e++) {
        sim_end_epoch(&s);
    }
    return s.counter;
}

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_decay_values(void)
{
    ok(migrate_decay(1000, 0) == 1000, "decay: elapsed 0 keeps the counter");
    ok(migrate_decay(1000, 1) == 500, "decay: elapsed 1 is c >> 1");
    ok(migrate_decay(1000, 2) == 125, "decay: elapsed 2 is c >> 3");
    ok(migrate_decay(1000, 3) == 15, "decay: elapsed 3 is c >> 6");
    ok(migrate_decay(1000, 4) == 0 && migrate_decay(UINT32_MAX, 4) == 0,
       "decay: elapsed 4 is zero");
    ok(migrate_decay(UINT32_MAX, 1000) == 0
       && migrate_decay(UINT32_MAX, UINT32_MAX) == 0,
       "decay: large elapsed is zero");
}

static void test_decay_against_simulation(void)
{
    uint32_t counters[4096];
    size_t n = 0;
    for (uint32_t c = 0; c < 1024; c++) {
        counters[n++] = c;
    }
    for (uint32_t b = 0; b < 32; b++) {
        counters[n++] = (uint32_t)1 << b;
        counters[n++] = ((uint32_t)1 << b) - 1;
    }
    counters[n++] = UINT32_MAX;
    while (n < sizeof(counters) / sizeof(counters[0])) {
        counters[n++] = (uint32_t)rng();
    }
    size_t mismatches = 0;
    for (size_t i = 0; i < n; i++) {
        for (uint32_t e = 0; e <= 12; e++) {
            if (migrate_decay(counters[i], e) != sim_decay(counters[i], e)) {
                if (mismatches++ < 5) {
                    diag("counter %u elapsed %u: lazy %u simulated %u",
                         counters[i], e, migrate_decay(counters[i], e),
                         sim_decay(counters[i], e));
                }
            }
        }
    }
    ok(mismatches == 0, "decay: lazy form equals %zu x 13 simulated decays",
       n);
}

/* An item accessed at random in random epochs, kept both ways: eagerly
 * (every epoch end) and lazily (decayed from its stamp on access and when
 * read), as the engine keeps it; the counter saturates at 255. */
static void test_decay_lazy_matches_eager_history(void)
{
    size_t mismatches = 0;
    for (int n = 0; n < 2000; n++) {
        struct sim_item eager = { 0, 0, false };
        uint32_t lazy = 0;
        uint32_t stamp = 0;
        uint32_t idle_odds = 1 + (uint32_t)(rng() % 6);
        for (uint32_t epoch = 0; epoch < 60; epoch++) {
            if (rng() % idle_odds == 0) {
                uint32_t hits = (uint32_t)(rng() % 300);
                for (uint32_t h = 0; h < hits; h++) {
                    eager.counter = migrate_counter_bump(eager.counter, 255);
                    eager.accessed = true;
                    lazy = migrate_counter_bump(
                        migrate_decay(lazy, epoch - stamp), 255);
                    stamp = epoch;
                }
            }
            if (migrate_decay(lazy, epoch - stamp) != eager.counter) {
                mismatches++;
            }
            sim_end_epoch(&eager);
        }
    }
    ok(mismatches == 0,
       "decay: lazy counters equal per-epoch decay over random histories");
}

static void test_bump(void)
{
    ok(migrate_counter_bump(0, 255) == 1, "bump: 0 -> 1");
    ok(migrate_counter_bump(254, 255) == 255, "bump: reaches max");
    ok(migrate_counter_bump(255, 255) == 255, "bump: saturates at max");
    ok(migrate_counter_bump(300, 255) == 255, "bump: above max clamps");
    ok(migrate_counter_bump(UINT32_MAX, UINT32_MAX) == UINT32_MAX,
       "bump: saturates at UINT32_MAX");
    ok(migrate_counter_bump(0, 0) == 0, "bump: max 0 stays 0");
}

/* ---- Equation 1 and Algorithm 1 ---- */

static bool near(double a, double b)
{
    double d = a - b;
    return d < 1e-9 && d > -1e-9;
}

static void test_benefit(void)
{
    struct period_counts pc = { .d_requests = 80, .n_requests = 20,
                                .migration_cost = 10 };
    ok(near(threshold_benefit(&pc), 0.7), "benefit: (80-10)/(80+20) = 0.7");
    struct period_counts neg = { .d_requests = 10, .n_requests = 90,
                                 .migration_cost = 30 };
    ok(near(threshold_benefit(&neg), -0.2),
       "benefit: migration cost above D hits is negative");
    struct period_counts none = { .migration_cost = 5 };
    ok(threshold_benefit(&none) == 0.0, "benefit: no requests is 0");
    struct period_counts all_n = { .n_requests = 50 };
    ok(threshold_benefit(&all_n) == 0.0, "benefit: only N hits is 0");
}

/* A period with no DRAM room, so the hill climb decides; all requests
 * hit D and the migration cost sets the benefit (which may be negative). */
static uint32_t climb(struct threshold_state *st, double benefit)
{
    struct period_counts pc = {
        .d_requests = 100000,
        .n_requests = 0,
        .migration_cost = (uint64_t)((1.0 - benefit) * 100000.0 + 0.5),
        .promotions = 10,
        .free_d_chunks = 0,
    };
    return threshold_step(st, &pc);
}

static void test_plenty_of_free_chunks(void)
{
    struct threshold_state st;
    threshold_init(&st, 8, 256);
    struct period_counts pc = { .d_requests = 100, .promotions = 3,
                                .free_d_chunks = 1000 };
    bool each_step_down = true;
    for (uint32_t expect = 7; expect >= 1; expect--) {
        /* vary the benefit both ways: with room it must not matter */
        pc.d_requests = (expect % 2) ? 10 : 100;
        pc.n_requests = 100 - pc.d_requests / 2;
        if (threshold_step(&st, &pc) != expect) {
            each_step_down = false;
        }
    }
    ok(each_step_down, "room: threshold drops by one every period to 1");
    ok(threshold_step(&st, &pc) == 1 && st.threshold == 1,
       "room: threshold stays at 1");

    struct threshold_state edge;
    threshold_init(&edge, 8, 256);
    struct period_counts half = { .promotions = 4, .free_d_chunks = 9 };
    ok(threshold_step(&edge, &half) == 7, "room: 4 promotions < 9 / 2");
    threshold_init(&edge, 8, 256);
    edge.have_last = true;
    edge.last_step = 1;
    edge.last_benefit = -1.0;
    struct period_counts full = { .d_requests = 10, .promotions = 5,
                                  .free_d_chunks = 9 };
    ok(threshold_step(&edge, &full) == 9,
       "room: 5 promotions >= 9 / 2 hill-climbs (rising, up)");
    threshold_init(&edge, 8, 256);
    edge.have_last = true;
    edge.last_step = 1;
    edge.last_benefit = -1.0;
    struct period_counts even = { .d_requests = 10, .promotions = 4,
                                  .free_d_chunks = 8 };
    ok(threshold_step(&edge, &even) == 9, "room: 4 promotions >= 8 / 2");
}

static void test_first_period(void)
{
    struct threshold_state st;
    threshold_init(&st, 8, 256);
    ok(st.threshold == 8 && st.last_step == 0 && !st.have_last,
       "first: initial state");
    ok(climb(&st, 0.5) == 7, "first: the first period decrements");
    ok(st.have_last && st.last_step == -1 && near(st.last_benefit, 0.5),
       "first: remembers benefit and direction");
    struct threshold_state low;
    threshold_init(&low, 8, 256);
    ok(climb(&low, -0.9) == 7, "first: decrements whatever the benefit");
}

static void test_hill_climb(void)
{
    struct threshold_state st;
    threshold_init(&st, 8, 256);
    climb(&st, 0.50);                                   /* 8 -> 7 */
    ok(climb(&st, 0.60) == 6, "climb: rising after a decrement: down");
    ok(climb(&st, 0.70) == 5, "climb: still rising: down again");
    ok(climb(&st, 0.65) == 6 && st.last_step == 1,
       "climb: falling after a decrement: reverse, up");
    ok(climb(&st, 0.66) == 7, "climb: rising after an increment: up");
    ok(climb(&st, 0.80) == 8, "climb: still rising: up again");
    ok(climb(&st, 0.40) == 7 && st.last_step == -1,
       "climb: falling after an increment: reverse, down");
    ok(climb(&st, 0.30) == 8, "climb: falling again: reverse again");
}

static void test_dead_band(void)
{
    struct threshold_state st;
    threshold_init(&st, 8, 256);
    climb(&st, 0.50);                                   /* 8 -> 7 */
    climb(&st, 0.60);                                   /* 7 -> 6 */
    ok(climb(&st, 0.6005) == 6 && st.last_step == -1,
       "dead band: +0.0005 keeps the threshold and the direction");
    ok(climb(&st, 0.6) == 6, "dead band: -0.0005 keeps the threshold");
    ok(near(st.last_benefit, 0.6), "dead band: benefit still recorded");
    ok(climb(&st, 0.602) == 5,
       "dead band: +0.002 after a dead period repeats the last step");
    ok(climb(&st, 0.600) == 6, "dead band: -0.002 reverses it");
}

static void test_clamps(void)
{
    struct threshold_state st;
    threshold_init(&st, 2, 256);
    climb(&st, 0.5);                                    /* 2 -> 1 */
    ok(climb(&st, 0.6) == 1 && st.last_step == -1,
       "clamp: rising at 1 stays at 1");
    ok(climb(&st, 0.5) == 2, "clamp: falling at 1 reverses, up");

    threshold_init(&st, 3, 4);
    st.have_last = true;
    st.last_step = 1;
    st.last_benefit = 0.0;
    ok(climb(&st, 0.1) == 4, "clamp: climbs to max");
    ok(climb(&st, 0.2) == 4 && st.last_step == 1, "clamp: stays at max");
    ok(climb(&st, 0.1) == 3, "clamp: falling at max reverses, down");

    threshold_init(&st, 0, 256);
    ok(st.threshold == 1, "clamp: initial 0 becomes 1");
    threshold_init(&st, 1000, 16);
    ok(st.threshold == 16, "clamp: initial above max becomes max");
    threshold_init(&st, 5, 0);
    ok(st.max == 1 && st.threshold == 1, "clamp: max 0 becomes 1");
}

static void test_threshold_max_from_queues(void)
{
    settings.tier.threshold_init = 250;
    settings.tier.mq_queues = 3;
    migrate_init(4);
    ok(migrate_threshold(1) == 8, "max: 2^3 with 3 queues");
    settings.tier.mq_queues = 8;
    migrate_init(4);
    ok(migrate_threshold(1) == 250, "max: 255 with 8 queues");
    settings.tier.threshold_init = 1000;
    settings.tier.mq_queues = 12;
    migrate_init(4);
    ok(migrate_threshold(2) == 255, "max: 255 with 12 queues");
    ok(migrate_threshold(MAX_NUMBER_OF_SLAB_CLASSES) == 255,
       "max: an unknown class never promotes");
}

/* ---- the tier thread's round, with a fake engine ---- */

#define MAX_CALLS 8192

static struct {
    uint32_t walks[64];
    unsigned int nwalks;
    uint64_t free_chunks[MAX_NUMBER_OF_SLAB_CLASSES];
    unsigned int free_calls[MAX_NUMBER_OF_SLAB_CLASSES];
    uint64_t promoted_hv[MAX_CALLS];
    char promoted_key[MAX_CALLS][KEY_MAX_LENGTH + 1];
    unsigned int npromoted;
    bool refuse_odd;
} fake;

static bool fake_promote(uint64_t hv, const char *key, size_t nkey)
{
    if (fake.npromoted < MAX_CALLS) {
        fake.promoted_hv[fake.npromoted] = hv;
        memcpy(fake.promoted_key[fake.npromoted], key, nkey);
        fake.promoted_key[fake.npromoted][nkey] = '\0';
    }
    fake.npromoted++;
    return !(fake.refuse_odd && (hv & 1));
}

static uint64_t fake_free_d_chunks(unsigned int clsid)
{
    fake.free_calls[clsid]++;
    return fake.free_chunks[clsid];
}

static void fake_decay_walk(uint32_t epoch)
{
    if (fake.nwalks < 64) {
        fake.walks[fake.nwalks] = epoch;
    }
    fake.nwalks++;
}

static const struct migrate_engine fake_engine = {
    .promote = fake_promote,
    .free_d_chunks = fake_free_d_chunks,
    .decay_walk = fake_decay_walk,
};

static void setup_round(uint64_t decay_period, uint32_t adjust_period)
{
    memset(&fake, 0, sizeof(fake));
    storage_workers_stats_reset();
    settings.num_threads = NTHREADS;
    settings.tier.decay_period = decay_period;
    settings.tier.adjust_period = adjust_period;
    settings.tier.threshold_init = 4;
    settings.tier.mq_queues = 8;
    migrate_init(10);
    migrate_set_engine(&fake_engine);
}

static void add_requests(int thread, uint64_t n)
{
    STAT_ADD(workers[thread].stats.tier_requests, n);
}

static void test_epochs(void)
{
    setup_round(1000, 100);
    struct migrate_stats ms;
    add_requests(0, 500);
    add_requests(1, 499);
    migrate_tick();
    ok(migrate_epoch() == 0 && fake.nwalks == 0,
       "epoch: 999 requests: still epoch 0, no walk");
    add_requests(2, 1);
    migrate_tick();
    ok(migrate_epoch() == 1 && fake.nwalks == 1 && fake.walks[0] == 1,
       "epoch: 1000 requests: epoch 1, walked once");
    migrate_tick();
    ok(migrate_epoch() == 1 && fake.nwalks == 1,
       "epoch: an idle tick does nothing");
    add_requests(1, 3500);
    migrate_tick();
    ok(migrate_epoch() == 4 && fake.nwalks == 4 && fake.walks[1] == 2
       && fake.walks[2] == 3 && fake.walks[3] == 4,
       "epoch: 3500 more: three epochs, each walked in order");
    add_requests(0, 499);
    migrate_tick();
    ok(migrate_epoch() == 4, "epoch: the remainder carries over (4999)");
    add_requests(0, 1);
    migrate_tick();
    ok(migrate_epoch() == 5 && fake.nwalks == 5 && fake.walks[4] == 5,
       "epoch: 5000 requests: epoch 5");
    migrate_get_stats(&ms);
    ok(ms.decay_epochs == 5, "epoch: decay_epochs counts 5");

    settings.tier.decay_period = 0;
    add_requests(0, 100000);
    migrate_tick();
    ok(migrate_epoch() == 5, "epoch: period 0 disables decay");
}

static void hit(unsigned int clsid, unsigned int d, unsigned int n)
{
    for (unsigned int i = 0; i < d; i++) {
        migrate_count_request(&workers[i % NTHREADS], clsid, true);
    }
    for (unsigned int i = 0; i < n; i++) {
        migrate_count_request(&workers[(i + 1) % NTHREADS], clsid, false);
    }
}

static void test_periods(void)
{
    setup_round(0, 100);
    struct migrate_stats ms;
    struct migrate_class_stats cs;
    fake.free_chunks[3] = 1000;
    hit(3, 60, 39);
    migrate_tick();
    migrate_get_stats(&ms);
    ok(migrate_threshold(3) == 4 && ms.threshold_adjustments == 0
       && fake.free_calls[3] == 0, "period: 99 requests: no adjustment");
    hit(3, 0, 1);
    migrate_tick();
    migrate_get_stats(&ms);
    migrate_get_class_stats(3, &cs);
    ok(migrate_threshold(3) == 3 && ms.threshold_adjustments == 1
       && fake.free_calls[3] == 1,
       "period: 100th request ends it: room, 4 -> 3");
    ok(cs.d_requests == 60 && cs.n_requests == 40
       && near(cs.last_benefit, 0.6),
       "period: class stats 60 D, 40 N, benefit 0.6");
    ok(migrate_threshold(5) == 4, "period: other classes untouched");
    migrate_tick();
    migrate_get_stats(&ms);
    ok(ms.threshold_adjustments == 1, "period: a new period starts empty");

    /* no room now: 2 promotions of 10 lines each, free 3 */
    fake.free_chunks[3] = 3;
    hit(3, 90, 9);
    migrate_count_promotion(3, 10);
    migrate_count_promotion(3, 10);
    migrate_tick();
    ok(migrate_threshold(3) == 3, "period: 99 of the second: unchanged");
    hit(3, 0, 1);
    migrate_tick();
    migrate_get_class_stats(3, &cs);
    migrate_get_stats(&ms);
    ok(near(cs.last_benefit, (90.0 - 20.0) / 100.0),
       "period: C_mig is the promotions' lines: benefit 0.7");
    ok(migrate_threshold(3) == 2 && ms.threshold_adjustments == 2,
       "period: benefit rose after a decrement: 3 -> 2");
    ok(cs.promotions == 2 && ms.promotions == 2,
       "period: promotions counted per class and in total");

    fake.free_chunks[3] = 0;
    hit(3, 10, 300);
    hit(7, 100, 0);
    migrate_tick();
    migrate_get_stats(&ms);
    migrate_get_class_stats(3, &cs);
    ok(migrate_threshold(3) == 3 && ms.threshold_adjustments == 4,
       "period: a late tick adjusts once per class; falling: 2 -> 3");
    ok(near(cs.last_benefit, 10.0 / 310.0),
       "period: the late period covers all its requests");
    ok(migrate_threshold(7) == 3, "period: class 7 ended its own period");

    hit(11, 500, 0);
    migrate_tick();
    ok(migrate_threshold(11) == 4,
       "period: classes above nclasses are not scanned");
    settings.tier.adjust_period = 0;
    hit(3, 500, 0);
    migrate_tick();
    ok(migrate_threshold(3) == 3, "period: adjust period 0 disables");
    settings.tier.adjust_period = 100;
}

/* ---- promotion queue ---- */

static bool queue_key(uint64_t hv, const char *key)
{
    return migrate_queue_promotion(hv, key, strlen(key));
}

static void test_queue_fifo(void)
{
    setup_round(0, 0);
    char key[32];
    bool all = true;
    for (unsigned int i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "key:%u", i);
        all = queue_key(100 + i, key) && all;
    }
    ok(all, "queue: 10 queued");
    fake.refuse_odd = true;
    unsigned int promoted = migrate_tick();
    bool in_order = fake.npromoted == 10;
    for (unsigned int i = 0; in_order && i < 10; i++) {
        snprintf(key, sizeof(key), "key:%u", i);
        in_order = fake.promoted_hv[i] == 100 + i
            && strcmp(fake.promoted_key[i], key) == 0;
    }
    ok(in_order, "queue: drained first in, first out with hv and key");
    ok(promoted == 5, "queue: tick returns the promotions that succeeded");
    ok(migrate_tick() == 0 && fake.npromoted == 10, "queue: drained empty");

    char longest[KEY_MAX_LENGTH + 1];
    memset(longest, 'k', KEY_MAX_LENGTH);
    longest[KEY_MAX_LENGTH] = '\0';
    ok(queue_key(7, longest), "queue: a 250-byte key is accepted");
    ok(!migrate_queue_promotion(8, longest, KEY_MAX_LENGTH + 1)
       && !migrate_queue_promotion(9, "x", 0),
       "queue: empty and oversized keys are refused");
    migrate_tick();
    ok(fake.npromoted == 11
       && strcmp(fake.promoted_key[10], longest) == 0,
       "queue: the long key comes back whole");
}

static void test_queue_full(void)
{
    setup_round(0, 0);
    struct migrate_stats ms;
    char key[32];
    bool all = true;
    for (unsigned int i = 0; i < 4096; i++) {
        snprintf(key, sizeof(key), "k%u", i);
        all = queue_key(1 + i, key) && all;
    }
    ok(all, "full: 4096 entries fit");
    ok(!queue_key(5000, "extra") && !queue_key(5001, "extra2"),
       "full: the next ones are dropped");
    migrate_get_stats(&ms);
    ok(ms.promotions_queued == 4096 && ms.promotions_dropped == 2,
       "full: 4096 queued, 2 dropped");
    ok(migrate_tick() == 4096 && fake.npromoted == 4096
       && fake.promoted_hv[4095] == 4096,
       "full: one tick drains the ring");
    ok(queue_key(5000, "extra"), "full: room again after the drain");
    ok(migrate_tick() == 1 && fake.promoted_hv[4096] == 5000,
       "full: the ring wraps");
}

static void test_queue_dedup(void)
{
    setup_round(0, 0);
    struct migrate_stats ms;
    ok(queue_key(42, "hot") && queue_key(42, "hot") && queue_key(42, "hot"),
       "dedup: repeats of a pending key are accepted");
    migrate_get_stats(&ms);
    ok(ms.promotions_queued == 1, "dedup: but queued once");
    ok(migrate_tick() == 1 && fake.npromoted == 1,
       "dedup: promoted once");
    ok(queue_key(42, "hot") && migrate_tick() == 1,
       "dedup: queued again once drained");
    queue_key(0, "zero");
    queue_key(0, "zero");
    ok(migrate_tick() == 2, "dedup: hv 0 is never de-duplicated");
    queue_key(5, "a");
    queue_key(5 + 1024, "b");
    queue_key(5, "a");
    ok(migrate_tick() == 3, "dedup: a slot collision only costs a repeat");

    /* no engine: the queue keeps its entries */
    migrate_set_engine(NULL);
    queue_key(77, "kept");
    ok(migrate_tick() == 0, "no engine: nothing drained");
    migrate_set_engine(&fake_engine);
    ok(migrate_tick() == 1 && fake.promoted_hv[fake.npromoted - 1] == 77,
       "no engine: drained once an engine is set");
}

/* ---- concurrency: producers, workers and the tier thread ---- */

#define PRODUCERS 4
#define PER_PRODUCER 10000

static struct {
    _Atomic bool stop;
    int64_t last_index[PRODUCERS];
    uint8_t seen[PRODUCERS][PER_PRODUCER];
    uint64_t promoted;
    uint64_t bad;
    _Atomic uint64_t refused;
} conc;

static bool conc_promote(uint64_t hv, const char *key, size_t nkey)
{
    uint64_t p = (hv >> 32) - 1;
    uint64_t i = (hv & 0xffffffffu) - 1;
    char expect[32];
    int len = snprintf(expect, sizeof(expect), "p%u-k%u", (unsigned)p,
                       (unsigned)i);
    if (p >= PRODUCERS || i >= PER_PRODUCER || (size_t)len != nkey
            || memcmp(expect, key, nkey) != 0 || conc.seen[p][i]
            || (int64_t)i <= conc.last_index[p]) {
        conc.bad++;
        return false;
    }
    conc.seen[p][i] = 1;
    conc.last_index[p] = (int64_t)i;
    conc.promoted++;
    /* as the engine does after a promotion */
    migrate_count_promotion(1, 2);
    return true;
}

static const struct migrate_engine conc_engine = {
    .promote = conc_promote,
    .free_d_chunks = fake_free_d_chunks,
    .decay_walk = fake_decay_walk,
};

static void *producer(void *arg)
{
    unsigned int p = (unsigned int)(uintptr_t)arg;
    struct storage_worker *me = &workers[p % NTHREADS];
    char key[32];
    for (unsigned int i = 0; i < PER_PRODUCER; i++) {
        int len = snprintf(key, sizeof(key), "p%u-k%u", p, i);
        uint64_t hv = ((uint64_t)(p + 1) << 32) | (i + 1);
        if (!migrate_queue_promotion(hv, key, (size_t)len)) {
            atomic_fetch_add(&conc.refused, 1);
        }
        /* only thread p % NTHREADS writes its counters: p < NTHREADS */
        if (p < NTHREADS) {
            migrate_count_request(me, 1 + i % 4, i % 3 == 0);
            STAT_INCR(me->stats.tier_requests);
        }
        if (migrate_threshold(1 + i % 4) == 0) {
            atomic_fetch_add(&conc.refused, 1000000);
        }
        (void)migrate_epoch();
        if (i % 100 == 0) {
            /* a worker's synchronous promotion */
            migrate_count_promotion(2, 3);
        }
        if (i % 64 == 63) {
            /* let the tier thread drain while producers still run */
            sched_yield();
        }
    }
    return NULL;
}

static void *tier_thread(void *arg)
{
    while (!atomic_load(&conc.stop)) {
        migrate_tick();
    }
    return NULL;
}

static void *stats_reader(void *arg)
{
    struct migrate_stats ms;
    struct migrate_class_stats cs;
    while (!atomic_load(&conc.stop)) {
        migrate_get_stats(&ms);
        migrate_get_class_stats(1, &cs);
    }
    return NULL;
}

static void test_concurrent_producers(void)
{
    setup_round(1000, 500);
    memset(&conc, 0, sizeof(conc));
    for (int p = 0; p < PRODUCERS; p++) {
        conc.last_index[p] = -1;
    }
    migrate_set_engine(&conc_engine);

    pthread_t prod[PRODUCERS], tier, reader;
    pthread_create(&tier, NULL, tier_thread, NULL);
    pthread_create(&reader, NULL, stats_reader, NULL);
    for (int p = 0; p < PRODUCERS; p++) {
        pthread_create(&prod[p], NULL, producer, (void *)(uintptr_t)p);
    }
    for (int p = 0; p < PRODUCERS; p++) {
        pthread_join(prod[p], NULL);
    }
    atomic_store(&conc.stop, true);
    pthread_join(tier, NULL);
    pthread_join(reader, NULL);
    while (migrate_tick() > 0) {
    }

    struct migrate_stats ms;
    migrate_get_stats(&ms);
    uint64_t total = (uint64_t)PRODUCERS * PER_PRODUCER;
    diag("concurrent: %llu queued, %llu dropped, %llu promoted",
         (unsigned long long)ms.promotions_queued,
         (unsigned long long)ms.promotions_dropped,
         (unsigned long long)conc.promoted);
    ok(conc.bad == 0, "concurrent: every entry whole, once, in each "
       "producer's order");
    ok(ms.promotions_queued + ms.promotions_dropped == total,
       "concurrent: queued + dropped = %llu", (unsigned long long)total);
    ok(conc.promoted == ms.promotions_queued,
       "concurrent: everything queued was promoted");
    ok(atomic_load(&conc.refused) == ms.promotions_dropped,
       "concurrent: producers saw exactly the counted drops");
    struct migrate_class_stats sync_cls;
    migrate_get_class_stats(2, &sync_cls);
    uint64_t sync = (uint64_t)PRODUCERS * (PER_PRODUCER / 100);
    ok(ms.promotions == conc.promoted + sync && sync_cls.promotions == sync,
       "concurrent: promotions counted from the callback and the workers");
    ok(ms.decay_epochs == (uint64_t)NTHREADS * PER_PRODUCER / 1000
       && fake.nwalks == ms.decay_epochs,
       "concurrent: one epoch per 1000 requests, each walked");
}

int main(void)
{
    unit_settings_defaults();
    for (unsigned int i = 0; i < NTHREADS; i++) {
        storage_worker_register(&workers[i]);
    }
    settings.num_threads = NTHREADS;

    test_decay_values();
    test_decay_against_simulation();
    test_decay_lazy_matches_eager_history();
    test_bump();
    test_benefit();
    test_plenty_of_free_chunks();
    test_first_period();
    test_hill_climb();
    test_dead_band();
    test_clamps();
    test_threshold_max_from_queues();
    test_epochs();
    test_periods();
    test_queue_fifo();
    test_queue_full();
    test_queue_dedup();
    test_concurrent_producers();

    return done_testing();
}
