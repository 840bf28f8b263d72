/*
 * test_items_mq.c: multi-queue replacement (items_mq.c): queue level from
 * the access counter, queue order, bounded bumping, re-levelling, victim
 * order (queue 0 tail first, then higher queues), skipping referenced and
 * lock-busy items, cursors; with aging (mq_set_aging): probation's share,
 * the CLOCK over the main queues, the hand that ages idle items down a
 * queue, dead items first, and the demoting set-up without probation and
 * hand; memcached's segments (HOT and COLD in queue 0, WARM above) and
 * the moves between them; the lowest non-empty queue, read without the
 * class lock.
 *
 * Items are malloc'd headers of class 1 holding one reference, standing in
 * for the index's.
 */
#include "config.h"
#include "items_mq.h"
#include "tap.h"
#include "unit_support.h"
#include "clock.h"
#include "hash.h"
#include "item.h"
#include "item_lock.h"
#include "settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLS 1
#define LOCK_POWER 10
#define LOCK_MASK ((1u << LOCK_POWER) - 1)

static item *make_item(const char *key, uint16_t counter)
{
    size_t nkey = strlen(key);
    item *it = calloc(1, sizeof(item) + nkey + 1 + 2);
    if (it == NULL) {
        abort();
    }
    it->nkey = (uint8_t)nkey;
    it->nbytes = 2;
    it->slabs_clsid = CLS;
    it->counter = counter;
    it->time = current_time;
    it->it_flags = ITEM_LINKED;
    atomic_store(&it->refcount, 1);
    memcpy(ITEM_key(it), key, nkey + 1);
    return it;
}

static uint64_t hv_of(const item *it)
{
    return hash_key(ITEM_key(it), it->nkey);
}

/* The MQ calls are made under the item lock, as in items.c. */
static void link_locked(item *it)
{
    item_lock(hv_of(it));
    mq_link(it);
    item_unlock(hv_of(it));
}

static void unlink_locked(item *it)
{
    item_lock(hv_of(it));
    mq_unlink(it);
    item_unlock(hv_of(it));
}

static void bump_locked(item *it)
{
    item_lock(hv_of(it));
    mq_bump(it);
    item_unlock(hv_of(it));
}

/* Take the victim, check it, and put things back as items.c would after
 * deciding not to evict: unlock, unpin. */
static item *victim(mq_accept_fn accept, void *arg)
{
    uint64_t hv;
    item *v = mq_pick_victim(CLS, accept, arg, &hv);
    if (v != NULL) {
        if (atomic_load(&v->refcount) != 2 || hv != hv_of(v)) {
            diag("victim not pinned or wrong hv");
        }
        item_unlock(hv);
        atomic_fetch_sub(&v->refcount, 1);
    }
    return v;
}

struct order {
    item *seen[64];
    unsigned int level[64];
    unsigned int n;
};

static bool record(item *it, unsigned int level, void *arg)
{
    struct order *o = arg;
    if (o->n < 64) {
        o->level[o->n] = level;
        o->seen[o->n++] = it;
    }
    return true;
}

static void test_levels(void)
{
    ok(mq_level_for_counter(0) == 0 && mq_level_for_counter(1) == 0,
       "counters 0 and 1 belong in queue 0");
    ok(mq_level_for_counter(2) == 1 && mq_level_for_counter(3) == 1,
       "[2,4) -> queue 1");
    ok(mq_level_for_counter(4) == 2 && mq_level_for_counter(7) == 2,
       "[4,8) -> queue 2");
    ok(mq_level_for_counter(64) == 6 && mq_level_for_counter(127) == 6,
       "[64,128) -> queue 6");
    ok(mq_level_for_counter(128) == 7 && mq_level_for_counter(65535) == 7,
       "128 and up -> the last queue");
}

/* mq_lowest_level follows the queues as items enter, move and leave. */
static void test_lowest_level(void)
{
    ok(mq_lowest_level(CLS) == MQ_NO_LEVEL, "an empty class has no level");
    item *warm = make_item("warm", 5), *hot = make_item("hotter", 200);
    link_locked(hot);
    ok(mq_lowest_level(CLS) == 7, "one item at counter 200: queue 7");
    link_locked(warm);
    ok(mq_lowest_level(CLS) == 2, "one more at counter 5: queue 2");
    item_lock(hv_of(hot));
    mq_relevel(hot, 1);
    item_unlock(hv_of(hot));
    ok(mq_lowest_level(CLS) == 0, "re-levelled to counter 1: queue 0");
    unlink_locked(hot);
    ok(mq_lowest_level(CLS) == 2, "it left: queue 2 again");
    unlink_locked(warm);
    ok(mq_lowest_level(CLS) == MQ_NO_LEVEL, "the class is empty again");
    free(warm);
    free(hot);
}

