/*
 * migrate.c: hotness bookkeeping for the two zones (HMCached, Jin et al.,
 * IEEE TPDS 2020, section 3.3 "Hotness-Aware Object Migration"; doc/tiering.md
 * "Hotness and migration").
 *
 * Owns:
 *   - the access-counter arithmetic: saturating bump and the lazy form of
 *     the paper's per-epoch decay (the items and their counters belong to
 *     the storage engine, which calls these under its item lock), inline
 *     in migrate.h with the request count, so that a hit does not enter
 *     this file;
 *   - the decay epoch, advanced by migrate_tick() every decay period of
 *     storage requests (storage_worker.c sums the workers'
 *     stats.tier_requests, which the engine counts: every storage
 *     request, hit or miss): settings.tier.decay_period, or with "auto"
 *     a length sized from the D-zone (auto_decay_period);
 *   - per slab class: the migration threshold (Algorithm 1, hill climbing
 *     on Equation 1's benefit), the period accounting that feeds it, and
 *     promotion counters;
 *   - the bounded promotion queue (tier_promote=async) and its drain into
 *     the engine's promote callback.
 *
 * Concurrency:
 *   - tick_lock serialises migrate_tick(), migrate_set_engine() and
 *     migrate_init(); it guards everything marked "tier thread" below
 *     (epoch base, each class's hill-climbing state and period start, the
 *     queue's consumer position).  The engine's callbacks run under it, so
 *     they must not call migrate_tick() or migrate_set_engine(); they may
 *     call every other function here.  It is the outermost lock: the
 *     callbacks take item and slabs locks inside it, and nobody holding
 *     those may call migrate_tick().
 *   - Workers never take a lock here.  migrate_threshold() and
 *     migrate_epoch() (migrate.h) are atomic loads; migrate_count_request()
 *     (migrate.h) bumps the worker's own per-thread counters with
 *     STAT_INCR; promotions are counted with atomic adds (workers promote
 *     in tier_promote=sync).
 *   - The promotion queue is a bounded multi-producer ring with one
 *     sequence number per cell (D. Vyukov's bounded queue): a producer
 *     claims a cell with a CAS on the enqueue position, fills it and
 *     publishes it with a release store of the cell's sequence; the single
 *     consumer (under tick_lock) reads a cell after an acquire load of its
 *     sequence and hands it back with a release store.  No lock on the
 *     producers' path; a full ring drops the request and counts it.
 *   - migrate_init() must not run concurrently with anything else here
 *     (start-up, or tests between phases).
 *
 * Where this deliberately differs from the paper (doc/tiering.md):
 *   - Decay is lazy: an item's counter is decayed on access from its epoch
 *     stamp (migrate_decay), plus a walker (engine->decay_walk) per epoch so
 *     stamps never wrap; the result equals the paper's per-epoch pass.
 *   - Algorithm 1's hill climb has a dead band: a benefit change smaller
 *     than THRESHOLD_DEAD_BAND keeps the threshold where it is, so noise
 *     between equal periods does not make it wander.
 *   - The first period (no previous benefit) decrements, which is what
 *     Algorithm 1 does when no adjustment has been made before.
 *   - C_mig is counted in N-zone lines read by promotions, not in
 *     promotions: a promotion of a large item costs the N-zone more.
 *   - Thresholds are clamped to [1, min(2^Q, 255)]: the engine's N-zone
 *     counters are 8 bits wide, so a larger threshold could never be
 *     exceeded.
 */
#include "config.h"
#include "migrate.h"
#include "item.h"
#include "settings.h"
#include "slab_class.h"
#include "slabs.h"
#include "stat_counter.h"
#include "stat_line.h"
#include "storage_worker.h"

#include <pthread.h>
#include <string.h>

/* ---- the decay epoch ----
 * The counter arithmetic and the request count are migrate.h's inline
 * functions: every hit runs them. */

_Atomic uint32_t migrate_epoch_now;

