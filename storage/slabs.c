/*
 * slabs.c: slab classes, their pages and free lists; page reassignment.
 *
 * Owns:
 *   - the class table (chunk size and chunks per page of each class),
 *   - per class and zone: the pages and the free list (struct slab_pool),
 *   - the memory budget (-m, -L preallocation: a region, and a first page
 *     per class from it, cache_memlimit),
 *   - with -e, the memory file's mapping as the page region, and its page
 *     table: saved at a graceful stop and adopted at start-up so that the
 *     pages come back to their classes (memfile.c keeps the file,
 *     items_restore_d.c the items in it; doc/restart.md),
 *   - the global page pool (pages reassigned to class 0; slabs_automove.c
 *     returns free pages to it),
 *   - the rebalance thread (the page mover) that moves one page between
 *     classes, for `slabs reassign`, tier_reassign.c and slabs_automove.c;
 *     items.c's evictor demotes, evicts or (for the automover's moves by
 *     hits) rescues the page's items.  A page whose chunks do not all
 *     come back within REBAL_BUSY_LIMIT_MS stays with its class.
 *
 * Locks:
 *   - slabs_lock guards everything above.  It is a leaf for the request
 *     path: nothing else is locked while it is held, except that the
 *     rebalance thread calls the page evictor (items.c) with it released.
 *   - rebalance state (rebal, and rebal_thr: the thread started, stopped
 *     and woken by bg_thread.c) is guarded by slabs_lock too; the thread
 *     sleeps on it.
 *
 * Chunks are items: a free chunk keeps the free-list links in the item
 * header's next/prev and ITEM_SLABBED in it_flags, all under slabs_lock.
 * Once allocated, a chunk's header belongs to items.c: slabs.c never reads
 * it (a page move learns which chunks are free from the free lists and
 * slabs_free, not from headers).
 *
 * `stats slabs` counts each class's pages and chunks in both zones
 * (N pages from the callback slabs_tier.c registers while it has a zone,
 * slabs_set_n_pages: the slabs call nothing of the N-zone), and
 * total_malloced both zones' pages (doc/tiering.md "Stats with two
 * zones").
 *
 * dram_node=N (settings.nvm.dram_node >= 0) binds every D page to NUMA
 * node N as it is allocated (the -L region at start-up).
 *
 * Sizing follows memcached's ladder (build_classes), from memcached's item
 * header (MEMCACHED_ITEM_HEADER, not ours), so that the classes have its
 * ids and chunk sizes; above its largest class (slab_chunk_max) one more
 * class of exactly item_size_max holds the items memcached would split
 * into chunks (no chunked items here).
 */
#include "config.h"
#include "slabs.h"

#include "bg_thread.h"
#include "item.h"
#include "nvm.h"
#include "settings.h"
#include "slab_class.h"
#include "stat_counter.h"
#include "stat_line.h"
#include "storage_worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* The pages and free chunks one class holds in one zone. */
struct slab_pool {
    item *free_list;              /* doubly linked through next/prev */
    unsigned int free_count;
    char **pages;
    unsigned int npages;
    unsigned int pages_cap;
};

typedef struct {
    unsigned int size;            /* chunk size in bytes */
    unsigned int perslab;         /* chunks per page */
    struct slab_pool pool[SLAB_ZONES];
} slabclass_t;

/* Where a zone's pages come from and how many it may have. */
struct zone_memory {
    size_t limit;
    size_t malloced;
    char *prealloc_base;          /* -L or -e: one region, carved page by
                                     page */
    size_t prealloc_size;
    size_t prealloc_used;
    bool region_is_file;          /* -e: memfile.c's mapping, not ours */
};

/* -e: the memory file's mapping, given by slabs_set_page_region for the
 * next slabs_init. */
static struct {
    char *base;
    size_t size;
} file_region;

/* -e: the durable page table in the memory file (memfile_durable.c), one
 * byte per region page naming its owner, written as pages change owner
 * so that a crash finds every page's class (doc/restart.md "Crash
 * recovery of the memory file").  NULL until slabs_region_track. */
static uint8_t *page_owners;
static unsigned int page_owner_count;

static slabclass_t slabclass[MAX_NUMBER_OF_SLAB_CLASSES];
static unsigned int power_largest;
static size_t page_size;
static struct zone_memory zone_mem[SLAB_ZONES];
static pthread_mutex_t slabs_lock = PTHREAD_MUTEX_INITIALIZER;

/* Pages given back to nobody (slabs reassign N 0); new pages come from here
 * before new memory is allocated. */
static struct slab_pool global_pool;

static struct {
    uint64_t slabs_moved;
    uint64_t reassign_evictions;
    uint64_t reassign_busy_items;
    uint64_t reassign_busy_aborts;
    uint64_t malloc_fails;
} slab_counters;

/* How long a page move waits for chunks still in use once the evictor has
 * been through its page, before it gives up and leaves the page with its
 * class.  A chunk can stay taken for as long as a client likes (a set
 * whose value stops half way holds its chunk until the rest arrives), so
 * without a bound one stalled client would block every later move;
 * memcached 1.6.18 waits indefinitely there (doc/protocol.md).  Items the
 * evictor demoted or evicted meanwhile stay where it put them. */
#define REBAL_BUSY_LIMIT_MS 2000

/* One page move at a time. */
static struct {
    bool requested;               /* slabs_reassign asked, thread not done */
    bool moving;                  /* page chosen, waiting for its chunks */
    int src;
    int dst;
    char *start;                  /* the page being emptied */
    char *end;
    struct slab_pool back;        /* its chunks no longer in use (free
                                     list only, no pages) */
    unsigned int next_src;        /* round robin for src == -1 */
    bool free_page_only;          /* move only a page with no item in it */
    bool rescue;                  /* the evictor rescues live items */
} rebal;

static struct bg_thread rebal_thr = BG_THREAD_INIT("mc-slabmaint", &slabs_lock);
static pthread_cond_t rebal_idle_cond = PTHREAD_COND_INITIALIZER;
static slabs_page_evictor page_evictor;
static slabs_n_pages_fn n_pages_of;           /* slabs_lock */

/* ---- class table ---- */