static void test_order_and_victims(void)
{
    item *a = make_item("a", 1), *b = make_item("b", 0),
         *c = make_item("c", 1), *h = make_item("hot", 5);
    link_locked(a);
    link_locked(b);
    link_locked(h);
    link_locked(c);
    struct order o = { .n = 0 };
    mq_for_each(CLS, record, &o);
    ok(o.n == 4 && o.seen[0] == c && o.seen[1] == b && o.seen[2] == a
       && o.seen[3] == h && o.level[3] == 2,
       "queue 0 holds c, b, a head to tail; counter 5 sits in queue 2");
    ok(a->mq_level == 0 && h->mq_level == 2 && (h->it_flags & ITEM_QUEUED),
       "items record their queue");

    ok(victim(NULL, NULL) == a, "the victim is the tail of queue 0");

    atomic_fetch_add(&a->refcount, 1);        /* a reply holds a */
    ok(victim(NULL, NULL) == b, "an item with another reference is skipped");
    struct mq_class_stats st;
    mq_get_class_stats(CLS, &st);
    ok(st.lrutail_reflocked == 1, "the skip counts as lrutail_reflocked");
    atomic_fetch_sub(&a->refcount, 1);

    item_lock(hv_of(a));
    item_lock(hv_of(b));
    item *v = victim(NULL, NULL);
    item_unlock(hv_of(b));
    item_unlock(hv_of(a));
    /* c (or, if c shares a stripe with a or b, h) is the first free one. */
    item *want = NULL;
    item *order[] = { c, h };
    for (int i = 0; i < 2 && want == NULL; i++) {
        uint64_t s_ = hv_of(order[i]) & LOCK_MASK;
        if (s_ != (hv_of(a) & LOCK_MASK) && s_ != (hv_of(b) & LOCK_MASK)) {
            want = order[i];
        }
    }
    ok(v == want, "items whose item lock is busy are skipped");
    mq_get_class_stats(CLS, &st);
    ok(st.lock_busy >= 2, "busy locks are counted (%llu)",
       (unsigned long long)st.lock_busy);

    unlink_locked(a);
    unlink_locked(b);
    unlink_locked(c);
    ok(victim(NULL, NULL) == h, "with queue 0 empty, queue 2's tail is next");
    ok((a->it_flags & ITEM_QUEUED) == 0, "unlink clears ITEM_QUEUED");
    mq_get_class_stats(CLS, &st);
    ok(st.count[0] == 0 && st.count[2] == 1, "queue counts follow links");
    unlink_locked(h);
    ok(victim(NULL, NULL) == NULL, "an empty class has no victim");
    free(a);
    free(b);
    free(c);
    free(h);
}

static bool only_named_y(item *it, void *arg)
{
    return ITEM_key(it)[0] == 'y';
}

static void test_accept_filter(void)
{
    item *x = make_item("x1", 0), *y = make_item("y1", 0);
    link_locked(y);
    link_locked(x);
    ok(victim(NULL, NULL) == y && victim(only_named_y, NULL) == y,
       "accept filter sees candidates in victim order");
    unlink_locked(y);
    ok(victim(only_named_y, NULL) == NULL,
       "refused candidates are not returned");
    unlink_locked(x);
    free(x);
    free(y);
}

static void test_bumping(void)
{
    item *p = make_item("p", 1), *q = make_item("q", 1);
    link_locked(p);
    link_locked(q);                           /* q head, p tail */
    current_time += 10;
    bump_locked(p);
    struct order o = { .n = 0 };
    mq_for_each(CLS, record, &o);
    ok(o.seen[0] == q && o.seen[1] == p,
       "a bump within ITEM_UPDATE_INTERVAL does not move the item");
    current_time += ITEM_UPDATE_INTERVAL;
    bump_locked(p);
    o.n = 0;
    mq_for_each(CLS, record, &o);
    ok(o.seen[0] == p && p->time == current_time,
       "after the interval a bump moves it to the head and stamps it");
    q->counter = 2;
    bump_locked(q);
    o.n = 0;
    mq_for_each(CLS, record, &o);
    ok(q->mq_level == 1 && o.n == 2 && o.seen[1] == q && o.level[1] == 1,
       "a counter reaching the next power of two moves it up at once");
    q->counter = 1;                           /* decay */
    item_lock(hv_of(q));
    bool moved = mq_relevel(q, q->counter);
    item_unlock(hv_of(q));
    ok(moved && q->mq_level == 0, "re-levelling after decay moves it down");
    unlink_locked(p);
    unlink_locked(q);
    free(p);
    free(q);
}

