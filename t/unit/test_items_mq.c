/*
 * test_items_mq.c: multi-queue replacement (items_mq.c): queue level from
 * the access counter, queue order, bounded bumping, re-levelling, victim
 * order (queue 0 tail first, then higher queues), skipping referenced and
 * lock-busy items, cursors.
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

int main(void)
{
    unit_settings_defaults();
    unit_locks_init(LOCK_POWER);
    test_levels_from_settings();
    mq_init();
    test_levels();
    test_order_and_victims();
    test_accept_filter();
    test_bumping();
    test_cursor();
    return done_testing();
}
