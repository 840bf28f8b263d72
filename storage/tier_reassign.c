/*
 * tier_reassign.c: benefit-aware DRAM page reassignment, the engine side
 * (HMCached's; doc/tiering.md, "Reassignment", and "Hotness and migration"
 * for the counters it weighs).  reassign_dp.c decides; this module feeds
 * it and carries its decisions out.
 *
 * Owns:
 *   - which histogram slot each thread writes (tier_reassign_slot, one
 *     thread-local word) and whether anybody notes (tier_reassign_noting);
 *   - the reassignment period, in storage requests (tier_requests_total(),
 *     storage_worker.c: the clock of every other tier period), measured by
 *     the tier thread: settings.tier.reassign_period, or with "auto" (the
 *     default) sized from the D-zone and shortened while pages move;
 *   - the plan of the last period (at most settings.tier.reassign_rate
 *     moves, or with "auto" half of those to the best split) and its
 *     hand-over, one move at a time, to slabs.c's page mover
 *     (slabs_reassign, the thread behind `slabs reassign`);
 *   - the figures `stats tier` and `stats tier classes` print.
 *
 * Policies (settings.tier.reassign):
 *   - dp, greedy: reassign_period() on the counter histograms, each
 *     class's curve scaled to its recent accesses (tier_reassign_weight=
 *     recent, sample_recent_accesses below) or not (counters): the split
 *     of the D pages maximising Equation 3, reached by rate-limited single
 *     page moves, held back unless the optimum beats the current split by
 *     2% (reassign_dp.c's hysteresis);
 *   - psa: psa_plan() on each class's D misses (its N-zone hits: requests
 *     the D-zone did not serve) and evictions (items pushed out of D,
 *     demoted or evicted) over the period; at most one move a period;
 *   - none: nothing runs and nothing is noted.
 *
 * Threads and locks:
 *   - tier_reassign_note() runs on the request path with the item lock
 *     held; it takes no lock (reassign_dp.c).  Every thread that touches
 *     items sets its slot once: workers (thread.c, their index), the tier
 *     thread (items.c), the crawler (crawler.c), the page mover (items.c's
 *     page evictor, which only slabs.c's rebalance thread calls).
 *   - tier_reassign_tick() runs on the tier thread only, outside
 *     migrate.c's tick lock; it takes the slabs lock (through slabs.h) and
 *     reassign_dp.c's lock, never an item lock.  `ra` below is the tier
 *     thread's except the atomics, which stats readers load.
 *   - tier_reassign_init()/shutdown() run while no other thread does.
 *
 * Where this deliberately differs from the paper:
 *   - The paper does not give its reassignment period or rate.  Ours is
 *     counted in requests like its decay and threshold periods.  A fixed
 *     count (1,000,000 requests and 4 moves, this module's first defaults)
 *     follows a shift of the size mix at 4 pages per million requests
 *     whatever the cache's size: on a cache of hundreds of pages, millions
 *     of requests of calcification.  "auto" scales both: a period of about
 *     one request per D item (the counters have seen the workload once),
 *     a quarter of that while the split moves, and half the moves to the
 *     best split each period, so the gap closes geometrically; in a steady
 *     workload the plan's 2% hysteresis (reassign_dp.c) plans nothing and
 *     the period returns to its full length.
 *   - The paper weighs a class by its items' access counters alone.
 *     Those decay once a decay period, so after a shift of the size mix a
 *     class nobody asks for any more keeps its pages for millions of
 *     requests.  With tier_reassign_weight=recent (the default) each
 *     class's curve is scaled to the accesses (hits and stores) the class
 *     got a request over the last periods (RECENT_KEEP averaging): the
 *     counters give the shape, the recent accesses the level, and a class
 *     the workload has left is worth nothing within a period or two.
 *   - The benefit's per-access gain follows nvm_emulate when set: the
 *     emulator charges R ns per line whatever the pattern, so the model
 *     becomes gain = L * R for an item of L lines; otherwise reassign_dp.c's
 *     size-aware defaults (X-Mem).
 *   - A period is not evaluated while a page move is still running (its
 *     page still counts for its source), so a slow move cannot make the
 *     next period plan the same move twice.
 */