static void test_cursor(void)
{
    item *it[5];
    char key[16];
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        it[i] = make_item(key, 0);
        link_locked(it[i]);
    }
    struct mq_cursor *cur = mq_cursor_new(), *other = mq_cursor_new();
    mq_cursor_start(other, CLS, 0);           /* a second walker at the tail */
    mq_cursor_start(cur, CLS, 0);
    bool order_ok = true, pinned = true;
    item *got;
    int n = 0;
    while ((got = mq_cursor_next(cur)) != NULL) {
        order_ok = order_ok && n < 5 && got == it[n];
        pinned = pinned && atomic_load(&got->refcount) == 2;
        atomic_fetch_sub(&got->refcount, 1);
        n++;
    }
    ok(n == 5 && order_ok, "a cursor walks tail to head, skipping cursors");
    ok(pinned, "the cursor hands out pinned items");
    ok(victim(NULL, NULL) == it[0], "victims skip placeholders");
    mq_cursor_free(other);
    mq_cursor_free(cur);
    struct mq_class_stats st;
    mq_get_class_stats(CLS, &st);
    ok(st.count[0] == 5, "placeholders are not counted as items");
    for (int i = 0; i < 5; i++) {
        unlink_locked(it[i]);
        free(it[i]);
    }
}

/* Q comes from settings.tier.mq_queues: counters saturate in queue Q-1. */
static void test_levels_from_settings(void)
{
    settings.tier.mq_queues = 4;
    mq_init();
    ok(mq_queues() == 4, "tier_mq_queues=4 gives 4 queues");
    ok(mq_level_for_counter(4) == 2 && mq_level_for_counter(7) == 2,
       "counters 4..7 still sit in queue 2");
    ok(mq_level_for_counter(8) == 3 && mq_level_for_counter(65535) == 3,
       "from 2^(Q-1) = 8 up everything is in the last queue, 3");
    settings.tier.mq_queues = 16;
    mq_init();
    ok(mq_queues() == 16 && mq_level_for_counter(32768) == 15
       && mq_level_for_counter(32767) == 14, "tier_mq_queues=16: 16 queues");
    settings.tier.mq_queues = 8;
    mq_init();
    ok(mq_queues() == 8 && mq_level_for_counter(128) == 7,
       "back to the default 8");
}

/* ---- aging (mq_set_aging) ---- */

/* Items whose key starts with 'd' are dead; counters the hand changes are
 * counted. */
static unsigned int recounts;

static bool dead_if_d(const item *it)
{
    return ITEM_key(it)[0] == 'd';
}

static void count_recount(item *it, uint32_t old)
{
    recounts++;
}

static const struct mq_aging_ops test_aging = {
    .is_dead = dead_if_d,
    .recounted = count_recount,
    .probation = true,
    .hand = true,
};

/* as the engine sets it up where victims are demoted (hotter) */
static const struct mq_aging_ops test_aging_demoting = {
    .is_dead = dead_if_d,
    .recounted = count_recount,
    .probation = false,
    .hand = false,
};

static item *link_n(const char *prefix, int n, uint16_t counter, item **out)
{
    char key[32];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "%s%d", prefix, i);
        out[i] = make_item(key, counter);
        link_locked(out[i]);
    }
    return out[0];
}

static void unlink_all(item **its, int n)
{
    for (int i = 0; i < n; i++) {
        if (its[i]->it_flags & ITEM_QUEUED) {
            unlink_locked(its[i]);
        }
        free(its[i]);
    }
}

/* Old items read a few times (queue 2) and a few new keys: the new keys
 * are not the victims while probation is under its share, even with every
 * old item's bit set, and the paper's MQ (no aging) takes them first. */
