/*
 * slabs_tier.c: the N-zone pages of the slab classes and their chunks
 * (HMCached section 3.1: "each slab
 * class is composed of both DRAM and NVM"; doc/tiering.md "Slab classes
 * in two zones" and "N items in NVM").
 *
 * Owns: the DRAM page table of the N-zone (which class owns each page),
 * one DRAM bitmap of used chunks per page, per class a stack of its pages
 * that have free chunks, and the zone's accounting.  The zone's first
 * pages hold nzone.c's superblock and persistent page table: a page's
 * class is recorded there, durably, before its first chunk is handed out,
 * and read back on a warm start (doc/restart.md).  Every byte of the
 * N-zone is touched through nvm.h, charged to the class that owns it.
 *
 * Locks:
 *   - tier_lock guards page assignment, free counts, the free-page stacks
 *     and every change of a bitmap.  It is a leaf: taken inside item locks
 *     and CLOCK locks, never the other way round.
 *   - Readers that must not take it (the CLOCK hand skipping free chunks,
 *     lookups finding the class of an offset) read the page's class and
 *     bitmap words with atomic loads.  A page's class and bitmap are
 *     published (release) before any of its chunks is handed out, and a
 *     page changes class only with every chunk free (no index slot or D
 *     item names one), so a reader holding an offset it found in the
 *     index (under the item lock) always sees them.  A replaced bitmap is
 *     kept until the zone goes: a lockless walker may still read it.
 *
 * Deliberate differences from the paper and from the first design note:
 *   - No free list of chunk offsets: the used-chunk bitmap the CLOCK hand
 *     needs anyway doubles as the free list (per page a free count and a
 *     summary with a bit per bitmap word that has a free chunk; per class
 *     a stack of pages with free chunks).  That costs about one bit of
 *     DRAM per chunk instead of 8 bytes per free chunk, a new page costs
 *     no carving work, and finding a free chunk reads at most three
 *     summary words and one bitmap word: stores over N keys free chunks
 *     all over a page, and a scan of the bitmap from its lowest free word
 *     cost a store about 190 instructions.
 *   - N pages are not reassigned by heat as D pages are (slabs.c); the
 *     one move is of a page whose chunks its class's owner emptied (the
 *     copies-only pages of clock_nvm.c), given whole to another class.
 */
#include "config.h"
#include "slabs_tier.h"

#include "slabs.h"
#include "clock.h"
#include "nvm.h"
#include "nzone.h"
#include "settings.h"
#include "slab_class.h"

#include <pthread.h>
#include <stddef.h>
#include <sysexits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The location word keeps offset / 8 in 35 bits (hash_desc.h). */
#define ZONE_ADDRESSABLE ((uint64_t)1 << 38)

struct nclass {
    uint32_t free_head;          /* page + 1 of a page with free chunks */
    _Atomic unsigned int npages; /* written under tier_lock */
    uint64_t free_chunks;
    /* the class's page geometry, fixed at start-up (its chunk size is
     * slabs_tier_map's) */
    uint32_t perslab;            /* chunks per page */
    uint32_t nwords;             /* bitmap words per page */
    uint32_t nsummary;           /* summary words after them */
};

struct slabs_tier_map slabs_tier_map;

static struct {
    uint64_t first_page;         /* pages before it hold nzone.c's data */
    _Atomic uint64_t pages_used;
    struct nclass cls[MAX_NUMBER_OF_SLAB_CLASSES];
    uint64_t bitmap_bytes;
    /* bitmaps of pages that changed class: a reader without the lock may
     * still hold one, so they are freed with the zone */
    struct retired_bits {
        _Atomic uint64_t *bits;
        struct retired_bits *next;
    } *retired;
} tz;

static pthread_mutex_t tier_lock = PTHREAD_MUTEX_INITIALIZER;


/* ---- start-up ---- */

static void describe_geometry(uint64_t usable, uint32_t item_header_bytes,
                              struct nzone_geometry *g)
{
    memset(g, 0, sizeof(*g));
    g->zone_bytes = usable;
    g->page_size = slabs_tier_map.page_size;
    g->item_size_max = (uint32_t)settings.item_size_max;
    g->chunk_size_min = (uint32_t)settings.chunk_size;
    g->factor = settings.factor;
    g->nclasses = slabs_largest_clsid();
    for (unsigned int id = POWER_SMALLEST; id <= g->nclasses; id++) {
        g->chunk_sizes[id] = slabs_chunk_size(id);
    }
    g->item_header_bytes = item_header_bytes;
}