/*
 * tier_decay_period=auto (the default under tier_policy=hotter): an epoch
 * of DECAY_AUTO_PER_D_CHUNK requests for each item the D-zone can hold
 * (its pages' chunks as they are now: the tick sizes it again, one slabs
 * lock, so that it follows the D-zone as it fills and as pages move).
 *
 * Why the D-zone's size: what the counters must rank is the edge of the
 * hot set, the items that compete for D's last chunks.  Under a Zipf-like
 * popularity of skew near 1 over n keys, the C-th most popular key gets
 * about 1 / (C * H_n) of the requests, H_n = ln n + 0.58, 12 to 14 for
 * 10^5 to 10^6 keys.  With C the items D can hold, an epoch of 32 * C
 * requests gives that key two or three accesses before its counter is
 * halved; a fixed epoch much shorter than that leaves the edge with
 * counters of 0 and 1, which rank it by chance, and a fixed epoch much
 * longer keeps a hot set that has moved on ranked high for longer.  Never
 * shorter than the fixed default, which settings.tier.decay_period keeps
 * under "auto" (a small D-zone keeps that epoch), never longer than
 * DECAY_AUTO_MAX.  doc/tiering.md "Hotness and migration" gives the
 * measurements.
 */
#define DECAY_AUTO_PER_D_CHUNK 32
#define DECAY_AUTO_MAX 1000000000

static uint64_t auto_decay_period(void)
{
    uint64_t least = settings.tier.decay_period;
    uint64_t len = DECAY_AUTO_PER_D_CHUNK * slabs_zone_chunks(SLAB_ZONE_DRAM);
    return len < least ? least : len > DECAY_AUTO_MAX ? DECAY_AUTO_MAX : len;
}

/* ---- Algorithm 1 ---- */

/* Benefit changes smaller than this count as "no change" (keep the
 * threshold): a benefit is a ratio of request counts, and over 10^5
 * requests 0.001 is 100 requests, within the noise of a steady workload. */
#define THRESHOLD_DEAD_BAND 0.001

/* The N-zone counters are 8 bits wide (hash_desc location word). */
#define THRESHOLD_COUNTER_MAX 255

static uint32_t clamp_threshold(int64_t value, uint32_t max)
{
    if (value < 1) {
        return 1;
    }
    if (value > (int64_t)max) {
        return max;
    }
    return (uint32_t)value;
}

void threshold_init(struct threshold_state *st, uint32_t initial,
                    uint32_t max)
{
    st->max = max < 1 ? 1 : max;
    st->threshold = clamp_threshold(initial, st->max);
    st->last_step = 0;
    st->last_benefit = 0.0;
    st->have_last = false;
}

double threshold_benefit(const struct period_counts *pc)
{
    uint64_t served = pc->d_requests + pc->n_requests;
    if (served == 0) {
        return 0.0;
    }
    return ((double)pc->d_requests - (double)pc->migration_cost)
        / (double)served;
}

/* Line 1: C_N-to-D < DRAM_free / 2, without losing the half of an odd
 * free count. */
static bool dram_has_room(const struct period_counts *pc)
{
    if (pc->promotions > UINT64_MAX / 2) {
        return false;
    }
    return pc->promotions * 2 < pc->free_d_chunks;
}

/* Lines 4-16.  last_step is the direction of the last adjustment made
 * (a dead-band period makes none), so a threshold held at a clamp still
 * remembers which way it was pushed and a falling benefit turns it back. */
static int hill_climb_step(const struct threshold_state *st, double benefit)
{
    double delta = benefit - st->last_benefit;
    if (delta < THRESHOLD_DEAD_BAND && delta > -THRESHOLD_DEAD_BAND) {
        return 0;
    }
    if (delta > 0) {
        /* the last adjustment helped: repeat it */
        return st->last_step == 1 ? 1 : -1;
    }
    /* it hurt: undo its direction */
    return st->last_step == -1 ? 1 : -1;
}

uint32_t threshold_step(struct threshold_state *st,
                        const struct period_counts *pc)
{
    double benefit = threshold_benefit(pc);
    int step;
    if (dram_has_room(pc)) {
        step = -1;
    } else if (!st->have_last || st->last_step == 0) {
        /* No previous period to compare with: with no earlier adjustment
         * both of Algorithm 1's branches decrement. */
        step = -1;
    } else {
        step = hill_climb_step(st, benefit);
    }
    if (step != 0) {
        st->threshold = clamp_threshold((int64_t)st->threshold + step,
                                        st->max);
        st->last_step = step;
    }
    st->last_benefit = benefit;
    st->have_last = true;
    return st->threshold;
}

