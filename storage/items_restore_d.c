/*
 * items_restore_d.c: the D-zone's warm restart through the memory file of
 * -e (doc/restart.md "The memory file (-e)" and "Crash recovery of the
 * memory file").
 *
 * Owns what a graceful stop records about the D-zone's items (the clock,
 * the cas counter, the flush state, memcached's hash power, the page
 * table, handed to memfile.c for PATH.meta) and how a start brings them
 * back: after a graceful stop from PATH.meta, after a crash (no PATH.meta)
 * from the file's durable block (memfile_durable.c) and the items' seals.
 * Either way the earlier run's clock is resumed, its pages given back to
 * their classes (slabs.c), then every chunk of them looked at once: a
 * live item is linked again into the index and the MQ queues with fresh
 * links (the links in the file point into the old mapping), an expired or
 * flushed one is dropped, and every other chunk goes on its class's free
 * list.  Items are linked oldest access first, so the queues' tails hold
 * the least recently used ones, as they did.  Counters (curr_items,
 * total_items, bytes, per class) count the items linked, as any link
 * does.  Then the durable block and the page table follow this run.
 *
 * The chunk's header is trusted only after checks (flags, class, sizes,
 * the key's NUL and the value's "\r\n", a cas the run gave out, a time it
 * had reached): a chunk that fails them is freed, never linked.  After a
 * graceful stop an item is one the index held (ITEM_LINKED); after a
 * crash one that was sealed (ITEM_SEALED: written whole, and still the
 * key's, or the newer of two versions a store was switching between).
 *
 * Locks: start-up runs in storage_start_threads, after the N-zone's
 * recovery and before any client or storage thread, so the do_ functions
 * are called without item locks: nothing else can see the index or the
 * queues yet.  The MQ class locks and the slabs lock are taken by the
 * functions that take them.
 * items_d_save and items_d_discard run at shutdown after the storage
 * threads have stopped.
 */
#include "config.h"
#include "items_restore_d.h"
#include "items.h"
#include "items_internal.h"

#include "clock.h"
#include "hash.h"
#include "hash_desc.h"
#include "memfile.h"
#include "memfile_durable.h"
#include "slabs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool seal_d_items;

/* What a chunk must show to be taken for an item. */
struct restore_bounds {
    uint16_t mark;               /* ITEM_LINKED (graceful) or ITEM_SEALED */
    uint64_t cas_limit;          /* every cas the run gave out is below */
    rel_time_t max_time;         /* no item was touched later */
};

/* What the pass over the restored chunks found. */
struct restore_pass {
    struct restore_bounds bounds;
    uint64_t max_cas;            /* of the live items */
    item **live;                 /* live items, linked after sorting */
    size_t nlive;
    size_t cap;
    size_t dead;                 /* expired or flushed: freed */
    size_t rejected;             /* marked linked but failing the checks,
                                    or no memory to keep them */
};

/* Does this chunk of class clsid hold an item the earlier run had
 * linked (or sealed), whole? */
static bool chunk_holds_item(const item *it, unsigned int clsid,
                             const struct restore_bounds *b)
{
    uint16_t state = it->it_flags & (b->mark | ITEM_SLABBED | ITEM_HEAP);
    if (state != b->mark || it->slabs_clsid != clsid || it->nkey == 0
            || it->nkey > KEY_MAX_LENGTH || it->nbytes < 2) {
        return false;
    }
    if (ITEM_ntotal(it) > slabs_chunk_size(clsid) || it->cas == 0
            || it->cas >= b->cas_limit || it->time > b->max_time) {
        return false;
    }
    const char *value = ITEM_data(it);
    return ITEM_key(it)[it->nkey] == '\0'
        && value[it->nbytes - 2] == '\r' && value[it->nbytes - 1] == '\n';
}

static bool remember_live(struct restore_pass *rp, item *it)
{
    if (rp->nlive == rp->cap) {
        size_t cap = rp->cap ? rp->cap * 2 : 1024;
        item **grown = realloc(rp->live, cap * sizeof(*grown));
        if (grown == NULL) {
            return false;
        }
        rp->live = grown;
        rp->cap = cap;
    }
    rp->live[rp->nlive++] = it;
    return true;
}

/* slabs_region_sort_chunks' question: keep this chunk? */
static bool keep_live_chunk(item *it, unsigned int clsid, void *arg)
{
    struct restore_pass *rp = arg;
    if (!chunk_holds_item(it, clsid, &rp->bounds)) {
        if (it->it_flags & rp->bounds.mark) {
            rp->rejected++;
        }
        return false;
    }
    if (item_is_dead(it)) {
        rp->dead++;
        return false;
    }
    if (!remember_live(rp, it)) {
        rp->rejected++;
        return false;
    }
    if (it->cas > rp->max_cas) {
        rp->max_cas = it->cas;
    }
    return true;
}