#include "config.h"
#include "tier_reassign.h"

#include "migrate.h"
#include "slabs.h"
#include "settings.h"
#include "slab_class.h"
#include "stat_counter.h"
#include "stat_line.h"
#include "storage_worker.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* tier_reassign_rate is at most this (settings.c checks). */
#define PLAN_MAX 256

/* The auto period and rate (doc/tiering.md "Reassignment"). */
#define AUTO_PERIOD_MIN 20000
#define AUTO_PERIOD_MAX 1000000
#define AUTO_PERIOD_CHASE 4      /* the period is divided by it while the
                                  * split is still moving */
#define AUTO_RATE_MIN 4
#define RECENT_KEEP 0.5          /* of the averaged accesses a request */

bool tier_reassign_noting;
__thread unsigned tier_reassign_slot = UINT32_MAX;

static const char *const reassign_names[] = {
    [TIER_REASSIGN_DP] = "dp",
    [TIER_REASSIGN_GREEDY] = "greedy",
    [TIER_REASSIGN_PSA] = "psa",
    [TIER_REASSIGN_NONE] = "none",
};

static struct {
    bool active;                 /* the tick runs (an N-zone, not none) */
    struct tier_reassign_engine engine;
    uint64_t period_start;       /* tier_requests when the period began */
    uint64_t period_len;         /* requests in the period under way */
    struct reassign_move plan[PLAN_MAX];
    unsigned int plan_len;
    unsigned int plan_next;      /* next move to hand to the mover */
    uint64_t psa_misses[MAX_NUMBER_OF_SLAB_CLASSES];   /* at period start */
    uint64_t psa_departs[MAX_NUMBER_OF_SLAB_CLASSES];
    uint64_t accesses_base[MAX_NUMBER_OF_SLAB_CLASSES]; /* at period start */
    double recent_accesses[MAX_NUMBER_OF_SLAB_CLASSES]; /* a request */
    uint64_t recent_start;       /* tier_requests at the last sample */
    /* read by stats */
    _Atomic uint64_t periods;
    _Atomic uint64_t moves;            /* accepted by the page mover */
    _Atomic uint64_t moves_refused;    /* the mover said no (NOSPARE...) */
    _Atomic uint64_t period_now;       /* period_len, for stats */
    _Atomic unsigned int last_planned; /* moves of the last period's plan */
    _Atomic unsigned int target[MAX_NUMBER_OF_SLAB_CLASSES];
} ra;

const char *tier_reassign_name(enum tier_reassign r)
{
    return reassign_names[r];
}

bool tier_reassign_parse(const char *val, enum tier_reassign *out)
{
    for (size_t i = 0; val != NULL
            && i < sizeof(reassign_names) / sizeof(reassign_names[0]); i++) {
        if (strcmp(val, reassign_names[i]) == 0) {
            *out = (enum tier_reassign)i;
            return true;
        }
    }
    return false;
}

void tier_reassign_thread_worker(unsigned int index)
{
    tier_reassign_slot = index;
}

void tier_reassign_thread_role(enum tier_reassign_role role)
{
    switch (role) {
    case TIER_REASSIGN_ROLE_TIER:
        tier_reassign_slot = reassign_slot_tier();
        break;
    case TIER_REASSIGN_ROLE_CRAWLER:
        tier_reassign_slot = reassign_slot_crawler();
        break;
    case TIER_REASSIGN_ROLE_MOVER:
        tier_reassign_slot = reassign_slot_mover();
        break;
    }
}

static bool policy_notes(void)
{
    return settings.tier.reassign == TIER_REASSIGN_DP
        || settings.tier.reassign == TIER_REASSIGN_GREEDY;
}