/* ---- per-class state ---- */

struct class_state {
    /* read on the request path */
    _Atomic uint32_t threshold;
    /* since start, added to by whoever promotes */
    _Atomic uint64_t promotions;
    _Atomic uint64_t migration_lines;
    /* the last period's benefit, as the bits of a double, for stats */
    _Atomic uint64_t last_benefit_bits;
    /* tier thread (tick_lock) */
    struct threshold_state hill;
    uint64_t period_start_d;
    uint64_t period_start_n;
    uint64_t period_start_promotions;
    uint64_t period_start_lines;
};

/* ---- promotion queue ---- */

#define PROMO_RING_SIZE 4096u               /* a power of two */
#define PROMO_RING_MASK (PROMO_RING_SIZE - 1)
/* Keys with a promotion pending, by hv, so a hot key hit again before the
 * tier thread runs does not fill the ring with copies of itself. */
#define PROMO_PENDING_SLOTS 1024u
#define PROMO_PENDING_MASK (PROMO_PENDING_SLOTS - 1)

struct promo_cell {
    _Atomic uint64_t seq;
    uint64_t hv;
    uint8_t nkey;
    char key[KEY_MAX_LENGTH];
};

static struct {
    pthread_mutex_t tick_lock;
    struct migrate_engine engine;           /* tier thread */
    bool have_engine;                       /* tier thread */
    unsigned int nclasses;                  /* set by migrate_init */
    uint32_t threshold_max;                 /* set by migrate_init */

    uint64_t epoch_start_requests;          /* tier thread */
    _Atomic uint64_t decay_period;          /* tier thread writes */

    struct class_state cls[MAX_NUMBER_OF_SLAB_CLASSES];

    struct promo_cell ring[PROMO_RING_SIZE];
    _Atomic uint64_t enqueue_pos;
    uint64_t dequeue_pos;                   /* tier thread */
    _Atomic uint64_t pending_hv[PROMO_PENDING_SLOTS];

    _Atomic uint64_t decay_epochs;
    _Atomic uint64_t promotions;
    _Atomic uint64_t promotions_queued;
    _Atomic uint64_t promotions_dropped;
    _Atomic uint64_t threshold_adjustments;
} mig = {
    .tick_lock = PTHREAD_MUTEX_INITIALIZER,
};

static bool valid_class(unsigned int clsid)
{
    return clsid < MAX_NUMBER_OF_SLAB_CLASSES;
}

static uint32_t threshold_max_for_queues(uint32_t queues)
{
    /* 2^8 already exceeds what the 8-bit N counters can hold */
    if (queues >= 8) {
        return THRESHOLD_COUNTER_MAX;
    }
    return (uint32_t)1 << queues;
}

static void store_benefit(struct class_state *cs, double benefit)
{
    uint64_t bits;
    memcpy(&bits, &benefit, sizeof(bits));
    atomic_store_explicit(&cs->last_benefit_bits, bits,
                          memory_order_relaxed);
}

static double load_benefit(const struct class_state *cs)
{
    uint64_t bits = atomic_load_explicit(&cs->last_benefit_bits,
                                         memory_order_relaxed);
    double benefit;
    memcpy(&benefit, &bits, sizeof(benefit));
    return benefit;
}

static void class_init(unsigned int clsid, uint32_t initial, uint32_t max)
{
    struct class_state *cs = &mig.cls[clsid];
    threshold_init(&cs->hill, initial, max);
    atomic_store(&cs->threshold, cs->hill.threshold);
    atomic_store(&cs->promotions, 0);
    atomic_store(&cs->migration_lines, 0);
    store_benefit(cs, 0.0);
    storage_workers_class_hits(clsid, &cs->period_start_d,
                               &cs->period_start_n);
    cs->period_start_promotions = 0;
    cs->period_start_lines = 0;
}

