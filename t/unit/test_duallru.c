/*
 * test_duallru.c: Fogcached's Dual-LRU rules (items_duallru.h) and the
 * D-zone's segments on items_mq.c's segmented mode: flag transitions on
 * references (Fetched -> Active -> Promote, an Active COLD item goes to
 * WARM), the maintenance's tail rules (Promote to Move to D in the N-zone
 * only, Active to WARM, the rest to COLD, nothing while a segment is
 * within its share), the shares, the D reserve, and that segmented MQ
 * links new items at HOT, ignores counters on bumps and re-levels, moves
 * items on request and picks victims Move first, then COLD, WARM, HOT.
 */
#include "config.h"
#include "items_duallru.h"
#include "items_mq.h"
#include "tap.h"
#include "unit_support.h"
#include "clock.h"
#include "hash.h"
#include "item.h"
#include "item_lock.h"

#include <stdlib.h>
#include <string.h>

#define CLS 1
#define LOCK_POWER 10

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

static void test_refs(void)
{
    struct dlru_step s = dlru_on_ref(true, DLRU_HOT, 0);
    ok(!s.move && s.flags == DLRU_ACTIVE,
       "N HOT: a second reference sets Active, no move");
    s = dlru_on_ref(true, DLRU_HOT, DLRU_ACTIVE);
    ok(!s.move && s.flags == (DLRU_ACTIVE | DLRU_PROMOTE),
       "N HOT: a reference to an Active item sets Promote");
    s = dlru_on_ref(true, DLRU_WARM, DLRU_ACTIVE);
    ok(!s.move && (s.flags & DLRU_PROMOTE), "N WARM: Promote as well");
    s = dlru_on_ref(true, DLRU_COLD, 0);
    ok(s.move && s.to == DLRU_WARM && s.flags == 0,
       "N COLD: becoming Active moves to WARM, Active cleared");
    s = dlru_on_ref(true, DLRU_MOVE, 0);
    ok(!s.move && s.flags == DLRU_ACTIVE,
       "N Move to D: stays, Active set");
    s = dlru_on_ref(false, DLRU_COLD, 0);
    ok(s.move && s.to == DLRU_WARM, "D COLD: becoming Active -> WARM");
    s = dlru_on_ref(false, DLRU_MOVE, 0);
    ok(s.move && s.to == DLRU_WARM,
       "D Move to N: becoming Active rescues it to WARM");
    s = dlru_on_ref(false, DLRU_HOT, DLRU_ACTIVE);
    ok(!s.move && s.flags == DLRU_ACTIVE, "D items never get Promote");
}

static void test_tails(void)
{
    struct dlru_step s;
    s = dlru_at_tail(true, DLRU_HOT, DLRU_ACTIVE | DLRU_PROMOTE, false);
    ok(s.move && s.to == DLRU_MOVE && s.flags == 0,
       "N HOT tail with Promote -> Move to D even within its share");
    s = dlru_at_tail(true, DLRU_WARM, DLRU_PROMOTE, false);
    ok(s.move && s.to == DLRU_MOVE, "N WARM tail with Promote -> Move to D");
    s = dlru_at_tail(false, DLRU_HOT, DLRU_ACTIVE | DLRU_PROMOTE, false);
    ok(!s.move, "D: Promote means nothing; within its share HOT stays");
    s = dlru_at_tail(true, DLRU_HOT, 0, false);
    ok(!s.move, "N HOT within its share: the tail stays");
    s = dlru_at_tail(true, DLRU_HOT, DLRU_ACTIVE, true);
    ok(s.move && s.to == DLRU_WARM && s.flags == 0,
       "HOT over: an Active tail -> WARM, Active cleared");
    s = dlru_at_tail(false, DLRU_HOT, 0, true);
    ok(s.move && s.to == DLRU_COLD, "HOT over: an inactive tail -> COLD");
    s = dlru_at_tail(false, DLRU_WARM, DLRU_ACTIVE, true);
    ok(s.move && s.to == DLRU_WARM && s.flags == 0,
       "WARM over: an Active tail goes back to WARM's head");
    s = dlru_at_tail(true, DLRU_WARM, 0, true);
    ok(s.move && s.to == DLRU_COLD, "WARM over: an inactive tail -> COLD");
    s = dlru_at_tail(true, DLRU_COLD, DLRU_ACTIVE, false);
    ok(s.move && s.to == DLRU_WARM && s.flags == 0,
       "COLD: an Active tail -> WARM");
    s = dlru_at_tail(true, DLRU_COLD, 0, true);
    ok(!s.move, "COLD: an inactive tail waits for eviction");
    s = dlru_at_tail(true, DLRU_MOVE, DLRU_PROMOTE, true);
    ok(!s.move, "Move segments are drained, never moved");
}