/* Least recently used first; the cas orders items of the same second. */
static int by_last_access(const void *a, const void *b)
{
    const item *x = *(item *const *)a, *y = *(item *const *)b;
    if (x->time != y->time) {
        return x->time < y->time ? -1 : 1;
    }
    return x->cas < y->cas ? -1 : (x->cas > y->cas);
}

/* Another version of it's key may be in the index already: one the
 * N-zone's recovery brought back, or a duplicate in a damaged file.  The
 * newer cas stays; true when `it` is to be linked. */
static bool do_newest_version(item *it, uint64_t hv)
{
    struct nitem_probe p;
    uint64_t *locp = assoc_find_loc(ITEM_key(it), it->nkey, hv, &p);
    if (locp == NULL) {
        return true;
    }
    if (!hd_loc_is_n(*locp)) {
        item *other = hd_loc_to_item(*locp);
        if (other->cas >= it->cas) {
            return false;
        }
        do_unlink_d(other, hv);
        return true;
    }
    const nitem_hdr *h = &p.u.hdr;
    if (h->cas >= it->cas) {
        return false;
    }
    do_unlink_n_slot(locp, hv, h->clsid,
                     item_make_ntotal(h->nkey, (int)h->nbytes));
    slabs_tier_free(p.off);
    return true;
}

/* Link a restored item as if just stored, keeping its own times, cas,
 * flags and access count; false (its chunk freed) when it cannot be. */
static bool relink(item *it)
{
    uint64_t hv = hash_key(ITEM_key(it), it->nkey);
    it->next = it->prev = NULL;
    /* sealed, whatever the run that stored it did */
    it->it_flags = (uint16_t)((it->it_flags & ~(ITEM_LINKED | ITEM_QUEUED))
                              | ITEM_SEALED);
    atomic_store_explicit(&it->refcount, 0, memory_order_relaxed);
    it->mq_level = 0;
    /* the decay epoch restarts with the process: the saved count is
     * taken as of now */
    it->epoch = tiering ? (uint8_t)(migrate_epoch() & 7) : 0;
    if (do_newest_version(it, hv) && do_link_d(it, hv)) {
        return true;
    }
    slabs_free(it, ITEM_ntotal(it), it->slabs_clsid);
    return false;
}

/* The N-zone's recovery may have resumed the clock already; both must be
 * the same run's. */
static bool clock_compatible(time_t epoch)
{
    if (process_started == memfile_fresh_epoch()
            || process_started == epoch) {
        return true;
    }
    fprintf(stderr, "[restart] restart incompatible due to setting for "
            "[process_started] [old value: %lld]\n", (long long)epoch);
    return false;
}

static void resume_run_state(const struct memfile_state *st)
{
    rel_time_t last = st->current_time;
    if (process_started == st->process_started && current_time > last) {
        last = current_time;     /* resumed already, and further on */
    }
    clock_resume(st->process_started, last);
    __atomic_store_n(&settings.oldest_live, st->oldest_live,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&settings.oldest_cas, st->oldest_cas, __ATOMIC_RELAXED);
    items_cas_at_least(st->current_cas);
}

/* The pages the earlier run had given (its durable page table, one owner
 * per page), as slabs_region_adopt takes them: every page up to the last
 * one a class owns counts as carved, those no class owns go to the
 * global pool.  NULL when out of memory. */
static struct slabs_region_page *pages_of_table(const struct mfd_found *f,
                                                unsigned int *npages,
                                                unsigned int *carved)
{
    *carved = 0;
    for (unsigned int i = 0; i < f->table_pages; i++) {
        if (f->table[i] != 0) {
            *carved = i + 1;
        }
    }
    struct slabs_region_page *pages = malloc((*carved ? *carved : 1)
                                             * sizeof(*pages));
    for (unsigned int i = 0; pages != NULL && i < *carved; i++) {
        pages[i].index = i;
        pages[i].clsid = f->table[i];
    }
    *npages = *carved;
    return pages;
}

/* Look at every chunk of the adopted pages and link the live items. */
static void relink_pass(struct restore_pass *rp)
{
    slabs_region_sort_chunks(keep_live_chunk, rp);
    if (rp->nlive > 1) {
        qsort(rp->live, rp->nlive, sizeof(*rp->live), by_last_access);
    }
    size_t linked = 0;
    for (size_t i = 0; i < rp->nlive; i++) {
        linked += relink(rp->live[i]);
    }
    free(rp->live);
    rp->live = NULL;
    rp->rejected += rp->nlive - linked;
    rp->nlive = linked;
}