int tier_reassign_init(const struct tier_reassign_engine *engine)
{
    tier_reassign_shutdown();
    memset(&ra, 0, sizeof(ra));
    ra.engine = *engine;
    ra.active = settings.tier.reassign != TIER_REASSIGN_NONE;
    ra.period_len = settings.tier.reassign_period_auto
        ? AUTO_PERIOD_MIN : settings.tier.reassign_period;
    atomic_store_explicit(&ra.period_now, ra.period_len,
                          memory_order_relaxed);
    if (policy_notes()) {
        if (reassign_init((unsigned)settings.num_threads) != 0) {
            ra.active = false;
            return -1;
        }
        tier_reassign_noting = true;
    }
    return 0;
}

void tier_reassign_shutdown(void)
{
    tier_reassign_noting = false;
    reassign_shutdown();
    ra.active = false;
}

/* ---- the tier thread ---- */

/* Hand the next planned move to the page mover, if it is free. */
static void issue_next_move(void)
{
    while (ra.plan_next < ra.plan_len) {
        const struct reassign_move *m = &ra.plan[ra.plan_next];
        if (!settings.slab_reassign) {
            ra.plan_next = ra.plan_len;    /* page moves are disabled */
            return;
        }
        enum reassign_result_type r =
            slabs_reassign((int)m->from_class, (int)m->to_class);
        if (r == REASSIGN_RUNNING) {
            return;                        /* busy: the next tick */
        }
        ra.plan_next++;
        if (r == REASSIGN_OK) {
            atomic_fetch_add_explicit(&ra.moves, 1, memory_order_relaxed);
            return;
        }
        atomic_fetch_add_explicit(&ra.moves_refused, 1,
                                  memory_order_relaxed);
    }
}

/* Classes 0..largest, indexed by id, with their D pages now. */
static unsigned int class_inputs(struct reassign_class_input *in)
{
    unsigned int largest = slabs_largest_clsid();
    if (largest >= REASSIGN_MAX_CLASSES) {
        largest = REASSIGN_MAX_CLASSES - 1;
    }
    memset(in, 0, sizeof(*in) * (largest + 1));
    for (unsigned int id = POWER_SMALLEST; id <= largest; id++) {
        in[id].chunk_size = slabs_chunk_size(id);
        in[id].chunks_per_page = slabs_chunks_per_page(id);
        in[id].d_pages = slabs_class_pages(id, SLAB_ZONE_DRAM);
        /* a class keeps its last page, as `slabs reassign` requires */
        in[id].min_pages = in[id].d_pages > 0 ? 1 : 0;
    }
    return largest + 1;
}

static void cost_model(struct reassign_cost_model *cm)
{
    reassign_cost_model_default(cm);
    uint32_t r = settings.nvm.emulate_read_ns;
    if (r > 0) {
        cm->nvm_rand_ns = cm->dram_rand_ns + r;
        cm->nvm_seq_ns = cm->dram_seq_ns + r;
    }
}

static unsigned int plan_rate(void)
{
    if (settings.tier.reassign_rate_auto) {
        return PLAN_MAX;
    }
    return settings.tier.reassign_rate < PLAN_MAX
        ? settings.tier.reassign_rate : PLAN_MAX;
}

/* The auto rate: of the moves that lead to the best split, half (at
 * least AUTO_RATE_MIN), so that a split far from the best one closes the
 * gap geometrically, period after period, and a near one in one step. */
static unsigned int auto_moves(unsigned int to_best)
{
    unsigned int half = (to_best + 1) / 2;
    unsigned int n = half > AUTO_RATE_MIN ? half : AUTO_RATE_MIN;
    return n < to_best ? n : to_best;
}

/* The auto period: about one request per item the D-zone holds, so that
 * the access counters the plan weighs have seen the workload once, between
 * AUTO_PERIOD_MIN and AUTO_PERIOD_MAX; while the split is moving, a
 * quarter of that, so that a shift of the size mix is followed within a
 * few of the workload's own turnovers rather than a fixed count. */