static void test_shares(void)
{
    ok(!dlru_over(DLRU_HOT, 20, 100) && dlru_over(DLRU_HOT, 21, 100),
       "HOT may hold 20%% of the class");
    ok(!dlru_over(DLRU_WARM, 40, 100) && dlru_over(DLRU_WARM, 41, 100),
       "WARM may hold 40%% of the class");
    ok(dlru_over(DLRU_HOT, 1, 1), "a lone HOT item is over its share");
    ok(!dlru_over(DLRU_COLD, 100, 100) && !dlru_over(DLRU_MOVE, 5, 5),
       "COLD and Move have no share");
    ok(dlru_d_reserve(1) == 0 && dlru_d_reserve(127) == 1
       && dlru_d_reserve(10922) == 16,
       "D reserve: a 64th of a page's chunks, at most 16");
}

static void moved(item *it, unsigned int level)
{
    item_lock(hv_of(it));
    mq_move(it, level);
    item_unlock(hv_of(it));
}

/* the victim mq_pick_victim offers, put back at once */
static item *victim(void)
{
    uint64_t hv;
    item *v = mq_pick_victim(CLS, NULL, NULL, &hv);
    if (v != NULL) {
        item_unlock(hv);
        atomic_fetch_sub(&v->refcount, 1);
    }
    return v;
}

static void test_segmented_mq(void)
{
    mq_set_segmented(DLRU_SEGMENTS, DLRU_HOT, dlru_lru_segments);
    ok(mq_queues() == DLRU_SEGMENTS, "segmented: one queue per segment");
    item *a = make_item("a", 200), *b = make_item("b", 0),
         *c = make_item("c", 3), *d = make_item("d", 1);
    item *all[] = { a, b, c, d };
    for (unsigned int i = 0; i < 4; i++) {
        item_lock(hv_of(all[i]));
        mq_link(all[i]);
        item_unlock(hv_of(all[i]));
    }
    ok(mq_count(CLS, DLRU_HOT) == 4 && a->mq_level == DLRU_HOT
       && b->mq_level == DLRU_HOT,
       "new links go to HOT whatever their counter");
    current_time += 2 * ITEM_UPDATE_INTERVAL;
    item_lock(hv_of(a));
    mq_bump(a);
    ok(!mq_relevel(a, 0) && a->mq_level == DLRU_HOT,
       "bumps and re-levels do not move segmented items");
    ok(a->time == current_time, "a bump refreshes the access time");
    item_unlock(hv_of(a));
    ok(victim() == a, "all in HOT: the HOT tail (first linked) is the victim");
    moved(c, DLRU_WARM);
    moved(d, DLRU_COLD);
    ok(mq_count(CLS, DLRU_WARM) == 1 && mq_count(CLS, DLRU_COLD) == 1
       && mq_count(CLS, DLRU_HOT) == 2, "mq_move moves between segments");
    ok(victim() == d, "COLD before WARM and HOT");
    moved(b, DLRU_MOVE);
    ok(victim() == b, "Move to N before COLD");
    uint64_t hv;
    item *t = mq_claim_tail(CLS, DLRU_WARM, NULL, NULL, &hv);
    ok(t == c && atomic_load(&c->refcount) == 2,
       "mq_claim_tail takes that segment's tail, pinned");
    if (t != NULL) {
        item_unlock(hv);
        atomic_fetch_sub(&t->refcount, 1);
    }
    ok(mq_claim_tail(CLS, DLRU_SEGMENTS, NULL, NULL, &hv) == NULL,
       "no queue beyond the segments");
    for (unsigned int i = 0; i < 4; i++) {
        item_lock(hv_of(all[i]));
        mq_unlink(all[i]);
        item_unlock(hv_of(all[i]));
        free(all[i]);
    }
    ok(mq_count(CLS, DLRU_HOT) + mq_count(CLS, DLRU_WARM)
       + mq_count(CLS, DLRU_COLD) + mq_count(CLS, DLRU_MOVE) == 0,
       "all unlinked");
}

int main(void)
{
    unit_settings_defaults();
    unit_locks_init(LOCK_POWER);
    test_refs();
    test_tails();
    test_shares();
    mq_init();
    test_segmented_mq();
    return done_testing();
}