static void test_aging_probation(void)
{
    item *old[60], *fresh[20];
    link_n("old", 60, 4, old);
    link_n("new", 20, 1, fresh);
    ok(victim(NULL, NULL) == fresh[0],
       "without aging the oldest new key is the victim");
    mq_set_aging(&test_aging);
    item *v = victim(NULL, NULL);
    bool is_old = false;
    for (int i = 0; i < 60; i++) {
        is_old = is_old || v == old[i];
    }
    ok(is_old, "with aging an old item goes, not a new key (probation "
       "holds 20 of 80)");
    struct mq_class_stats st;
    mq_get_class_stats(CLS, &st);
    ok(st.count[2] + st.count[1] == 60,
       "the victim search rotated old items, none left their queues' ranks");
    mq_set_aging(&test_aging_demoting);
    ok(victim(NULL, NULL) == fresh[0],
       "without probation (victims demoted) queue 0's tail goes first");
    mq_set_aging(&test_aging);
    /* more new keys: probation over a third of the class */
    item *more[20];
    link_n("more", 20, 1, more);
    ok(victim(NULL, NULL) == fresh[0],
       "probation over its share gives its tail");
    unlink_all(more, 20);
    unlink_all(fresh, 20);
    unlink_all(old, 60);
    mq_set_aging(NULL);
}

/* The hand: an idle tail item of queue 2 and up loses half its counter
 * and a queue; one accessed since the last pass goes back to the head. */
static void test_aging_hand(void)
{
    item *top[2], *probe[20];
    link_n("top", 2, 200, top);               /* queue 7 */
    link_n("p", 20, 1, probe);                /* probation, full */
    mq_set_aging(&test_aging);
    top[0]->it_flags &= ~ITEM_REF;            /* idle since the last pass */
    recounts = 0;
    ok(victim(NULL, NULL) == probe[0], "probation's tail is the victim");
    ok(top[0]->mq_level == 6 && top[0]->counter == 100 && recounts == 1,
       "the idle tail of queue 7 dropped to queue 6 with half its count "
       "(%u, queue %u)", top[0]->counter, top[0]->mq_level);
    ok(top[1]->mq_level == 7 && (top[1]->it_flags & ITEM_REF) != 0,
       "one tail a queue per eviction: queue 7's next one is untouched");
    victim(NULL, NULL);
    ok(top[1]->mq_level == 7 && (top[1]->it_flags & ITEM_REF) == 0,
       "the next eviction: queue 7's tail, accessed, kept its queue and "
       "lost its bit");
    ok(top[0]->mq_level == 5 && top[0]->counter == 50,
       "... and queue 6's, idle, went on down: 6 -> 5 (counter %u)",
       top[0]->counter);
    unlink_locked(top[1]);
    top[0]->counter = 60000;
    top[0]->it_flags &= ~ITEM_REF;
    item_lock(hv_of(top[0]));
    mq_relevel(top[0], top[0]->counter);
    item_unlock(hv_of(top[0]));
    victim(NULL, NULL);
    ok(top[0]->mq_level == 6 && top[0]->counter == 127,
       "a counter far above the last queue's floor drops to the top of the "
       "queue below (%u)", top[0]->counter);
    unlink_all(probe, 20);
    unlink_all(top, 2);
    mq_set_aging(NULL);
}

/* Without the hand (where victims are demoted) idle items keep their
 * queue and counter; dead ones at a tail still go first. */
static void test_aging_no_hand(void)
{
    item *top[1], *probe[20], *gone[1];
    link_n("top", 1, 200, top);
    link_n("p", 20, 1, probe);
    mq_set_aging(&test_aging_demoting);
    top[0]->it_flags &= ~ITEM_REF;
    ok(victim(NULL, NULL) == probe[0], "queue 0's tail is the victim");
    ok(top[0]->mq_level == 7 && top[0]->counter == 200,
       "no hand: an idle tail of queue 7 keeps its queue and counter "
       "(%u, queue %u)", top[0]->counter, top[0]->mq_level);
    link_n("d", 1, 8, gone);                  /* dead, queue 3 */
    ok(victim(NULL, NULL) == gone[0], "a dead tail still goes first");
    unlink_all(gone, 1);
    unlink_all(probe, 20);
    unlink_all(top, 1);
    mq_set_aging(NULL);
}

/* Dead items anywhere at a queue's tail go before live ones. */
static void test_aging_dead_first(void)
{
    item *fresh[20], *gone[3];
    link_n("d", 3, 8, gone);                  /* dead, queue 3 */
    link_n("n", 20, 1, fresh);                /* probation over its share */
    mq_set_aging(&test_aging);
    ok(victim(NULL, NULL) == gone[0],
       "a dead tail in a high queue is the victim before probation's");
    unlink_locked(gone[0]);
    unlink_locked(gone[1]);
    unlink_locked(gone[2]);
    ok(victim(NULL, NULL) == fresh[0], "then probation's tail");
    unlink_all(fresh, 20);
    unlink_all(gone, 3);
    mq_set_aging(NULL);
}