static void restore_after_graceful_stop(const struct memfile_state *st)
{
    char err[160];
    if (!clock_compatible(st->process_started)) {
        memfile_forget(true);
        return;
    }
    if (!slabs_region_adopt(st->pages, st->npages, st->pages_carved, err,
                            sizeof(err))) {
        fprintf(stderr, "[restart] page table does not fit: %s\n", err);
        memfile_forget(true);
        return;
    }
    resume_run_state(st);
    /* memcached restores its table's power, whatever -o hashpower says:
     * hash_power_level and hashpower_init go on from the earlier run's */
    assoc_restore_reported_power(st->hashpower);
    settings.hashpower_init = (int)(st->hashpower < MC_HASHPOWER_MAX
                                    ? st->hashpower : MC_HASHPOWER_MAX);

    struct restore_pass rp;
    memset(&rp, 0, sizeof(rp));
    rp.bounds.mark = ITEM_LINKED;
    rp.bounds.cas_limit = st->current_cas;
    rp.bounds.max_time = current_time;
    relink_pass(&rp);
    if (settings.verbose > 0) {
        fprintf(stderr, "[restart] %zu items restored, %zu expired or "
                "flushed dropped, %zu rejected\n", rp.nlive, rp.dead,
                rp.rejected);
    }
    memfile_forget(false);
}

/* No PATH.meta, and the durable block is this layout's: the run before
 * was not stopped in order (a kill -9, a crash).  Its clock, flush state
 * and pages come from the block, its items are the sealed ones; the cas
 * counter goes on above the highest recovered. */
static void recover_after_crash(const struct mfd_found *f)
{
    char err[160];
    unsigned int npages, carved;
    if (!clock_compatible(f->epoch)) {
        fprintf(stderr, "[restart] failed to validate metadata, starting "
                "with a clean cache\n");
        return;
    }
    struct slabs_region_page *pages = pages_of_table(f, &npages, &carved);
    if (pages == NULL) {
        snprintf(err, sizeof(err), "out of memory");
    }
    bool adopted = pages != NULL
        && slabs_region_adopt(pages, npages, carved, err, sizeof(err));
    free(pages);
    if (!adopted) {
        fprintf(stderr, "[restart] memory file %s: its page table does not "
                "fit (%s); starting with a clean cache\n",
                settings.memory_file, err);
        return;
    }
    fprintf(stderr, "[restart] memory file %s: not stopped in order, "
            "recovering %u pages\n", settings.memory_file, carved);
    clock_resume(f->epoch, process_started == f->epoch ? current_time : 0);
    __atomic_store_n(&settings.oldest_live, f->oldest_live,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&settings.oldest_cas, f->oldest_cas, __ATOMIC_RELAXED);

    struct restore_pass rp;
    memset(&rp, 0, sizeof(rp));
    rp.bounds.mark = ITEM_SEALED;
    rp.bounds.cas_limit = UINT64_MAX;
    rp.bounds.max_time = current_time + RESTART_TIME_SLACK;
    relink_pass(&rp);
    items_cas_at_least(rp.max_cas);
    fprintf(stderr, "[restart] memory file %s: %zu items recovered, %zu "
            "expired or flushed dropped, %zu rejected\n",
            settings.memory_file, rp.nlive, rp.dead, rp.rejected);
}

void items_d_restore(void)
{
    if (!memfile_active()) {
        return;
    }
    seal_d_items = true;
    const struct memfile_state *st = memfile_saved();
    const struct mfd_found *crashed = memfile_crashed_run();
    if (st != NULL) {
        restore_after_graceful_stop(st);
    } else if (crashed != NULL) {
        recover_after_crash(crashed);
    }
    /* from here on the block and its page table are this run's */
    unsigned int table_pages;
    uint8_t *table = mfd_take_over(process_started,
        __atomic_load_n(&settings.oldest_live, __ATOMIC_RELAXED),
        __atomic_load_n(&settings.oldest_cas, __ATOMIC_RELAXED),
        &table_pages);
    if (!slabs_region_track(table, table_pages)) {
        fprintf(stderr, "[restart] out of memory for the memory file's page "
                "table; a crash of this run will not be recovered\n");
        mfd_discard();
    }
}

void items_d_discard(void)
{
    if (memfile_active()) {
        mfd_discard();
    }
}

void items_d_save(void)
{
    struct memfile_state st;
    struct assoc_stats as;
    if (!memfile_active()) {
        return;
    }
    memset(&st, 0, sizeof(st));
    st.process_started = process_started;
    st.current_time = current_time;
    st.stop_time = time(NULL);
    /* a fresh id: above every cas given out */
    st.current_cas = get_cas_id();
    st.oldest_live = __atomic_load_n(&settings.oldest_live, __ATOMIC_RELAXED);
    st.oldest_cas = __atomic_load_n(&settings.oldest_cas, __ATOMIC_RELAXED);
    assoc_get_stats(&as);
    st.hashpower = as.hash_power_level;
    if (!slabs_region_pages(&st.pages, &st.npages, &st.pages_carved)) {
        fprintf(stderr, "[restart] out of memory for the page table; the "
                "next start will be cold\n");
        return;
    }
    memfile_save(&st);
    free(st.pages);
}