static unsigned int align_chunk(size_t size)
{
    if (size % CHUNK_ALIGN_BYTES) {
        size += CHUNK_ALIGN_BYTES - (size % CHUNK_ALIGN_BYTES);
    }
    return (unsigned int)size;
}

/* memcached's ladder: from its item header + -n, each class -f times the
 * last (truncated, then rounded up to 8 bytes), while below
 * slab_chunk_max / -f; then a class of exactly slab_chunk_max, its
 * largest.  memcached stores larger items in chunks of that class; here
 * every item is one chunk, so one more class of exactly -I holds them
 * (doc/protocol.md "Storage"). */
static void build_classes(double factor)
{
    size_t item_max = (size_t)settings.item_size_max;
    size_t chunk_max = (size_t)settings.slab_chunk_size_max < item_max
        ? (size_t)settings.slab_chunk_size_max : item_max;
    size_t size = MEMCACHED_ITEM_HEADER + (size_t)settings.chunk_size;
    unsigned int id = POWER_SMALLEST;

    /* ids end at 63, as memcached's; the largest class's is kept, and the
     * -I class's where there is one */
    unsigned int kept = item_max > chunk_max ? 2 : 1;
    for (; id < MAX_NUMBER_OF_SLAB_CLASSES - 1 - kept; id++) {
        if ((double)size >= (double)chunk_max / factor) {
            break;
        }
        unsigned int chunk = align_chunk(size);
        slabclass[id].size = chunk;
        slabclass[id].perslab = (unsigned int)(page_size / chunk);
        size = (size_t)((double)chunk * factor);
        /* a factor close to 1 would repeat a size (memcached repeats it) */
        if (size <= chunk) {
            size = chunk + CHUNK_ALIGN_BYTES;
        }
    }
    slabclass[id].size = (unsigned int)chunk_max;
    slabclass[id].perslab = (unsigned int)(page_size / chunk_max);
    if (item_max > chunk_max) {
        id++;
        slabclass[id].size = (unsigned int)item_max;
        slabclass[id].perslab = (unsigned int)(page_size / item_max);
    }
    power_largest = id;
}

/* -vv, as memcached lists its classes at start-up */
static void print_classes(void)
{
    for (unsigned int id = POWER_SMALLEST; id <= power_largest; id++) {
        fprintf(stderr, "slab class %3u: chunk size %9u perslab %7u\n", id,
                slabclass[id].size, slabclass[id].perslab);
    }
}

unsigned int slabs_largest_clsid(void)
{
    return power_largest;
}

unsigned int slabs_chunk_size(unsigned int id)
{
    if (id < POWER_SMALLEST || id > power_largest) {
        return 0;
    }
    return slabclass[id].size;
}

unsigned int slabs_chunks_per_page(unsigned int id)
{
    if (id < POWER_SMALLEST || id > power_largest) {
        return 0;
    }
    return slabclass[id].perslab;
}

size_t slabs_page_size(void)
{
    return page_size;
}