static uint64_t auto_period(const struct reassign_class_input *in,
                            unsigned int n, bool moving)
{
    uint64_t chunks = 0;
    for (unsigned int id = POWER_SMALLEST; id < n; id++) {
        chunks += (uint64_t)in[id].d_pages * in[id].chunks_per_page;
    }
    uint64_t len = chunks < AUTO_PERIOD_MIN ? AUTO_PERIOD_MIN
                 : chunks > AUTO_PERIOD_MAX ? AUTO_PERIOD_MAX : chunks;
    if (moving) {
        len /= AUTO_PERIOD_CHASE;
    }
    return len;
}

/* A cumulative counter's growth since *base; a counter that went down
 * was reset (`stats reset`) and counts from zero. */
static uint64_t delta_since(uint64_t now, uint64_t *base)
{
    uint64_t d = now >= *base ? now - *base : now;
    *base = now;
    return d;
}

/* Each class's accesses a request over the period just ended (its D and
 * N hits, as migrate.c counts them, and its stores: the counters count
 * both, and a preload is all stores), averaged with the periods before
 * (RECENT_KEEP of the old figure stays), so that a class the workload has
 * left loses its weight within a few periods. */
static void sample_recent_accesses(struct reassign_class_input *in,
                                   unsigned int n)
{
    uint64_t now = tier_requests_total();
    uint64_t requests = delta_since(now, &ra.recent_start);
    bool first = atomic_load_explicit(&ra.periods, memory_order_relaxed) == 0;
    /* the tier thread's; too big a local */
    static struct storage_worker_stats ts;
    storage_workers_stats(&ts);
    for (unsigned int id = POWER_SMALLEST; id < n; id++) {
        struct migrate_class_stats mcs;
        migrate_get_class_stats(id, &mcs);
        uint64_t stores = STAT_GET(ts.slab_stats[id].set_cmds);
        uint64_t accesses = delta_since(mcs.d_requests + mcs.n_requests
                                        + stores, &ra.accesses_base[id]);
        double rate = requests > 0
            ? (double)accesses / (double)requests : 0.0;
        ra.recent_accesses[id] = first ? rate
            : RECENT_KEEP * ra.recent_accesses[id]
              + (1.0 - RECENT_KEEP) * rate;
        in[id].recent_accesses = ra.recent_accesses[id];
    }
}

static void period_optimal(struct reassign_class_input *in, unsigned int n)
{
    struct reassign_params p;
    reassign_params_default(&p);
    cost_model(&p.cost);
    p.plan.max_moves = plan_rate();
    p.use_greedy = settings.tier.reassign == TIER_REASSIGN_GREEDY;
    p.weigh_recent = settings.tier.reassign_weigh_recent;
    sample_recent_accesses(in, n);
    int moves = reassign_period(in, n, &p, ra.plan);
    ra.plan_len = moves > 0 ? (unsigned int)moves : 0;
    if (settings.tier.reassign_rate_auto) {
        ra.plan_len = auto_moves(ra.plan_len);
    }
    for (unsigned int id = 0; id < n; id++) {
        struct reassign_class_stats cs;
        if (moves >= 0 && reassign_class_stats_get(id, &cs)) {
            atomic_store_explicit(&ra.target[id], cs.optimal_pages,
                                  memory_order_relaxed);
        }
    }
}

static void period_psa(const struct reassign_class_input *in,
                       unsigned int n)
{
    uint64_t misses[REASSIGN_MAX_CLASSES] = {0};
    uint64_t departs[REASSIGN_MAX_CLASSES] = {0};
    unsigned int pages[REASSIGN_MAX_CLASSES] = {0};
    for (unsigned int id = POWER_SMALLEST; id < n; id++) {
        struct migrate_class_stats mcs;
        migrate_get_class_stats(id, &mcs);
        misses[id] = delta_since(mcs.n_requests, &ra.psa_misses[id]);
        uint64_t dep = ra.engine.d_departures != NULL
            ? ra.engine.d_departures(id) : 0;
        departs[id] = delta_since(dep, &ra.psa_departs[id]);
        pages[id] = in[id].d_pages;
    }
    ra.plan_len = 0;
    if (plan_rate() > 0 && psa_plan(misses, departs, pages, n, ra.plan)) {
        ra.plan_len = 1;
        pages[ra.plan[0].from_class]--;
        pages[ra.plan[0].to_class]++;
    }
    for (unsigned int id = 0; id < n; id++) {
        atomic_store_explicit(&ra.target[id], pages[id],
                              memory_order_relaxed);
    }
}