static void queue_init(void)
{
    for (uint64_t i = 0; i < PROMO_RING_SIZE; i++) {
        atomic_store(&mig.ring[i].seq, i);
    }
    for (uint64_t i = 0; i < PROMO_PENDING_SLOTS; i++) {
        atomic_store(&mig.pending_hv[i], 0);
    }
    atomic_store(&mig.enqueue_pos, 0);
    mig.dequeue_pos = 0;
}

/* nclasses: the largest class id in use (classes 1..nclasses); every class
 * id below MAX_NUMBER_OF_SLAB_CLASSES gets a threshold, but only these are
 * scanned for the end of a period. */
void migrate_init(unsigned int nclasses)
{
    pthread_mutex_lock(&mig.tick_lock);
    if (nclasses >= MAX_NUMBER_OF_SLAB_CLASSES) {
        nclasses = MAX_NUMBER_OF_SLAB_CLASSES - 1;
    }
    mig.nclasses = nclasses;
    mig.threshold_max = threshold_max_for_queues(settings.tier.mq_queues);
    for (unsigned int c = 0; c < MAX_NUMBER_OF_SLAB_CLASSES; c++) {
        class_init(c, settings.tier.threshold_init, mig.threshold_max);
    }
    atomic_store(&migrate_epoch_now, 0);
    mig.epoch_start_requests = tier_requests_total();
    atomic_store(&mig.decay_period, settings.tier.decay_period);
    queue_init();
    atomic_store(&mig.decay_epochs, 0);
    atomic_store(&mig.promotions, 0);
    atomic_store(&mig.promotions_queued, 0);
    atomic_store(&mig.promotions_dropped, 0);
    atomic_store(&mig.threshold_adjustments, 0);
    pthread_mutex_unlock(&mig.tick_lock);
}

uint32_t migrate_threshold(unsigned int clsid)
{
    if (!valid_class(clsid)) {
        /* unknown class: the strictest threshold, never promote on it */
        return THRESHOLD_COUNTER_MAX;
    }
    return atomic_load_explicit(&mig.cls[clsid].threshold,
                                memory_order_relaxed);
}

/* The engine calls this once per successful promotion, whether a worker
 * (sync) or the tier thread (async, from engine->promote) did it. */
void migrate_count_promotion(unsigned int clsid, uint64_t nvm_lines)
{
    if (!valid_class(clsid)) {
        return;
    }
    struct class_state *cs = &mig.cls[clsid];
    atomic_fetch_add_explicit(&cs->promotions, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&cs->migration_lines, nvm_lines,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&mig.promotions, 1, memory_order_relaxed);
}

/* ---- promotion queue ---- */

static _Atomic uint64_t *pending_slot(uint64_t hv)
{
    return &mig.pending_hv[hv & PROMO_PENDING_MASK];
}

/* hv 0 is the empty slot's value, so such keys are never de-duplicated. */
static bool promotion_pending(uint64_t hv)
{
    return hv != 0 && atomic_load_explicit(pending_slot(hv),
                                           memory_order_relaxed) == hv;
}

static void pending_clear(uint64_t hv)
{
    uint64_t expected = hv;
    if (hv != 0) {
        atomic_compare_exchange_strong_explicit(pending_slot(hv), &expected,
            0, memory_order_relaxed, memory_order_relaxed);
    }
}

/* Claims the next free cell; NULL when the ring is full. */
static struct promo_cell *ring_claim(uint64_t *pos_out)
{
    uint64_t pos = atomic_load_explicit(&mig.enqueue_pos,
                                        memory_order_relaxed);
    for (;;) {
        struct promo_cell *cell = &mig.ring[pos & PROMO_RING_MASK];
        uint64_t seq = atomic_load_explicit(&cell->seq,
                                            memory_order_acquire);
        int64_t lag = (int64_t)(seq - pos);
        if (lag == 0) {
            if (atomic_compare_exchange_weak_explicit(&mig.enqueue_pos,
                    &pos, pos + 1, memory_order_relaxed,
                    memory_order_relaxed)) {
                *pos_out = pos;
                return cell;
            }
            /* lost the race: pos now holds the winner's next position */
        } else if (lag < 0) {
            /* the cell still holds an entry from the previous lap */
            return NULL;
        } else {
            pos = atomic_load_explicit(&mig.enqueue_pos,
                                       memory_order_relaxed);
        }
    }
}