unsigned int slabs_clsid(size_t size)
{
    if (size == 0 || power_largest == 0) {
        return 0;
    }
    /* Binary search: sizes increase with the id. */
    unsigned int lo = POWER_SMALLEST, hi = power_largest;
    if (size > slabclass[hi].size) {
        return 0;
    }
    while (lo < hi) {
        unsigned int mid = lo + (hi - lo) / 2;
        if (slabclass[mid].size >= size) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

/* ---- page memory ---- */

/* dram_node=N: bind D memory to node N (a failure leaves the memory where
 * the kernel put it and says so once). */
static void bind_dram(void *addr, size_t len)
{
    static bool warned;
    char err[256];
    int node = settings.nvm.dram_node;
    if (node >= 0 && nvm_bind_dram(addr, len, node, err, sizeof(err)) != 0
            && !warned) {
        warned = true;
        fprintf(stderr, "Warning: D-zone pages not bound: %s\n", err);
    }
}

/* A page's memory: page aligned when it is to be bound to a node. */
static char *page_alloc(void)
{
    if (settings.nvm.dram_node < 0) {
        return malloc(page_size);
    }
    void *p = NULL;
    if (posix_memalign(&p, 4096, page_size) != 0) {
        return NULL;
    }
    bind_dram(p, page_size);
    return p;
}

/* Best effort: -L asks for large pages, the kernel may decline. */
static void advise_large_pages(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
    (void)madvise(p, size, MADV_HUGEPAGE);
#endif
}

static char *prealloc_region(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return NULL;
    }
    advise_large_pages(p, size);
    return p;
}

void slabs_set_page_region(void *base, size_t size)
{
    file_region.base = base;
    file_region.size = size;
}

/* The region pages are carved from: the memory file's, else with -L an
 * anonymous one, else none (pages are malloc'd one by one). */
static void setup_region(struct zone_memory *zm, size_t limit, bool prealloc)
{
    if (file_region.base != NULL) {
        zm->prealloc_base = file_region.base;
        zm->prealloc_size = file_region.size;
        zm->region_is_file = true;
        if (prealloc) {
            advise_large_pages(file_region.base, file_region.size);
        }
        bind_dram(file_region.base, file_region.size);
        return;
    }
    if (!prealloc || limit == 0) {
        return;
    }
    char *base = prealloc_region(limit);
    if (base == NULL) {
        fprintf(stderr, "Warning: failed to preallocate %zu bytes (%s);"
                " allocating pages on demand\n", limit, strerror(errno));
        return;
    }
    zm->prealloc_base = base;
    zm->prealloc_size = limit;
    bind_dram(base, limit);
}

void slabs_init(size_t limit, double factor, bool prealloc)
{
    memset(slabclass, 0, sizeof(slabclass));
    memset(zone_mem, 0, sizeof(zone_mem));
    memset(&global_pool, 0, sizeof(global_pool));
    memset(&slab_counters, 0, sizeof(slab_counters));
    memset(&rebal, 0, sizeof(rebal));

    page_size = (size_t)settings.slab_page_size;
    if (page_size < (size_t)settings.item_size_max) {
        page_size = (size_t)settings.item_size_max;
    }
    build_classes(factor);
    if (settings.verbose > 1) {
        print_classes();
    }

    zone_mem[SLAB_ZONE_DRAM].limit = limit;
    setup_region(&zone_mem[SLAB_ZONE_DRAM], limit, prealloc);
}

static void pool_release_pages(struct slab_pool *p, bool from_malloc)
{
    for (unsigned int i = 0; i < p->npages; i++) {
        if (from_malloc) {
            free(p->pages[i]);
        }
    }
    free(p->pages);
    memset(p, 0, sizeof(*p));
}

void slabs_destroy(void)
{
    struct zone_memory *zm = &zone_mem[SLAB_ZONE_DRAM];
    bool from_malloc = zm->prealloc_base == NULL;

    slabs_stop_rebalance_thread();
    for (unsigned int id = POWER_SMALLEST; id <= power_largest; id++) {
        pool_release_pages(&slabclass[id].pool[SLAB_ZONE_DRAM], from_malloc);
    }
    pool_release_pages(&global_pool, from_malloc);
    if (zm->prealloc_base != NULL && !zm->region_is_file) {
        munmap(zm->prealloc_base, zm->prealloc_size);
    }
    memset(zm, 0, sizeof(*zm));
    memset(&file_region, 0, sizeof(file_region));
    page_owners = NULL;
    page_owner_count = 0;
    power_largest = 0;
}

/* A new page for a class that already has `class_pages` pages.  Like
 * memcached, a class's first page is granted even past the limit so that
 * every class can store at least something; with -L the region bounds
 * everything. */
static char *do_page_memory(enum slab_zone zone, unsigned int class_pages)
{
    struct zone_memory *zm = &zone_mem[zone];

    if (zm->prealloc_base != NULL) {
        if (zm->prealloc_used + page_size > zm->prealloc_size) {
            return NULL;
        }
        char *page = zm->prealloc_base + zm->prealloc_used;
        zm->prealloc_used += page_size;
        zm->malloced += page_size;
        return page;
    }
    if (zm->limit != 0 && zm->malloced + page_size > zm->limit
            && class_pages > 0) {
        return NULL;
    }
    char *page = page_alloc();
    if (page == NULL) {
        slab_counters.malloc_fails++;
        return NULL;
    }
    zm->malloced += page_size;
    return page;
}

static bool pool_add_page(struct slab_pool *p, char *page)
{
    if (p->npages == p->pages_cap) {
        unsigned int cap = p->pages_cap ? p->pages_cap * 2 : 16;
        char **grown = realloc(p->pages, cap * sizeof(*grown));
        if (grown == NULL) {
            return false;
        }
        p->pages = grown;
        p->pages_cap = cap;
    }
    p->pages[p->npages++] = page;
    return true;
}

static void freelist_push(struct slab_pool *p, item *it)
{
    it->it_flags = ITEM_SLABBED;
    it->slabs_clsid = 0;
    it->prev = NULL;
    it->next = p->free_list;
    if (it->next != NULL) {
        it->next->prev = it;
    }
    p->free_list = it;
    p->free_count++;
}

static void freelist_remove(struct slab_pool *p, item *it)
{
    if (it->prev != NULL) {
        it->prev->next = it->next;
    } else {
        p->free_list = it->next;
    }
    if (it->next != NULL) {
        it->next->prev = it->prev;
    }
    it->next = it->prev = NULL;
    p->free_count--;
}

/* Put every chunk of a fresh (or emptied) page on the class's free list. */
static void carve_page(slabclass_t *cls, struct slab_pool *p, char *page)
{
    memset(page, 0, page_size);
    /* Pushed in reverse so chunks are handed out in address order. */
    for (unsigned int i = cls->perslab; i-- > 0;) {
        freelist_push(p, (item *)(page + (size_t)i * cls->size));
    }
}

/* A region page's new owner (0: none, or the global pool), once none of
 * its chunks holds a sealed item of another class: carve_page has
 * cleared it, or a move has emptied it. */
static void note_page_owner(const char *page, unsigned int clsid)
{
    const struct zone_memory *zm = &zone_mem[SLAB_ZONE_DRAM];
    if (page_owners == NULL || page < zm->prealloc_base
            || page >= zm->prealloc_base + zm->prealloc_size) {
        return;
    }
    size_t index = (size_t)(page - zm->prealloc_base) / page_size;
    if (index < page_owner_count) {
        /* the page's cleared chunks are in the file before it is
         * declared theirs */
        atomic_signal_fence(memory_order_seq_cst);
        page_owners[index] = (uint8_t)clsid;
    }
}

static bool do_slabs_newslab(unsigned int id, enum slab_zone zone)
{
    slabclass_t *cls = &slabclass[id];
    struct slab_pool *p = &cls->pool[zone];
    char *page = NULL;
    bool reused = false;

    if (zone == SLAB_ZONE_DRAM && global_pool.npages > 0) {
        page = global_pool.pages[--global_pool.npages];
        reused = true;
    } else {
        page = do_page_memory(zone, p->npages);
    }
    if (page == NULL) {
        return false;
    }
    if (!pool_add_page(p, page)) {
        if (reused) {
            global_pool.npages++;
        } else if (zone_mem[zone].prealloc_base == NULL) {
            /* Only malloc'd pages can be handed back; a carved -L page
             * stays counted (this needs a failed realloc of a few bytes). */
            free(page);
            zone_mem[zone].malloced -= page_size;
        }
        slab_counters.malloc_fails++;
        return false;
    }
    carve_page(cls, p, page);
    if (zone == SLAB_ZONE_DRAM) {
        note_page_owner(page, id);
    }
    return true;
}

/* The first chunk of a non-empty free list, blank for its new item
 * (it_flags and refcount 0, as slabs_alloc promises). */
static item *do_take_free_chunk(struct slab_pool *p)
{
    item *it = p->free_list;
    freelist_remove(p, it);
    it->it_flags = 0;
    atomic_store_explicit(&it->refcount, 0, memory_order_relaxed);
    return it;
}

static void *do_slabs_alloc(size_t size, unsigned int id, enum slab_zone zone)
{
    if (id < POWER_SMALLEST || id > power_largest
            || size > slabclass[id].size) {
        return NULL;
    }
    struct slab_pool *p = &slabclass[id].pool[zone];
    if (p->free_list == NULL && !do_slabs_newslab(id, zone)) {
        return NULL;
    }
    return do_take_free_chunk(p);
}

void *slabs_alloc(size_t size, unsigned int id)
{
    pthread_mutex_lock(&slabs_lock);
    void *ret = do_slabs_alloc(size, id, SLAB_ZONE_DRAM);
    pthread_mutex_unlock(&slabs_lock);
    return ret;
}

/* A store's victims can all lie on the page a move is emptying (its
 * oldest page: oldest items sit at the queue tails), whose chunks the
 * move keeps (do_slabs_free), so the store would find no chunk where
 * memcached, whose mover takes a free chunk off the free list only when
 * its walk reaches it, stores.  The store takes one of them back; the
 * page evictor's next pass empties it again (items_evict_page). */
void *slabs_alloc_from_move(size_t size, unsigned int id)
{
    item *it = NULL;
    pthread_mutex_lock(&slabs_lock);
    if (rebal.moving && rebal.src == (int)id
            && rebal.back.free_list != NULL && size <= slabclass[id].size) {
        it = do_take_free_chunk(&rebal.back);
    }
    pthread_mutex_unlock(&slabs_lock);
    return it;
}

static bool chunk_in_moving_page(const void *ptr)
{
    return rebal.moving && (const char *)ptr >= rebal.start
        && (const char *)ptr < rebal.end;
}

static void do_slabs_free(void *ptr, unsigned int id, enum slab_zone zone)
{
    item *it = ptr;
    if (chunk_in_moving_page(ptr)) {
        /* The page is being emptied: keep the chunk off the class's free
         * list so nobody allocates it again; it is back for the move. */
        freelist_push(&rebal.back, it);
        return;
    }
    freelist_push(&slabclass[id].pool[zone], it);
}

void slabs_free(void *ptr, size_t size, unsigned int id)
{
    if (ptr == NULL || id < POWER_SMALLEST || id > power_largest) {
        return;
    }
    pthread_mutex_lock(&slabs_lock);
    do_slabs_free(ptr, id, SLAB_ZONE_DRAM);
    pthread_mutex_unlock(&slabs_lock);
}

bool slabs_adjust_mem_limit(size_t new_mem_limit)
{
    pthread_mutex_lock(&slabs_lock);
    bool ok = zone_mem[SLAB_ZONE_DRAM].prealloc_base == NULL;
    if (ok) {
        /* Lowering the limit below what is allocated frees nothing; it
         * stops growth until reassignment or eviction catch up, as in
         * memcached. */
        zone_mem[SLAB_ZONE_DRAM].limit = new_mem_limit;
        settings.maxbytes = new_mem_limit;
    }
    pthread_mutex_unlock(&slabs_lock);
    return ok;
}

/* ---- preallocation (-L, -e) ---- */

bool slabs_preallocate(size_t *needed)
{
    struct zone_memory *zm = &zone_mem[SLAB_ZONE_DRAM];
    bool ok = true;

    pthread_mutex_lock(&slabs_lock);
    *needed = (size_t)(power_largest - POWER_SMALLEST + 1) * page_size;
    /* -e carves the memory file as classes need pages: a page for every
     * class up front would leave the classes in use a third less of -m */
    if (zm->prealloc_base != NULL && zm->prealloc_used == 0
            && !zm->region_is_file) {
        ok = zm->prealloc_size >= *needed;
        for (unsigned int id = POWER_SMALLEST; ok && id <= power_largest;
                id++) {
            ok = do_slabs_newslab(id, SLAB_ZONE_DRAM);
        }
        if (!ok && zm->prealloc_used == 0 && !zm->region_is_file) {
            /* -L too small: pages come from malloc, as without -L */
            munmap(zm->prealloc_base, zm->prealloc_size);
            zm->prealloc_base = NULL;
            zm->prealloc_size = 0;
        }
    }
    pthread_mutex_unlock(&slabs_lock);
    return ok;
}

/* ---- the region's page table (-e, doc/restart.md) ---- */

/* Region pages are numbered from its start. */
static uint32_t region_page_index(const struct zone_memory *zm,
                                  const char *page)
{
    return (uint32_t)((size_t)(page - zm->prealloc_base) / page_size);
}

static void list_pool_pages(const struct zone_memory *zm,
                            const struct slab_pool *p, unsigned int clsid,
                            struct slabs_region_page *out, unsigned int *n)
{
    for (unsigned int i = 0; i < p->npages; i++) {
        out[*n].index = region_page_index(zm, p->pages[i]);
        out[*n].clsid = clsid;
        (*n)++;
    }
}

bool slabs_region_pages(struct slabs_region_page **out, unsigned int *npages,
                        unsigned int *carved)
{
    struct zone_memory *zm = &zone_mem[SLAB_ZONE_DRAM];
    bool ok = true;

    *out = NULL;
    *npages = 0;
    pthread_mutex_lock(&slabs_lock);
    *carved = (unsigned int)(zm->prealloc_used / page_size);
    size_t total = global_pool.npages;
    for (unsigned int id = POWER_SMALLEST; id <= power_largest; id++) {
        total += slabclass[id].pool[SLAB_ZONE_DRAM].npages;
    }
    if (zm->prealloc_base != NULL && total > 0) {
        *out = malloc(total * sizeof(**out));
        ok = *out != NULL;
    }
    if (*out != NULL) {
        list_pool_pages(zm, &global_pool, 0, *out, npages);
        for (unsigned int id = POWER_SMALLEST; id <= power_largest; id++) {
            list_pool_pages(zm, &slabclass[id].pool[SLAB_ZONE_DRAM], id,
                            *out, npages);
        }
    }
    pthread_mutex_unlock(&slabs_lock);
    return ok;
}

/* Checks an earlier run's table against this region and class table;
 * counts the pages of each owner (0: the global pool) in per_owner. */
static bool region_table_fits(const struct zone_memory *zm,
                              const struct slabs_region_page *pages,
                              unsigned int npages, unsigned int carved,
                              unsigned int *per_owner, char *err,
                              size_t errlen)
{
    if (zm->prealloc_base == NULL || zm->prealloc_used != 0) {
        snprintf(err, errlen, "no fresh page region to restore into");
        return false;
    }
    if ((size_t)carved > zm->prealloc_size / page_size) {
        snprintf(err, errlen, "%u pages carved, the region holds %zu",
                 carved, zm->prealloc_size / page_size);
        return false;
    }
    uint8_t *seen = calloc(carved + 1, 1);
    if (seen == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    bool ok = true;
    for (unsigned int i = 0; i < npages && ok; i++) {
        uint32_t index = pages[i].index, clsid = pages[i].clsid;
        if (index >= carved || seen[index]) {
            snprintf(err, errlen, "page %u listed twice or past the %u "
                     "carved", index, carved);
            ok = false;
        } else if (clsid > power_largest) {
            snprintf(err, errlen, "page %u of unknown class %u", index,
                     clsid);
            ok = false;
        } else {
            seen[index] = 1;
            per_owner[clsid]++;
        }
    }
    free(seen);
    return ok;
}

/* Room for `count` pages in p's list, in one allocation. */
static bool pool_reserve(struct slab_pool *p, unsigned int count)
{
    if (count == 0) {
        return true;
    }
    p->pages = malloc(count * sizeof(*p->pages));
    p->pages_cap = p->pages != NULL ? count : 0;
    return p->pages != NULL;
}

static struct slab_pool *owner_pool(unsigned int clsid)
{
    return clsid == 0 ? &global_pool : &slabclass[clsid].pool[SLAB_ZONE_DRAM];
}

static void do_release_owner_lists(void)
{
    for (unsigned int id = 0; id <= power_largest; id++) {
        struct slab_pool *p = owner_pool(id);
        free(p->pages);
        memset(p, 0, sizeof(*p));
    }
}

bool slabs_region_adopt(const struct slabs_region_page *pages,
                        unsigned int npages, unsigned int carved,
                        char *err, size_t errlen)
{
    struct zone_memory *zm = &zone_mem[SLAB_ZONE_DRAM];
    unsigned int per_owner[MAX_NUMBER_OF_SLAB_CLASSES] = { 0 };
    bool ok;

    pthread_mutex_lock(&slabs_lock);
    ok = region_table_fits(zm, pages, npages, carved, per_owner, err,
                           errlen);
    /* nothing carved yet (region_table_fits): every owner is empty */
    for (unsigned int id = 0; ok && id <= power_largest; id++) {
        ok = pool_reserve(owner_pool(id), per_owner[id]);
        if (!ok) {
            snprintf(err, errlen, "out of memory for the page lists");
        }
    }
    if (ok) {
        for (unsigned int i = 0; i < npages; i++) {
            struct slab_pool *p = owner_pool(pages[i].clsid);
            p->pages[p->npages++] = zm->prealloc_base
                + (size_t)pages[i].index * page_size;
        }
        zm->prealloc_used = (size_t)carved * page_size;
        zm->malloced = zm->prealloc_used;
    } else {
        do_release_owner_lists();
    }
    pthread_mutex_unlock(&slabs_lock);
    return ok;
}

void slabs_region_sort_chunks(slabs_chunk_keep keep, void *arg)
{
    /* Start-up: nothing else changes the page lists meanwhile.  keep()
     * runs without the slabs lock so that it may take others.  Pages and
     * chunks go last first, so that the free lists hand chunks out in
     * address order, as after carve_page. */
    for (unsigned int id = POWER_SMALLEST; id <= power_largest; id++) {
        slabclass_t *cls = &slabclass[id];
        struct slab_pool *p = &cls->pool[SLAB_ZONE_DRAM];
        for (unsigned int n = p->npages; n-- > 0;) {
            for (unsigned int i = cls->perslab; i-- > 0;) {
                item *chunk = (item *)(p->pages[n] + (size_t)i * cls->size);
                if (keep(chunk, id, arg)) {
                    continue;
                }
                pthread_mutex_lock(&slabs_lock);
                freelist_push(p, chunk);
                pthread_mutex_unlock(&slabs_lock);
            }
        }
    }
}

static void mark_pool_owner(uint8_t *owner, const struct zone_memory *zm,
                            const struct slab_pool *p, unsigned int clsid,
                            unsigned int count)
{
    for (unsigned int i = 0; i < p->npages; i++) {
        uint32_t index = region_page_index(zm, p->pages[i]);
        if (index < count) {
            owner[index] = (uint8_t)clsid;
        }
    }
}

bool slabs_region_track(uint8_t *table, unsigned int count)
{
    struct zone_memory *zm = &zone_mem[SLAB_ZONE_DRAM];
    uint8_t *owner = calloc(count ? count : 1, 1);
    if (owner == NULL) {
        return false;
    }
    pthread_mutex_lock(&slabs_lock);
    for (unsigned int id = POWER_SMALLEST; id <= power_largest; id++) {
        mark_pool_owner(owner, zm, &slabclass[id].pool[SLAB_ZONE_DRAM], id,
                        count);
    }
    /* each entry written once, with what it must hold: a kill meanwhile
     * leaves every entry either as it was or as it is now */
    for (unsigned int i = 0; i < count; i++) {
        if (table[i] != owner[i]) {
            table[i] = owner[i];
        }
    }
    page_owners = table;
    page_owner_count = count;
    pthread_mutex_unlock(&slabs_lock);
    free(owner);
    return true;
}

/* ---- page reassignment ---- */

static int pick_any_source(int dst)
{
    for (unsigned int tries = 0; tries < power_largest; tries++) {
        unsigned int id = rebal.next_src++ % power_largest + POWER_SMALLEST;
        if ((int)id != dst
                && slabclass[id].pool[SLAB_ZONE_DRAM].npages > 1) {
            return (int)id;
        }
    }
    return -1;
}

static enum reassign_result_type request_move(int src, int dst,
                                              bool free_page_only,
                                              bool rescue)
{
    enum reassign_result_type ret = REASSIGN_OK;

    /* memcached's order of checks and replies: the same class first, then
     * -1 resolved to a class with pages to spare (none: BADCLASS), then
     * the range, where class 0 is the global page pool (no page is moved
     * out of it here: any class takes its pages when it needs one) */
    pthread_mutex_lock(&slabs_lock);
    if (src == -1 && dst != -1) {
        src = pick_any_source(dst);
    }
    if (rebal.requested) {
        ret = REASSIGN_RUNNING;
    } else if (src == dst) {
        ret = REASSIGN_SRC_DST_SAME;
    } else if (dst < 0 || dst > (int)power_largest || src < 0
            || src > (int)power_largest) {
        ret = REASSIGN_BADCLASS;
    } else {
        if (src == 0 || slabclass[src].pool[SLAB_ZONE_DRAM].npages < 2) {
            ret = REASSIGN_NOSPARE;
        } else {
            rebal.requested = true;
            rebal.src = src;
            rebal.dst = dst;
            rebal.free_page_only = free_page_only;
            rebal.rescue = rescue;
            do_bg_thread_wake(&rebal_thr);
        }
    }
    pthread_mutex_unlock(&slabs_lock);
    return ret;
}

enum reassign_result_type slabs_reassign(int src, int dst)
{
    return request_move(src, dst, false, false);
}

enum reassign_result_type slabs_reassign_free_page(int src, int dst)
{
    return request_move(src, dst, true, false);
}

enum reassign_result_type slabs_reassign_rescuing(int src, int dst)
{
    return request_move(src, dst, false, true);
}

static int compare_pages(const void *a, const void *b)
{
    const char *pa = *(char *const *)a, *pb = *(char *const *)b;
    return pa < pb ? -1 : pa > pb;
}

/* A page of p none of whose chunks holds an item (every one is on the
 * free list), or NULL.  The pages are sorted by address in a copy so that
 * each free chunk finds its page by bisection. */
static char *do_find_free_page(const slabclass_t *cls,
                               const struct slab_pool *p)
{
    if (p->free_count < cls->perslab || p->npages == 0) {
        return NULL;
    }
    char **sorted = malloc(p->npages * sizeof(*sorted));
    unsigned int *free_in = calloc(p->npages, sizeof(*free_in));
    char *found = NULL;
    if (sorted != NULL && free_in != NULL) {
        memcpy(sorted, p->pages, p->npages * sizeof(*sorted));
        qsort(sorted, p->npages, sizeof(*sorted), compare_pages);
        for (item *it = p->free_list; it != NULL && found == NULL;
                it = it->next) {
            unsigned int lo = 0, hi = p->npages;
            while (hi - lo > 1) {
                unsigned int mid = lo + (hi - lo) / 2;
                if (sorted[mid] <= (char *)it) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            if (++free_in[lo] == cls->perslab) {
                found = sorted[lo];
            }
        }
    }
    free(sorted);
    free(free_in);
    return found;
}

/* Choose the source page and take its free chunks off the free list;
 * from now on do_slabs_free diverts the page's chunks.  A page without
 * items goes first (nothing is evicted for it); else the first page, or,
 * for a free-page-only move, none: false. */
static bool do_rebalance_begin(void)
{
    slabclass_t *cls = &slabclass[rebal.src];
    struct slab_pool *p = &cls->pool[SLAB_ZONE_DRAM];

    char *page = do_find_free_page(cls, p);
    if (page == NULL && (rebal.free_page_only || p->npages < 2)) {
        return false;
    }
    rebal.start = page != NULL ? page : p->pages[0];
    rebal.end = rebal.start + (size_t)cls->perslab * cls->size;
    memset(&rebal.back, 0, sizeof(rebal.back));
    rebal.moving = true;

    item *it = p->free_list;
    while (it != NULL) {
        item *next = it->next;
        if ((char *)it >= rebal.start && (char *)it < rebal.end) {
            freelist_remove(p, it);
            freelist_push(&rebal.back, it);
        }
        it = next;
    }
    return true;
}

static unsigned int pool_page_index(const struct slab_pool *p,
                                    const char *page)
{
    unsigned int i = 0;
    while (i < p->npages && p->pages[i] != page) {
        i++;
    }
    return i;
}

/* The move ends: no more diverting of the page's chunks, and the next
 * slabs_reassign may start. */
static void do_rebalance_end(void)
{
    rebal.moving = false;
    rebal.start = rebal.end = NULL;
    memset(&rebal.back, 0, sizeof(rebal.back));
    rebal.requested = false;
    pthread_cond_broadcast(&rebal_idle_cond);
}

/* Some chunks of the page are still in use: leave the page with its
 * class.  The chunks already back go on the class's free list again; the
 * ones in use stay their holders' and are freed as usual.  The page goes
 * last in the class's list, so the next move tries another page first. */
static void do_rebalance_give_up(void)
{
    struct slab_pool *sp = &slabclass[rebal.src].pool[SLAB_ZONE_DRAM];

    while (rebal.back.free_list != NULL) {
        item *it = rebal.back.free_list;
        freelist_remove(&rebal.back, it);
        freelist_push(sp, it);
    }
    unsigned int i = pool_page_index(sp, rebal.start);
    if (i < sp->npages) {
        sp->pages[i] = sp->pages[sp->npages - 1];
        sp->pages[sp->npages - 1] = rebal.start;
    }
    do_rebalance_end();
}

/* Every chunk of the page is back: hand the page to the destination. */
static void do_rebalance_finish(void)
{
    slabclass_t *src = &slabclass[rebal.src];
    struct slab_pool *sp = &src->pool[SLAB_ZONE_DRAM];
    char *page = rebal.start;

    unsigned int i = pool_page_index(sp, page);
    if (i < sp->npages) {
        sp->pages[i] = sp->pages[--sp->npages];
    }

    bool placed;
    if (rebal.dst == 0) {
        placed = pool_add_page(&global_pool, page);
    } else {
        slabclass_t *dst = &slabclass[rebal.dst];
        placed = pool_add_page(&dst->pool[SLAB_ZONE_DRAM], page);
        if (placed) {
            carve_page(dst, &dst->pool[SLAB_ZONE_DRAM], page);
        }
    }
    if (placed) {
        note_page_owner(page, (unsigned int)rebal.dst);
    }
    if (!placed) {
        /* No room to record the page anywhere: give it back to the source
         * rather than lose it. */
        sp->pages[sp->npages++] = page;
        carve_page(src, sp, page);
        slab_counters.malloc_fails++;
    } else {
        slab_counters.slabs_moved++;
    }
    do_rebalance_end();
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static long elapsed_ms(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(now.tv_sec - since->tv_sec) * 1000
        + (now.tv_nsec - since->tv_nsec) / 1000000L;
}

#ifdef MEMCACHED_DEBUG
/* Debug build only (`debugmove hold|release`, for tests): a page move
 * stops once it has chosen its page and keeps its chunks, until
 * released, so that a test can act on the class in that state. */
static bool debug_hold_moves;
static bool debug_move_held;     /* a move waits at the hold now */

void slabs_debug_hold_moves(bool hold)
{
    pthread_mutex_lock(&slabs_lock);
    debug_hold_moves = hold;
    pthread_mutex_unlock(&slabs_lock);
}

bool slabs_debug_move_held(void)
{
    pthread_mutex_lock(&slabs_lock);
    bool held = debug_move_held;
    pthread_mutex_unlock(&slabs_lock);
    return held;
}

static void do_debug_wait_for_release(void)
{
    while (debug_hold_moves && !do_bg_thread_stopping(&rebal_thr)) {
        debug_move_held = true;
        pthread_mutex_unlock(&slabs_lock);
        sleep_ms(1);
        pthread_mutex_lock(&slabs_lock);
    }
    debug_move_held = false;
}
#else
static void do_debug_wait_for_release(void)
{
}
#endif

/* Move one page; returns with slabs_lock held as on entry.  Items still
 * in the page are demoted or unlinked by the evictor; readers holding
 * references keep their copy until they release it, and only then does
 * the chunk come back.  The wait for them is bounded (REBAL_BUSY_LIMIT_MS
 * from the first round that found chunks in use, so that a long first
 * pass of the evictor does not use it up), and a move cut short by
 * shutdown gives up the same way. */
static void do_rebalance_move(void)
{
    unsigned int perslab = slabclass[rebal.src].perslab;
    struct timespec wait_began;
    bool waiting = false;

    if (!do_rebalance_begin()) {
        do_rebalance_end();
        return;
    }
    do_debug_wait_for_release();
    while (rebal.back.free_count < perslab
            && !do_bg_thread_stopping(&rebal_thr)) {
        int src = rebal.src;
        const void *start = rebal.start, *end = rebal.end;
        bool rescue = rebal.rescue;
        pthread_mutex_unlock(&slabs_lock);
        unsigned int evicted = 0;
        if (page_evictor != NULL) {
            evicted = page_evictor((unsigned int)src, start, end, rescue);
        }
        pthread_mutex_lock(&slabs_lock);
        slab_counters.reassign_evictions += evicted;
        if (rebal.back.free_count == perslab) {
            break;
        }
        slab_counters.reassign_busy_items++;
        if (!waiting) {
            clock_gettime(CLOCK_MONOTONIC, &wait_began);
            waiting = true;
        } else if (elapsed_ms(&wait_began) >= REBAL_BUSY_LIMIT_MS) {
            slab_counters.reassign_busy_aborts++;
            break;
        }
        pthread_mutex_unlock(&slabs_lock);
        sleep_ms(1);
        pthread_mutex_lock(&slabs_lock);
    }
    if (rebal.back.free_count == perslab) {
        do_rebalance_finish();
    } else {
        do_rebalance_give_up();
    }
}

static void *rebalance_thread(void *arg)
{
    pthread_mutex_lock(&slabs_lock);
    while (!do_bg_thread_stopping(&rebal_thr)) {
        if (!rebal.requested) {
            do_bg_thread_wait(&rebal_thr);
            continue;
        }
        do_rebalance_move();
    }
    pthread_mutex_unlock(&slabs_lock);
    return NULL;
}

void slabs_set_page_evictor(slabs_page_evictor evictor)
{
    pthread_mutex_lock(&slabs_lock);
    page_evictor = evictor;
    pthread_mutex_unlock(&slabs_lock);
}

void slabs_set_n_pages(slabs_n_pages_fn fn)
{
    pthread_mutex_lock(&slabs_lock);
    n_pages_of = fn;
    pthread_mutex_unlock(&slabs_lock);
}

int slabs_start_rebalance_thread(void)
{
    int rc = bg_thread_start(&rebal_thr, rebalance_thread, NULL);
    return rc == EALREADY ? 0 : rc;
}

void slabs_stop_rebalance_thread(void)
{
    if (bg_thread_stop(&rebal_thr)) {
        pthread_mutex_lock(&slabs_lock);
        /* A move asked for but not started never will be. */
        rebal.requested = false;
        pthread_cond_broadcast(&rebal_idle_cond);
        pthread_mutex_unlock(&slabs_lock);
    }
}

void slabs_rebalance_wait_idle(void)
{
    pthread_mutex_lock(&slabs_lock);
    while (rebal.requested && do_bg_thread_running(&rebal_thr)) {
        pthread_cond_wait(&rebal_idle_cond, &slabs_lock);
    }
    pthread_mutex_unlock(&slabs_lock);
}

/* ---- stats ---- */

void slabs_get_totals(struct slabs_totals *out)
{
    pthread_mutex_lock(&slabs_lock);
    out->total_malloced = zone_mem[SLAB_ZONE_DRAM].malloced
        - (uint64_t)global_pool.npages * page_size;
    out->mem_limit = zone_mem[SLAB_ZONE_DRAM].limit;
    /* A class's first page comes whatever the limit says: past it, no
     * class that has a page gets another, so the zone is full at what it
     * holds (global pool pages included: they are free D memory). */
    out->zone_limit = zone_mem[SLAB_ZONE_DRAM].malloced > out->mem_limit
        ? zone_mem[SLAB_ZONE_DRAM].malloced : out->mem_limit;
    out->global_pool_pages = global_pool.npages;
    out->slabs_moved = slab_counters.slabs_moved;
    out->reassign_evictions = slab_counters.reassign_evictions;
    out->reassign_busy_items = slab_counters.reassign_busy_items;
    out->reassign_busy_aborts = slab_counters.reassign_busy_aborts;
    out->malloc_fails = slab_counters.malloc_fails;
    out->reassign_running = rebal.requested;
    pthread_mutex_unlock(&slabs_lock);
}

unsigned int slabs_class_pages(unsigned int id, enum slab_zone zone)
{
    if (id < POWER_SMALLEST || id > power_largest || zone >= SLAB_ZONES) {
        return 0;
    }
    pthread_mutex_lock(&slabs_lock);
    unsigned int n = slabclass[id].pool[zone].npages;
    pthread_mutex_unlock(&slabs_lock);
    return n;
}

unsigned int slabs_class_free_chunks(unsigned int id, enum slab_zone zone)
{
    if (id < POWER_SMALLEST || id > power_largest || zone >= SLAB_ZONES) {
        return 0;
    }
    pthread_mutex_lock(&slabs_lock);
    unsigned int n = slabclass[id].pool[zone].free_count;
    pthread_mutex_unlock(&slabs_lock);
    return n;
}

unsigned int slabs_free_chunks_by_class(enum slab_zone zone,
                                        unsigned int *out, unsigned int n)
{
    unsigned int filled = 0;
    pthread_mutex_lock(&slabs_lock);
    for (unsigned int id = 0; id < n; id++) {
        bool known = zone < SLAB_ZONES && id >= POWER_SMALLEST
            && id <= power_largest;
        out[id] = known ? slabclass[id].pool[zone].free_count : 0;
        if (known) {
            filled = id + 1;
        }
    }
    pthread_mutex_unlock(&slabs_lock);
    return filled;
}

uint64_t slabs_zone_chunks(enum slab_zone zone)
{
    if (zone >= SLAB_ZONES) {
        return 0;
    }
    uint64_t chunks = 0;
    pthread_mutex_lock(&slabs_lock);
    for (unsigned int id = POWER_SMALLEST; id <= power_largest; id++) {
        chunks += (uint64_t)slabclass[id].pool[zone].npages
            * slabclass[id].perslab;
    }
    pthread_mutex_unlock(&slabs_lock);
    return chunks;
}

static void class_stat(ADD_STAT add_stats, void *c, unsigned int id,
                       const char *name, uint64_t value)
{
    char key[64];
    snprintf(key, sizeof(key), "%u:%s", id, name);
    append_stat(key, add_stats, c, "%llu", (unsigned long long)value);
}

/* Per-class counters the workers keep (struct slab_stats). */
static void class_hit_stats(ADD_STAT add_stats, void *c, unsigned int id,
                            struct slab_stats *s)
{
    class_stat(add_stats, c, id, "get_hits", STAT_GET(s->get_hits));
    class_stat(add_stats, c, id, "cmd_set", STAT_GET(s->set_cmds));
    class_stat(add_stats, c, id, "delete_hits", STAT_GET(s->delete_hits));
    class_stat(add_stats, c, id, "incr_hits", STAT_GET(s->incr_hits));
    class_stat(add_stats, c, id, "decr_hits", STAT_GET(s->decr_hits));
    class_stat(add_stats, c, id, "cas_hits", STAT_GET(s->cas_hits));
    class_stat(add_stats, c, id, "cas_badval", STAT_GET(s->cas_badval));
    class_stat(add_stats, c, id, "touch_hits", STAT_GET(s->touch_hits));
}

/* total_malloced as memcached counts it: every page it took, those in the
 * global pool included, and with -e the whole memory file.  With an
 * N-zone, the D pages classes own (doc/tiering.md "Stats with two
 * zones"); slabs_stats adds the N pages. */
static uint64_t do_reported_malloced(void)
{
    const struct zone_memory *zm = &zone_mem[SLAB_ZONE_DRAM];
    if (n_pages_of != NULL) {
        return zm->malloced - (uint64_t)global_pool.npages * page_size;
    }
    return zm->region_is_file ? zm->prealloc_size : zm->malloced;
}

struct class_snapshot {
    unsigned int pages;          /* both zones */
    uint64_t free_chunks;
};

void slabs_stats(ADD_STAT add_stats, void *c)
{
    struct storage_worker_stats *ts = calloc(1, sizeof(*ts));
    struct class_snapshot snap[MAX_NUMBER_OF_SLAB_CLASSES];
    uint64_t malloced;
    unsigned int active = 0;

    if (ts == NULL) {
        return;
    }
    storage_workers_stats(ts);

    /* Copy under the lock, print without it: append_stat does I/O
     * buffering and must not stall allocations. */
    pthread_mutex_lock(&slabs_lock);
    for (unsigned int id = POWER_SMALLEST; id <= power_largest; id++) {
        snap[id].pages = slabclass[id].pool[SLAB_ZONE_DRAM].npages;
        snap[id].free_chunks = slabclass[id].pool[SLAB_ZONE_DRAM].free_count;
    }
    malloced = do_reported_malloced();
    slabs_n_pages_fn n_pages = n_pages_of;
    pthread_mutex_unlock(&slabs_lock);
    /* the N-zone's pages of each class count too (slabs_tier.c), so that
     * used_chunks, total_chunks and total_malloced describe one cache */
    for (unsigned int id = POWER_SMALLEST;
            n_pages != NULL && id <= power_largest; id++) {
        unsigned int pages = 0;
        uint64_t free_chunks = 0;
        n_pages(id, &pages, &free_chunks);
        snap[id].pages += pages;
        snap[id].free_chunks += free_chunks;
        malloced += (uint64_t)pages * page_size;
    }

    for (unsigned int id = POWER_SMALLEST; id <= power_largest; id++) {
        if (snap[id].pages == 0) {
            continue;
        }
        uint64_t perslab = slabclass[id].perslab;
        uint64_t total = perslab * snap[id].pages;
        active++;
        class_stat(add_stats, c, id, "chunk_size", slabclass[id].size);
        class_stat(add_stats, c, id, "chunks_per_page", perslab);
        class_stat(add_stats, c, id, "total_pages", snap[id].pages);
        class_stat(add_stats, c, id, "total_chunks", total);
        class_stat(add_stats, c, id, "used_chunks",
                   total - snap[id].free_chunks);
        class_stat(add_stats, c, id, "free_chunks", snap[id].free_chunks);
        /* Pages are carved whole, so no chunk is ever left at a page end. */
        class_stat(add_stats, c, id, "free_chunks_end", 0);
        class_hit_stats(add_stats, c, id, &ts->slab_stats[id]);
    }
    append_stat("active_slabs", add_stats, c, "%u", active);
    append_stat("total_malloced", add_stats, c, "%llu",
                (unsigned long long)malloced);
    free(ts);
}