static void do_give_page(uint64_t page, unsigned int id,
                         _Atomic uint64_t *bits);
static _Atomic uint64_t *new_page_bits(unsigned int id);
static void set_class_geometry(void);

/* A warm start: the pages the table gives to classes are theirs again,
 * every chunk free until the recovery scan finds its item; the pages go
 * on their classes' free stacks when the scan is done
 * (slabs_tier_restore_done). */
static bool restore_pages(void)
{
    for (uint64_t page = tz.first_page; page < slabs_tier_map.pages_total;
            page++) {
        unsigned int id = nzone_page_class(page);
        if (id == 0) {
            break;
        }
        _Atomic uint64_t *bits = new_page_bits(id);
        if (bits == NULL) {
            return false;
        }
        do_give_page(page, id, bits);
    }
    return true;
}

/* `stats slabs`' N pages of class id and their free chunks (slabs.h
 * slabs_set_n_pages) */
static void class_use(unsigned int id, unsigned int *pages,
                      uint64_t *free_chunks)
{
    pthread_mutex_lock(&tier_lock);
    *pages = tz.cls[id].npages;
    *free_chunks = tz.cls[id].free_chunks;
    pthread_mutex_unlock(&tier_lock);
}

void slabs_tier_init(uint32_t item_header_bytes,
                     struct nzone_attach_result *start)
{
    memset(&tz, 0, sizeof(tz));
    memset(&slabs_tier_map, 0, sizeof(slabs_tier_map));
    memset(start, 0, sizeof(*start));
    if (nvm_zone.base == NULL || nvm_zone.size == 0) {
        return;
    }
    slabs_tier_map.page_size = slabs_page_size();
    set_class_geometry();
    uint64_t usable = settings.nvm.size < nvm_zone.size ? settings.nvm.size
                                                        : nvm_zone.size;
    if (usable > ZONE_ADDRESSABLE) {
        fprintf(stderr, "N-zone: using the first %llu GiB of %llu GiB (the"
                " index addresses 256 GiB)\n",
                (unsigned long long)(ZONE_ADDRESSABLE >> 30),
                (unsigned long long)(usable >> 30));
        usable = ZONE_ADDRESSABLE;
    }
    struct nzone_geometry g;
    char err[512];
    describe_geometry(usable, item_header_bytes, &g);
    /* Start-up, not a client request: a zone that cannot be used as the
     * operator asked stops the server with the reason. */
    if (nzone_attach(&g, settings.tier.restart,
                     nvm_zone_is_persistent(&nvm_zone), process_started,
                     start, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(EX_CONFIG);
    }
    slabs_tier_map.pages_total = start->pages;
    tz.first_page = start->first_page;
    atomic_store(&tz.pages_used, tz.first_page);
    slabs_tier_map.pages = calloc(slabs_tier_map.pages_total,
                                  sizeof(*slabs_tier_map.pages));
    if (slabs_tier_map.pages == NULL
            || (start->start != NZONE_COLD && !restore_pages())) {
        fprintf(stderr, "Failed to allocate the N-zone page table\n");
        exit(EXIT_FAILURE);
    }
    slabs_tier_map.active = true;
    slabs_set_n_pages(class_use);
}

void slabs_tier_destroy(void)
{
    slabs_set_n_pages(NULL);
    for (uint64_t i = 0; i < atomic_load(&tz.pages_used); i++) {
        free((void *)atomic_load(&slabs_tier_map.pages[i].bits));
    }
    while (tz.retired != NULL) {
        struct retired_bits *r = tz.retired;
        tz.retired = r->next;
        free((void *)r->bits);
        free(r);
    }
    free(slabs_tier_map.pages);
    memset(&tz, 0, sizeof(tz));
    memset(&slabs_tier_map, 0, sizeof(slabs_tier_map));
}

bool slabs_tier_active(void)
{
    return slabs_tier_map.active;
}

/* ---- allocation (tier_lock held) ---- */

static void do_push_free_page(unsigned int id, uint64_t page)
{
    struct npage *pg = &slabs_tier_map.pages[page];
    if (!pg->on_free_stack && !pg->moving) {
        pg->next_free = tz.cls[id].free_head;
        tz.cls[id].free_head = (uint32_t)(page + 1);
        pg->on_free_stack = true;
    }
}

/* ---- a page's bitmap and its summary ---- */

static void set_class_geometry(void)
{
    for (unsigned int id = POWER_SMALLEST; id <= slabs_largest_clsid();
            id++) {
        struct nclass *c = &tz.cls[id];
        slabs_tier_map.chunk_size[id] = slabs_chunk_size(id);
        c->perslab = slabs_chunks_per_page(id);
        c->nwords = (c->perslab + 63) / 64;
        c->nsummary = (c->nwords + 63) / 64;
    }
}

/* The bits of bitmap word w that stand for chunks of the page. */
static uint64_t valid_bits(const struct nclass *c, uint32_t w)
{
    return (w + 1) * 64 <= c->perslab
        ? ~(uint64_t)0 : ((uint64_t)1 << (c->perslab % 64)) - 1;
}

/* A page's bitmap, every chunk free, with its summary saying so. */
static _Atomic uint64_t *new_page_bits(unsigned int id)
{
    uint32_t nwords = tz.cls[id].nwords;
    _Atomic uint64_t *bits = calloc(nwords + tz.cls[id].nsummary,
                                    sizeof(*bits));
    for (uint32_t w = 0; bits != NULL && w < nwords; w++) {
        bits[nwords + w / 64] |= (uint64_t)1 << (w % 64);
    }
    return bits;
}

/* Bitmap word w of a page of class id changed to `word` (tier_lock
 * held): its summary bit follows. */
static void do_note_word(_Atomic uint64_t *bits, unsigned int id, uint32_t w,
                         uint64_t word)
{
    const struct nclass *c = &tz.cls[id];
    _Atomic uint64_t *sum = &bits[c->nwords + w / 64];
    uint64_t bit = (uint64_t)1 << (w % 64);
    uint64_t v = atomic_load_explicit(sum, memory_order_relaxed);
    v = (~word & valid_bits(c, w)) != 0 ? v | bit : v & ~bit;
    atomic_store_explicit(sum, v, memory_order_relaxed);
}

/* Page `page` becomes class id's, all of its chunks free. */
static void do_give_page(uint64_t page, unsigned int id,
                         _Atomic uint64_t *bits)
{
    unsigned int perslab = slabs_chunks_per_page(id);
    struct npage *pg = &slabs_tier_map.pages[page];
    atomic_store_explicit(&pg->clsid, (uint8_t)id, memory_order_relaxed);
    atomic_store_explicit(&pg->bits, bits, memory_order_release);
    pg->free = perslab;
    tz.bitmap_bytes += (tz.cls[id].nwords + tz.cls[id].nsummary)
        * sizeof(*bits);
    atomic_store_explicit(&tz.pages_used, page + 1, memory_order_release);
    tz.cls[id].npages++;
    tz.cls[id].free_chunks += perslab;
}

static bool do_new_page(unsigned int id)
{
    uint64_t page = atomic_load_explicit(&tz.pages_used,
                                         memory_order_relaxed);
    unsigned int perslab = slabs_chunks_per_page(id);
    if (!slabs_tier_map.active || page >= slabs_tier_map.pages_total
            || perslab == 0) {
        return false;
    }
    _Atomic uint64_t *bits = new_page_bits(id);
    if (bits == NULL) {
        return false;
    }
    /* durable before any chunk of the page can hold an item */
    nzone_set_page_class(page, id);
    do_give_page(page, id, bits);
    do_push_free_page(id, page);
    return true;
}

/* The first bitmap word of the page with a free chunk, by its summary;
 * false when the summary has none. */
static bool first_free_word(const _Atomic uint64_t *bits,
                            const struct nclass *c, uint32_t *w)
{
    for (uint32_t i = 0; i < c->nsummary; i++) {
        uint64_t sum = atomic_load_explicit(&bits[c->nwords + i],
                                            memory_order_relaxed);
        if (sum != 0) {
            *w = i * 64 + (uint32_t)__builtin_ctzll(sum);
            return *w < c->nwords;
        }
    }
    return false;
}

static bool do_alloc(unsigned int id, uint64_t *off)
{
    struct nclass *c = &tz.cls[id];
    if (c->free_head == 0 && !do_new_page(id)) {
        return false;
    }
    uint64_t page = c->free_head - 1;
    struct npage *pg = &slabs_tier_map.pages[page];
    _Atomic uint64_t *bits = atomic_load_explicit(&pg->bits,
                                                  memory_order_relaxed);
    uint32_t w;
    uint64_t freebits = 0;
    if (first_free_word(bits, c, &w)) {
        freebits = ~atomic_load_explicit(&bits[w], memory_order_relaxed)
            & valid_bits(c, w);
    }
    if (freebits == 0) {
        /* free > 0 promised a chunk: the page's counts are wrong; drop it
         * from the stack rather than loop */
        c->free_head = pg->next_free;
        pg->on_free_stack = false;
        return false;
    }
    unsigned int b = (unsigned int)__builtin_ctzll(freebits);
    uint64_t word = atomic_load_explicit(&bits[w], memory_order_relaxed)
        | ((uint64_t)1 << b);
    atomic_store_explicit(&bits[w], word, memory_order_relaxed);
    do_note_word(bits, id, w, word);
    pg->free--;
    c->free_chunks--;
    if (pg->free == 0) {
        c->free_head = pg->next_free;
        pg->on_free_stack = false;
    }
    *off = page * slabs_tier_map.page_size
        + ((uint64_t)w * 64 + b) * slabs_tier_map.chunk_size[id];
    return true;
}

bool slabs_tier_alloc(unsigned int id, uint64_t *off)
{
    if (!slabs_tier_map.active || id < POWER_SMALLEST
            || id > slabs_largest_clsid()) {
        return false;
    }
    pthread_mutex_lock(&tier_lock);
    bool ok = do_alloc(id, off);
    pthread_mutex_unlock(&tier_lock);
    return ok;
}

bool slabs_tier_can_alloc(unsigned int id)
{
    if (!slabs_tier_map.active || id < POWER_SMALLEST
            || id > slabs_largest_clsid()) {
        return false;
    }
    pthread_mutex_lock(&tier_lock);
    bool ok = tz.cls[id].free_chunks > 0
        || atomic_load(&tz.pages_used) < slabs_tier_map.pages_total;
    pthread_mutex_unlock(&tier_lock);
    return ok;
}

void slabs_tier_free(uint64_t off)
{
    uint64_t page = off / slabs_tier_map.page_size;
    if (!slabs_tier_map.active || page >= slabs_tier_map.pages_total) {
        return;
    }
    struct npage *pg = &slabs_tier_map.pages[page];
    pthread_mutex_lock(&tier_lock);
    unsigned int id = atomic_load_explicit(&pg->clsid, memory_order_relaxed);
    _Atomic uint64_t *bits = atomic_load_explicit(&pg->bits,
                                                  memory_order_relaxed);
    uint64_t chunk = (off - page * slabs_tier_map.page_size)
        / slabs_tier_map.chunk_size[id];
    uint64_t mask = (uint64_t)1 << (chunk % 64);
    uint64_t word = atomic_load_explicit(&bits[chunk / 64],
                                         memory_order_relaxed);
    if (word & mask) {
        atomic_store_explicit(&bits[chunk / 64], word & ~mask,
                              memory_order_relaxed);
        do_note_word(bits, id, (uint32_t)(chunk / 64), word & ~mask);
        pg->free++;
        tz.cls[id].free_chunks++;
        do_push_free_page(id, page);
    }
    pthread_mutex_unlock(&tier_lock);
}

bool slabs_tier_restore_chunk(uint64_t off)
{
    uint64_t page = off / slabs_tier_map.page_size;
    if (!slabs_tier_map.active || page < tz.first_page
            || page >= slabs_tier_map.pages_total) {
        return false;
    }
    struct npage *pg = &slabs_tier_map.pages[page];
    unsigned int id = atomic_load_explicit(&pg->clsid, memory_order_relaxed);
    _Atomic uint64_t *bits = atomic_load_explicit(&pg->bits,
                                                  memory_order_relaxed);
    uint64_t chunk = id == 0 ? 0
        : (off - page * slabs_tier_map.page_size) / slabs_chunk_size(id);
    bool ok = bits != NULL && chunk < slabs_chunks_per_page(id);
    uint64_t mask = (uint64_t)1 << (chunk % 64);
    if (ok && (atomic_load_explicit(&bits[chunk / 64], memory_order_relaxed)
               & mask) == 0) {
        uint64_t word = atomic_fetch_or_explicit(&bits[chunk / 64], mask,
                                                 memory_order_relaxed) | mask;
        do_note_word(bits, id, (uint32_t)(chunk / 64), word);
        pg->free--;
        tz.cls[id].free_chunks--;
    }
    return ok;
}

void slabs_tier_restore_done(void)
{
    pthread_mutex_lock(&tier_lock);
    uint64_t used = atomic_load(&tz.pages_used);
    for (uint64_t page = used; page-- > tz.first_page;) {
        struct npage *pg = &slabs_tier_map.pages[page];
        if (pg->free > 0) {
            do_push_free_page(pg->clsid, page);
        }
    }
    pthread_mutex_unlock(&tier_lock);
}

/* ---- CLOCK support ---- */

uint64_t slabs_tier_pages_used(void)
{
    return atomic_load_explicit(&tz.pages_used, memory_order_acquire);
}

size_t slabs_tier_page_size(void)
{
    return slabs_tier_map.page_size;
}

bool slabs_tier_chunk_used(uint64_t page, unsigned int chunk)
{
    _Atomic uint64_t *bits =
        atomic_load_explicit(&slabs_tier_map.pages[page].bits,
                             memory_order_acquire);
    return bits != NULL
        && (atomic_load_explicit(&bits[chunk / 64], memory_order_relaxed)
            >> (chunk % 64)) & 1;
}

bool slabs_tier_next_used(unsigned int id, uint64_t *cursor, uint64_t *off)
{
    if (!slabs_tier_map.active || id < POWER_SMALLEST
            || id > slabs_largest_clsid()) {
        return false;
    }
    unsigned int size = slabs_chunk_size(id);
    unsigned int perslab = slabs_chunks_per_page(id);
    uint64_t pages = slabs_tier_pages_used();
    uint64_t page = *cursor / slabs_tier_map.page_size;
    uint64_t chunk = (*cursor - page * slabs_tier_map.page_size + size - 1)
        / size;
    for (; page < pages; page++, chunk = 0) {
        if (atomic_load_explicit(&slabs_tier_map.pages[page].clsid,
                                 memory_order_relaxed) != id) {
            continue;
        }
        _Atomic uint64_t *bits =
            atomic_load_explicit(&slabs_tier_map.pages[page].bits,
                                 memory_order_acquire);
        for (uint64_t w = chunk / 64; bits != NULL && w * 64 < perslab;
                w++) {
            uint64_t word = atomic_load_explicit(&bits[w],
                                                 memory_order_relaxed);
            if (w == chunk / 64) {
                word &= ~(uint64_t)0 << (chunk % 64);
            }
            if (word == 0) {
                continue;
            }
            uint64_t c = w * 64 + (uint64_t)__builtin_ctzll(word);
            if (c >= perslab) {
                break;
            }
            *off = page * slabs_tier_map.page_size + c * size;
            *cursor = *off + size;
            return true;
        }
    }
    *cursor = pages * slabs_tier_map.page_size;
    return false;
}

/* ---- a page changing class ----
 * Pages are given in zone order and keep their class, with one
 * exception: a page whose chunks were all emptied by its class's owner
 * may go to another class while the zone has no free page (clock_nvm.c
 * moves pages that hold nothing but copies).  The move takes the page off
 * every free stack first, so no chunk of it is handed out meanwhile, and
 * gives it only when every chunk is free. */

bool slabs_tier_zone_full(void)
{
    return slabs_tier_map.active
        && atomic_load_explicit(&tz.pages_used, memory_order_relaxed)
           >= slabs_tier_map.pages_total;
}

/* Unlink page from class id's free stack, if it is on it. */
static void do_unstack_page(unsigned int id, uint64_t page)
{
    uint32_t *link = &tz.cls[id].free_head;
    while (*link != 0) {
        if (*link == page + 1) {
            *link = slabs_tier_map.pages[page].next_free;
            slabs_tier_map.pages[page].on_free_stack = false;
            return;
        }
        link = &slabs_tier_map.pages[*link - 1].next_free;
    }
}

bool slabs_tier_move_begin(unsigned int from, uint64_t *page)
{
    if (!slabs_tier_map.active || from < POWER_SMALLEST
            || from > slabs_largest_clsid()) {
        return false;
    }
    bool found = false;
    pthread_mutex_lock(&tier_lock);
    uint64_t used = atomic_load_explicit(&tz.pages_used,
                                         memory_order_relaxed);
    for (uint64_t p = tz.first_page; p < used && !found; p++) {
        struct npage *pg = &slabs_tier_map.pages[p];
        if (!pg->moving && atomic_load_explicit(&pg->clsid,
                                                memory_order_relaxed) == from) {
            do_unstack_page(from, p);
            pg->moving = true;
            *page = p;
            found = true;
        }
    }
    pthread_mutex_unlock(&tier_lock);
    return found;
}

bool slabs_tier_move_emptied(uint64_t page)
{
    pthread_mutex_lock(&tier_lock);
    struct npage *pg = &slabs_tier_map.pages[page];
    unsigned int id = atomic_load_explicit(&pg->clsid, memory_order_relaxed);
    bool empty = pg->moving && pg->free == tz.cls[id].perslab;
    pthread_mutex_unlock(&tier_lock);
    return empty;
}

bool slabs_tier_move_end(uint64_t page, unsigned int to)
{
    /* a page's class changes only under the move, so this read holds */
    unsigned int from = atomic_load_explicit(&slabs_tier_map.pages[page].clsid,
                                             memory_order_relaxed);
    struct retired_bits *r = to != from ? malloc(sizeof(*r)) : NULL;
    _Atomic uint64_t *bits = r != NULL ? new_page_bits(to) : NULL;
    pthread_mutex_lock(&tier_lock);
    struct npage *pg = &slabs_tier_map.pages[page];
    struct nclass *old = &tz.cls[from];
    bool moved = bits != NULL && pg->moving
        && pg->free == old->perslab;
    pg->moving = false;
    if (moved) {
        /* durable before any chunk of the page can hold a `to` item */
        nzone_set_page_class(page, to);
        r->bits = atomic_load_explicit(&pg->bits, memory_order_relaxed);
        r->next = tz.retired;
        tz.retired = r;
        tz.bitmap_bytes -= (old->nwords + old->nsummary) * sizeof(*bits);
        old->npages--;
        old->free_chunks -= old->perslab;
        struct nclass *c = &tz.cls[to];
        atomic_store_explicit(&pg->clsid, (uint8_t)to, memory_order_relaxed);
        atomic_store_explicit(&pg->bits, bits, memory_order_release);
        pg->free = c->perslab;
        tz.bitmap_bytes += (c->nwords + c->nsummary) * sizeof(*bits);
        c->npages++;
        c->free_chunks += c->perslab;
        do_push_free_page(to, page);
    } else if (pg->free > 0) {
        do_push_free_page(from, page);
    }
    pthread_mutex_unlock(&tier_lock);
    if (!moved) {
        free((void *)bits);
        free(r);
    }
    return moved;
}

/* ---- accounting ---- */

void slabs_tier_get_totals(struct slabs_tier_totals *out)
{
    pthread_mutex_lock(&tier_lock);
    out->pages_total = slabs_tier_map.pages_total - tz.first_page;
    out->pages_used = atomic_load(&tz.pages_used) - tz.first_page;
    out->zone_limit = out->pages_total * slabs_tier_map.page_size;
    out->zone_used = out->pages_used * slabs_tier_map.page_size;
    out->bitmap_bytes = tz.bitmap_bytes;
    pthread_mutex_unlock(&tier_lock);
}

bool slabs_tier_class_has_pages(unsigned int id)
{
    return id < MAX_NUMBER_OF_SLAB_CLASSES
        && atomic_load_explicit(&tz.cls[id].npages, memory_order_relaxed) > 0;
}

unsigned int slabs_tier_class_pages(unsigned int id)
{
    if (id >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return 0;
    }
    pthread_mutex_lock(&tier_lock);
    unsigned int n = tz.cls[id].npages;
    pthread_mutex_unlock(&tier_lock);
    return n;
}

uint64_t slabs_tier_class_free_chunks(unsigned int id)
{
    if (id >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return 0;
    }
    pthread_mutex_lock(&tier_lock);
    uint64_t n = tz.cls[id].free_chunks;
    pthread_mutex_unlock(&tier_lock);
    return n;
}