static struct mq_class_stats class_stats(void)
{
    struct mq_class_stats st;
    mq_get_class_stats(CLS, &st);
    return st;
}

/* memcached's segments: queue 0's HOT and COLD parts, the maintainer's
 * moves between them by share and by age, WARM above, and the moves
 * counted. */
static void test_segments(void)
{
    settings.lru_segmented = true;
    settings.hot_lru_pct = 20;
    settings.hot_max_factor = 0.2;
    mq_reset_class_stats();
    item *k[10];
    link_n("k", 10, 1, k);
    struct mq_class_stats st = class_stats();
    ok(st.segment[LRU_HOT].count == 10 && st.segment[LRU_COLD].count == 0
       && mq_segment(k[0]) == LRU_HOT, "new keys are HOT");
    ok(mq_age_hot(CLS, 500) == 8, "HOT over 20%% of the class: its tail "
       "moves until it is not");
    st = class_stats();
    ok(st.segment[LRU_HOT].count == 2 && st.segment[LRU_COLD].count == 8
       && mq_segment(k[7]) == LRU_COLD && mq_segment(k[8]) == LRU_HOT
       && st.moves_to_cold == 8, "the oldest eight are COLD, counted");
    ok(mq_age_hot(CLS, 500) == 0, "young HOT items under the share stay");
    current_time += 1;
    ok(mq_age_hot(CLS, 500) == 2 && class_stats().segment[LRU_HOT].count
       == 0, "older than hot_max_factor times COLD's tail age: they move");
    item *n[1];
    link_n("n", 1, 1, n);
    ok(mq_segment(n[0]) == LRU_HOT && victim(NULL, NULL) == k[0],
       "a new key is HOT; COLD's tail is the FIFO's tail, the victim");
    current_time += 1;
    item_lock(hv_of(n[0]));
    ok(mq_age_hot(CLS, 500) == 0 && mq_segment(n[0]) == LRU_HOT,
       "a HOT tail whose item lock is busy waits for the next round");
    item_unlock(hv_of(n[0]));
    ok(mq_age_hot(CLS, 500) == 1 && mq_segment(n[0]) == LRU_COLD,
       "... and then moves");
    k[3]->counter = 2;
    current_time += ITEM_UPDATE_INTERVAL;
    bump_locked(k[3]);
    st = class_stats();
    ok(mq_segment(k[3]) == LRU_WARM && st.moves_to_warm == 1
       && st.segment[LRU_WARM].count == 1
       && st.segment[LRU_COLD].count == 10,
       "a read moves a COLD key up a queue: WARM, counted");
    unlink_locked(n[0]);
    unlink_locked(k[9]);
    item *m[2];
    link_n("m", 2, 1, m);
    st = class_stats();
    ok(st.segment[LRU_HOT].count == 2 && st.segment[LRU_COLD].count == 8
       && mq_age_hot(CLS, 500) == 0, "unlinks keep the counts; new HOT keys "
       "younger than a fifth of COLD's tail age stay");
    current_time += 20;
    ok(mq_age_hot(CLS, 500) == 2 && mq_segment(m[1]) == LRU_COLD,
       "older, they move");
    uint64_t before = class_stats().moves_to_cold;
    item *h[1];
    link_n("h", 1, 1, h);
    for (int i = 0; i < 12; i++) {
        item *v = victim(NULL, NULL);
        if (v != NULL) {
            unlink_locked(v);
        }
    }
    st = class_stats();
    ok(st.moves_to_cold == before + 2 && st.segment[LRU_WARM].count == 0,
       "victims taken from HOT and WARM count as moved to COLD (%llu)",
       (unsigned long long)(st.moves_to_cold - before));
    settings.lru_segmented = false;
    item *f[3];
    link_n("f", 3, 1, f);
    ok(mq_age_hot(CLS, 500) == 3, "lru mode flat: nothing stays HOT");
    settings.lru_segmented = true;
    unlink_all(f, 3);
    unlink_all(h, 1);
    unlink_all(m, 2);
    free(n[0]);
    unlink_all(k, 10);
}

int main(void)
{
    unit_settings_defaults();
    unit_locks_init(LOCK_POWER);
    test_levels_from_settings();
    mq_init();
    test_levels();
    test_lowest_level();
    test_order_and_victims();
    test_accept_filter();
    test_bumping();
    test_cursor();
    test_aging_probation();
    test_aging_hand();
    test_aging_dead_first();
    test_aging_no_hand();
    test_segments();
    return done_testing();
}