/*
 * Pending marks: set before the entry is queued and cleared by the drain
 * when it takes the entry, so a set mark always has an entry behind it
 * (or is being cleared by the producer that failed to queue one).  Two
 * keys sharing a slot only cost a duplicate entry; a key skipped because
 * another key with the same hv is pending is re-queued on its next hit.
 */
bool migrate_queue_promotion(uint64_t hv, const char *key, size_t nkey)
{
    if (key == NULL || nkey == 0 || nkey > KEY_MAX_LENGTH) {
        return false;
    }
    if (promotion_pending(hv)) {
        return true;
    }
    if (hv != 0) {
        atomic_store_explicit(pending_slot(hv), hv, memory_order_relaxed);
    }
    uint64_t pos;
    struct promo_cell *cell = ring_claim(&pos);
    if (cell == NULL) {
        pending_clear(hv);
        atomic_fetch_add_explicit(&mig.promotions_dropped, 1,
                                  memory_order_relaxed);
        return false;
    }
    cell->hv = hv;
    cell->nkey = (uint8_t)nkey;
    memcpy(cell->key, key, nkey);
    atomic_store_explicit(&cell->seq, pos + 1, memory_order_release);
    atomic_fetch_add_explicit(&mig.promotions_queued, 1,
                              memory_order_relaxed);
    return true;
}

/* Takes the oldest published entry (tier thread); false when the ring is
 * empty or its oldest cell is still being filled. */
static bool ring_take(uint64_t *hv, char *key, size_t *nkey)
{
    uint64_t pos = mig.dequeue_pos;
    struct promo_cell *cell = &mig.ring[pos & PROMO_RING_MASK];
    uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
    if (seq != pos + 1) {
        return false;
    }
    *hv = cell->hv;
    *nkey = cell->nkey;
    memcpy(key, cell->key, cell->nkey);
    atomic_store_explicit(&cell->seq, pos + PROMO_RING_SIZE,
                          memory_order_release);
    mig.dequeue_pos = pos + 1;
    return true;
}

/* At most one ring's worth per tick, so producers cannot keep the tier
 * thread here forever. */
static unsigned int drain_queue(void)
{
    unsigned int promoted = 0;
    char key[KEY_MAX_LENGTH];
    uint64_t hv;
    size_t nkey;
    if (!mig.have_engine || mig.engine.promote == NULL) {
        return 0;
    }
    for (unsigned int i = 0; i < PROMO_RING_SIZE; i++) {
        if (!ring_take(&hv, key, &nkey)) {
            break;
        }
        pending_clear(hv);
        if (mig.engine.promote(hv, key, nkey)) {
            promoted++;
        }
    }
    return promoted;
}

/* ---- the tier thread's round ---- */

void migrate_set_engine(const struct migrate_engine *engine)
{
    pthread_mutex_lock(&mig.tick_lock);
    if (engine == NULL) {
        memset(&mig.engine, 0, sizeof(mig.engine));
        mig.have_engine = false;
    } else {
        mig.engine = *engine;
        mig.have_engine = true;
    }
    pthread_mutex_unlock(&mig.tick_lock);
}

/* One epoch per decay period (tier_decay_period); when the tier thread fell
 * behind, each missed epoch is still walked, so an item stamp is never
 * more than one epoch behind the walker's view.  The promotion queue is
 * drained after every walk: a key queued while the thread was catching up
 * is judged at the epoch its hits were counted in, not after a burst of
 * decays it never lived through.  Returns the promotions made. */