static void run_period(void)
{
    struct reassign_class_input in[REASSIGN_MAX_CLASSES];
    unsigned int n = class_inputs(in);
    ra.plan_len = ra.plan_next = 0;
    if (settings.tier.reassign == TIER_REASSIGN_PSA) {
        period_psa(in, n);
    } else {
        period_optimal(in, n);
    }
    if (settings.tier.reassign_period_auto) {
        ra.period_len = auto_period(in, n, ra.plan_len > 0);
    }
    atomic_store_explicit(&ra.period_now, ra.period_len,
                          memory_order_relaxed);
    atomic_store_explicit(&ra.last_planned, ra.plan_len, memory_order_relaxed);
    atomic_fetch_add_explicit(&ra.periods, 1, memory_order_relaxed);
}

void tier_reassign_tick(void)
{
    if (!ra.active) {
        return;
    }
    issue_next_move();
    uint64_t now = tier_requests_total();
    if (now < ra.period_start) {
        ra.period_start = now;      /* `stats reset`: restart the period */
        return;
    }
    if (now - ra.period_start < ra.period_len) {
        return;
    }
    struct slabs_totals sl;
    slabs_get_totals(&sl);
    if (sl.reassign_running) {
        return;                     /* evaluate once the page has moved */
    }
    ra.period_start = now;
    run_period();
    issue_next_move();
}

/* ---- stats ---- */

void tier_reassign_stats(ADD_STAT add_stats, void *c)
{
    struct reassign_stats rs;
    reassign_stats_get(&rs);
    append_stat("reassign_policy", add_stats, c, "%s",
                tier_reassign_name(settings.tier.reassign));
    append_stat("reassign_periods", add_stats, c, "%llu",
                (unsigned long long)atomic_load(&ra.periods));
    append_stat("reassign_moves", add_stats, c, "%llu",
                (unsigned long long)atomic_load(&ra.moves));
    append_stat("reassign_moves_refused", add_stats, c, "%llu",
                (unsigned long long)atomic_load(&ra.moves_refused));
    append_stat("reassign_period_requests", add_stats, c, "%llu",
                (unsigned long long)atomic_load(&ra.period_now));
    append_stat("reassign_last_planned", add_stats, c, "%u",
                atomic_load(&ra.last_planned));
    append_stat("reassign_hysteresis_skips", add_stats, c, "%llu",
                (unsigned long long)rs.hysteresis_skips);
    append_stat("reassign_benefit_current", add_stats, c, "%.0f",
                rs.benefit_current);
    append_stat("reassign_benefit_optimal", add_stats, c, "%.0f",
                rs.benefit_optimal);
    append_stat("reassign_notes_rejected", add_stats, c, "%llu",
                (unsigned long long)rs.notes_rejected);
}

void tier_reassign_class_stats(ADD_STAT add_stats, void *c,
                               unsigned int clsid)
{
    char key[64];
    struct reassign_class_stats cs;
    if (clsid >= MAX_NUMBER_OF_SLAB_CLASSES
            || !reassign_class_stats_get(clsid, &cs)) {
        memset(&cs, 0, sizeof(cs));
    }
    unsigned int target = clsid < MAX_NUMBER_OF_SLAB_CLASSES
        ? atomic_load_explicit(&ra.target[clsid], memory_order_relaxed) : 0;
    snprintf(key, sizeof(key), "%u:d_pages_target", clsid);
    append_stat(key, add_stats, c, "%u", target);
    snprintf(key, sizeof(key), "%u:benefit_optimal", clsid);
    append_stat(key, add_stats, c, "%.0f", cs.benefit_optimal);
}