static unsigned int advance_epochs(void)
{
    unsigned int promoted = 0;
    uint64_t period = settings.tier.decay_period_auto
        ? auto_decay_period() : settings.tier.decay_period;
    atomic_store_explicit(&mig.decay_period, period, memory_order_relaxed);
    if (period == 0) {
        return 0;
    }
    uint64_t requests = tier_requests_total();
    if (requests < mig.epoch_start_requests) {
        /* `stats reset` zeroed the per-thread counters: the epoch restarts
         * at that zero (every request since counts) instead of wrapping */
        mig.epoch_start_requests = 0;
    }
    while (requests - mig.epoch_start_requests >= period) {
        mig.epoch_start_requests += period;
        uint32_t epoch = atomic_load_explicit(&migrate_epoch_now,
                                              memory_order_relaxed) + 1;
        atomic_store_explicit(&migrate_epoch_now, epoch, memory_order_release);
        atomic_fetch_add_explicit(&mig.decay_epochs, 1,
                                  memory_order_relaxed);
        if (mig.have_engine && mig.engine.decay_walk != NULL) {
            mig.engine.decay_walk(epoch);
        }
        promoted += drain_queue();
    }
    return promoted;
}

static uint64_t free_d_chunks(unsigned int clsid)
{
    if (!mig.have_engine || mig.engine.free_d_chunks == NULL) {
        return 0;
    }
    return mig.engine.free_d_chunks(clsid);
}

/* Ends the class's period when it has served tier_adjust_period requests
 * since the last adjustment; a tick that comes late makes that period
 * longer rather than running Algorithm 1 twice on one set of counts. */
static void adjust_class(unsigned int clsid)
{
    struct class_state *cs = &mig.cls[clsid];
    uint64_t d, n;
    storage_workers_class_hits(clsid, &d, &n);
    if (d < cs->period_start_d || n < cs->period_start_n) {
        /* counters were reset by `stats reset`: the period restarts at
         * that zero */
        cs->period_start_d = 0;
        cs->period_start_n = 0;
    }
    uint64_t served = (d - cs->period_start_d) + (n - cs->period_start_n);
    if (served < settings.tier.adjust_period) {
        return;
    }
    uint64_t promotions = atomic_load_explicit(&cs->promotions,
                                               memory_order_relaxed);
    uint64_t lines = atomic_load_explicit(&cs->migration_lines,
                                          memory_order_relaxed);
    struct period_counts pc = {
        .d_requests = d - cs->period_start_d,
        .n_requests = n - cs->period_start_n,
        .migration_cost = lines - cs->period_start_lines,
        .promotions = promotions - cs->period_start_promotions,
        .free_d_chunks = free_d_chunks(clsid),
    };
    uint32_t threshold = threshold_step(&cs->hill, &pc);
    atomic_store_explicit(&cs->threshold, threshold, memory_order_relaxed);
    store_benefit(cs, cs->hill.last_benefit);
    cs->period_start_d = d;
    cs->period_start_n = n;
    cs->period_start_promotions = promotions;
    cs->period_start_lines = lines;
    atomic_fetch_add_explicit(&mig.threshold_adjustments, 1,
                              memory_order_relaxed);
}

static void adjust_thresholds(void)
{
    if (settings.tier.adjust_period == 0) {
        return;
    }
    for (unsigned int c = POWER_SMALLEST; c <= mig.nclasses; c++) {
        adjust_class(c);
    }
}

unsigned int migrate_tick(void)
{
    pthread_mutex_lock(&mig.tick_lock);
    unsigned int promoted = drain_queue();
    promoted += advance_epochs();
    adjust_thresholds();
    pthread_mutex_unlock(&mig.tick_lock);
    return promoted;
}

/* ---- stats ---- */

void migrate_get_stats(struct migrate_stats *out)
{
    out->decay_epochs = atomic_load(&mig.decay_epochs);
    out->decay_period = atomic_load(&mig.decay_period);
    out->promotions = atomic_load(&mig.promotions);
    out->promotions_queued = atomic_load(&mig.promotions_queued);
    out->promotions_dropped = atomic_load(&mig.promotions_dropped);
    out->threshold_adjustments = atomic_load(&mig.threshold_adjustments);
}

void migrate_get_class_stats(unsigned int clsid,
                             struct migrate_class_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!valid_class(clsid)) {
        return;
    }
    struct class_state *cs = &mig.cls[clsid];
    out->threshold = migrate_threshold(clsid);
    storage_workers_class_hits(clsid, &out->d_requests,
                               &out->n_requests);
    out->promotions = atomic_load_explicit(&cs->promotions,
                                           memory_order_relaxed);
    out->last_benefit = load_benefit(cs);
}
